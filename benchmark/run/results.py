"""results/<suite>/<job-id>/: config.json, metrics.jsonl, summary.json, final_model.pt and,
while a job is unfinished, checkpoint.pt (plus client_state.checkpoint/ for memmap client
state). Every file is written atomically (temp + rename)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch

FINISHED = "finished"
# What a job needs to resume elsewhere, in the order to write it (checkpoint.pt, which points
# at the client-state snapshot, last).
RESUME_FILES = ("metrics.jsonl", "client_state.checkpoint", "checkpoint.pt")
# What a finished or stopped job hands back; summary.json last: it is what marks a job done.
OUTPUT_FILES = ("metrics.jsonl", "final_model.pt", "client_state.checkpoint", "checkpoint.pt", "summary.json")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def atomic_torch_save(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JobDir:
    def __init__(self, root: Path, suite: str, job_id: str):
        self.path = Path(root) / suite / job_id

    config = property(lambda self: self.path / "config.json")
    metrics = property(lambda self: self.path / "metrics.jsonl")
    summary = property(lambda self: self.path / "summary.json")
    model = property(lambda self: self.path / "final_model.pt")
    checkpoint = property(lambda self: self.path / "checkpoint.pt")

    def read_summary(self) -> dict | None:
        try:
            return json.loads(self.summary.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def is_finished(self) -> bool:
        s = self.read_summary()
        return bool(s) and s.get("status") == FINISHED and self.model.exists()

    def skipped_summary(self) -> dict | None:
        """The summary of a finished job, marked as skipped; None if the job must (re)run."""
        return {**self.read_summary(), "skipped": True} if self.is_finished() else None

    def read_metrics(self) -> list[dict]:
        if not self.metrics.exists():
            return []
        return [json.loads(line) for line in self.metrics.read_text().splitlines() if line.strip()]

    def write_metrics(self, records: list[dict]) -> None:
        atomic_write_bytes(self.metrics, "".join(json.dumps(r) + "\n" for r in records).encode())

    def load_checkpoint(self) -> dict | None:
        if not self.checkpoint.exists():
            return None
        return torch.load(self.checkpoint, map_location="cpu", weights_only=True)

    def read_files(self, names: tuple[str, ...]) -> dict[str, bytes]:
        """The named files (folders: every file below them) as relative path -> bytes; absent ones are left out."""
        out: dict[str, bytes] = {}
        for name in names:
            path = self.path / name
            files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
            out.update({str(f.relative_to(self.path)): f.read_bytes() for f in files})
        return out

    def write_files(self, files: dict[str, bytes]) -> None:
        """Write what `read_files` returned, in its order; a folder is replaced as a whole."""
        for folder in {Path(rel).parts[0] for rel in files if len(Path(rel).parts) > 1}:
            shutil.rmtree(self.path / folder, ignore_errors=True)
        for rel, data in files.items():
            atomic_write_bytes(self.path / rel, data)

    def drop_resume_material(self) -> None:
        """A finished job needs no checkpoint (and memmap client state can be large)."""
        self.checkpoint.unlink(missing_ok=True)
        for leftover in ("client_state", "client_state.checkpoint"):
            shutil.rmtree(self.path / leftover, ignore_errors=True)
