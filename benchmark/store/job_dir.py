"""A job's folder, results/jobs/<job-id>/ (store/job_store.py): config.json, metrics.jsonl, summary.json, final_model.pt and,
while a job is unfinished, checkpoint.pt (plus client_state.checkpoint/ for memmap client
state). Every file is written atomically (temp + rename),
with the permissions a plain `open()` would give (umask), and JSON strictly (no bare NaN)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from benchmark import torch_format
from benchmark.errors import UserError
from benchmark.lazy import torch
from benchmark.store.job_status import FINISHED, TERMINAL
from benchmark.store.layout import STORE, Store
from benchmark.store.old_layout import find_in_place
from benchmark.store.records import ClientAccuracy, FailedSummary, JobSummary, RoundRecord, summary_from_json

log = logging.getLogger(__name__)
# What a job needs to resume elsewhere, in the order to write it (checkpoint.pt, which points
# at the client-state snapshot, last).
RESUME_FILES = ("metrics.jsonl", "client_state.checkpoint", "checkpoint.pt")
# What a finished or stopped job hands back; summary.json last: it is what marks a job done.
OUTPUT_FILES = (
    "metrics.jsonl",
    "final_model.pt",
    "client_acc.json",
    "client_state.checkpoint",
    "checkpoint.pt",
    "summary.json",
)


def _not_finite(name: str):
    raise ValueError(f"the non-finite value {name}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temp_beside(path: Path) -> tuple[int, str]:
    """A temp file next to `path` (same filesystem, so the rename is atomic); mkstemp makes it
    0600, which would leave results unreadable to the group a shared results folder is for."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, tmp


@contextlib.contextmanager
def _atomic_file(path: Path, durable: bool = True):
    """A binary file that replaces `path` when the block ends, or is removed if it fails.
    `durable`: on disk before the rename (fsync), so a crash leaves the old file or the new
    one; off for files that mean nothing after a crash (a heartbeat), where readers only need
    never to see half a file."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            named(err, path)
        raise


def named(err: OSError, path: Path) -> OSError:
    """`err` naming `path` when it names no file: a failed write() or fsync() (a full disk) does not."""
    if err.filename is None:
        err.filename = str(path)
    return err


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    with _atomic_file(path, durable) as f:
        f.write(data)


def strict_json(obj, **kwargs) -> str:
    """JSON that every parser reads: a NaN or infinity is an error here, not a bare `NaN` on disk."""
    return json.dumps(obj, allow_nan=False, **kwargs)


def atomic_write_json(path: Path, obj, durable: bool = True) -> None:
    atomic_write_bytes(path, (strict_json(obj, indent=2, sort_keys=True) + "\n").encode(), durable)


def atomic_torch_save(path: Path, obj) -> None:
    """torch.save's file of `obj`; numpy arrays and plain data are written in its format without
    torch (torch_format.py: a FedAc job imports no torch), read back by torch.load as tensors."""
    # through a Python file: a full disk is then an OSError (ENOSPC) naming the file, where
    # torch.save(obj, name) reports "unexpected pos 960 vs 854"
    with _atomic_file(path) as f:
        (torch_format.save if torch_format.writable(obj) else torch.save)(obj, f)


# A write failing with one of these means the machine, not the job, is at fault: the run stops
# with exit 2 (no "failed" job is recorded) and a later run resumes as after a kill.
ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.ENOTDIR}


def is_environment_error(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in ENVIRONMENT_ERRNOS


def environment_error(err: OSError, doing: str) -> UserError:
    """What to tell the user when writing results fails for a reason outside the job."""
    code = errno.errorcode.get(err.errno or 0, "")
    where = f" {err.filename}:" if err.filename else ""
    fix = "free space" if err.errno in (errno.ENOSPC, errno.EDQUOT) else "fix the path or its permissions"
    return UserError(
        f"cannot {doing}:{where} {err.strerror or err}{f' ({code})' if code else ''}. {fix.capitalize()}, then "
        "run the same command again: finished jobs are kept, unfinished ones resume from their last checkpoint"
    )


def check_writable(folder: Path) -> None:
    """Before anything runs: `folder` (the suite's results folder) can be created and written to."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(b"fedbench")
    except OSError as err:
        raise environment_error(named(err, folder), "write results") from None


# `.<file name>.<8 random characters>`: what `_temp_beside` (tempfile.mkstemp) names its temp files
TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}$")


def free_name_beside(path: Path, tag: str) -> Path:
    """`<name>.<tag>` beside `path`, or `<name>.<tag>-2`, `-3`, ... when an earlier one is there."""
    aside, n = path.with_name(f"{path.name}.{tag}"), 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.{tag}-{n}")
    return aside


class JobDir:
    def __init__(self, store: Store, job_id: str):
        self.path = store.job(job_id)

    @classmethod
    def for_reading(cls, store: Store, job_id: str) -> JobDir:
        """The job's folder in the store or, in a results folder that has no store yet, its folder of the
        old layout where it is (`status` and `report` read; only a command that writes moves it)."""
        jobdir = cls(store, job_id)
        if not jobdir.path.exists() and not jobdir.path.parent.exists():
            return cls.at(find_in_place(store.root, STORE, job_id) or jobdir.path)
        return jobdir

    @classmethod
    def at(cls, path: Path) -> JobDir:
        """The job folder at `path` itself (a copy set aside, a folder of the layout before the store)."""
        jobdir = cls.__new__(cls)
        jobdir.path = Path(path)
        return jobdir

    config = property(lambda self: self.path / "config.json")
    metrics = property(lambda self: self.path / "metrics.jsonl")
    summary = property(lambda self: self.path / "summary.json")
    model = property(lambda self: self.path / "final_model.pt")
    client_accuracy = property(lambda self: self.path / "client_acc.json")  # per user, the last round (LEAF)
    checkpoint = property(lambda self: self.path / "checkpoint.pt")
    heartbeat = property(lambda self: self.path / "heartbeat.json")  # while a process runs the job
    lock = property(lambda self: self.path / ".lock")
    # the files its MLflow run carries as artifacts (mlflow_mirror.JobMirror.finish), those it has
    mirrored_files = property(
        lambda self: [f for f in (self.config, self.metrics, self.client_accuracy, self.summary) if f.exists()]
    )

    def read_summary(self) -> JobSummary | FailedSummary | None:
        """The summary, typed (`records.summary_from_json`), or None when there is none or it is not valid JSON
        (`damage` says which)."""
        return None if (summary := self._summary_json()) is None else summary_from_json(summary)

    def _summary_json(self) -> dict | None:
        """summary.json as parsed, untyped: what the store's own checks read (a no-op `run` asks them of every
        job, and typing each summary would add a third to that read)."""
        try:
            summary = json.loads(self.summary.read_text())
        except (FileNotFoundError, ValueError):  # a cut summary counts as not run; `damage` names it
            return None
        return summary if isinstance(summary, dict) else None

    def done_summary(self) -> dict | None:
        """The summary of a job finished (with its model, and records that can be trusted) or diverged:
        nothing left to run; None otherwise. One read of summary.json (and, when finished, a stat of
        the model and a read of metrics.jsonl): a no-op `run` asks it of every job."""
        s = self._summary_json()
        if not s or s.get("status") not in TERMINAL:
            return None
        return s if s["status"] != FINISHED or (self.model.exists() and self.metrics_damage(s) is None) else None

    def is_done(self) -> bool:
        return self.done_summary() is not None

    def damage(self, every_line: bool = False) -> str | None:
        """Why the job's results cannot be trusted: a summary.json that is not valid JSON, or a finished
        job's metrics.jsonl that is missing, cut mid-line, holds a non-finite value (fedbench writes
        strict JSON, so a bare NaN came from elsewhere) or does not end at its last round. None when
        nothing is wrong, or there is no summary (a job not run or still running); `every_line`: see
        `metrics_damage`."""
        try:
            summary = json.loads(self.summary.read_text())
        except FileNotFoundError:
            return None
        except ValueError as err:
            return f"{self.summary} is not valid JSON ({err})"
        if not isinstance(summary, dict):
            return f"{self.summary} is not valid JSON (not an object)"
        return self.metrics_damage(summary, every_line) if summary.get("status") == FINISHED else None

    def metrics_damage(self, summary: dict, every_line: bool = False) -> str | None:
        """What is wrong with a finished job's metrics.jsonl (see `damage`), None when nothing is. Unless
        `every_line` (`sync`, before it mirrors the records), only what a kill, a full disk, a deletion or a
        non-finite number leaves is looked for: the end of the file and `NaN`/`Infinity` anywhere, a read
        rather than a parse of every record (`run` asks it of every finished job it skips)."""
        if not every_line and self._looks_whole(summary):
            return None
        records, why = self._records_before_damage()
        last = records[-1]["round"] if records else 0
        if why is None and last != summary.get("rounds_completed"):
            return f"{self.metrics} ends at round {last}, its summary at round {summary.get('rounds_completed')}"
        return why

    def _looks_whole(self, summary: dict) -> bool:
        try:
            data = self.metrics.read_bytes()
        except FileNotFoundError:
            return False
        if not data.endswith(b"\n") or b"NaN" in data or b"Infinity" in data:
            return False
        try:
            last = json.loads(data[data.rfind(b"\n", 0, len(data) - 1) + 1 :])
        except ValueError:
            return False
        return isinstance(last, dict) and last.get("round") == summary.get("rounds_completed")

    def _records_before_damage(self) -> tuple[list[dict], str | None]:
        """metrics.jsonl's records up to its first damaged line, and what is damaged (None: nothing)."""
        try:
            lines = self.metrics.read_bytes().split(b"\n")
        except FileNotFoundError:
            return [], f"{self.metrics} is missing"
        records: list[dict] = []
        for number, line in enumerate(lines, 1):
            if number == len(lines):  # what follows the last newline: nothing, unless a write was cut
                return records, f"{self.metrics} is cut mid-line at line {number}" if line else None
            try:
                record = json.loads(line, parse_constant=_not_finite)
            except ValueError as err:
                return records, f"{self.metrics} line {number} is not a JSON record ({err})"
            last = records[-1]["round"] if records else 0
            if not isinstance(record, dict) or not isinstance(record.get("round"), int) or record["round"] <= last:
                return records, f"{self.metrics} line {number} is not the record of a round after round {last}"
            records.append(record)
        return records, None

    def set_aside_damaged(self, every_line: bool = False) -> None:
        """A damaged job (`damage`) made to run again, saying why once: with a checkpoint, its summary
        moves to summary.json.damaged and the job resumes from the checkpoint (which checks the records
        before it); without one the whole folder moves to `<job-id>.damaged/`, kept, never reused. Call
        it holding the job's lock; `every_line`: see `metrics_damage`."""
        why = self.damage(every_line)
        if why is None:
            return
        if self.checkpoint.exists():  # the damaged files kept beside, the records before the damage to resume with
            records, metrics_damaged = self._records_before_damage()
            if metrics_damaged and self.metrics.exists():
                os.replace(self.metrics, self.metrics.with_name("metrics.jsonl.damaged"))
            self.write_metrics(records)
            os.replace(self.summary, self.summary.with_name("summary.json.damaged"))
            log.warning("job %s is damaged: %s; `fedbench run` resumes it from its checkpoint", self.path.name, why)
            return
        aside = self.set_aside("damaged")
        log.warning("job %s is damaged: %s; kept as %s, `fedbench run` trains it again", self.path.name, why, aside)

    def skipped_summary(self, fingerprint: str | None = None) -> JobSummary | None:
        """The summary of a job done on the data with `fingerprint` (finished or diverged), typed and
        marked as skipped; None if the job must (re)run. Reads only."""
        if (summary := self.done_summary()) is None:
            return None
        recorded = summary.get("data_fingerprint")
        if fingerprint and recorded and recorded != fingerprint:
            return None
        skipped = summary_from_json(summary)
        skipped.skipped = True
        return skipped

    def set_aside_other_data(self, fingerprint: str) -> None:
        """Results computed on other data than `fingerprint` (the files were fixed or replaced)
        move to `<job-id>.data-<their fingerprint>/`: never reused, never overwritten. Call it
        holding the job's lock."""
        summary = self._summary_json() or {}
        recorded = summary.get("data_fingerprint")
        if not recorded or recorded == fingerprint or summary.get("status") not in TERMINAL:
            return
        aside = self.set_aside(f"data-{recorded}")
        log.warning(
            "results of job %s were computed on other data (fingerprint %s, now %s): moved to %s; "
            "running the job again",
            self.path.name,
            recorded,
            fingerprint,
            aside,
        )

    def set_aside(self, tag: str) -> Path:
        """Move the job's folder to `<job-id>.<tag>/` (or `-2`, `-3`, ... beside an earlier one):
        kept, never reused. Call it holding the job's lock."""
        aside = free_name_beside(self.path, tag)
        os.replace(self.path, aside)
        return aside

    def read_client_accuracy(self) -> ClientAccuracy | None:
        """client_acc.json typed; None when the job recorded none (its clients are not users)."""
        try:
            return ClientAccuracy.from_json(json.loads(self.client_accuracy.read_text()))
        except FileNotFoundError:
            return None

    def write_client_accuracy(self, accuracy: ClientAccuracy) -> None:
        atomic_write_json(self.client_accuracy, accuracy.to_json())

    def read_metrics(self) -> list[RoundRecord]:
        """The records, typed, up to the first line that is not a complete JSON record (a file cut
        mid-line by a crash or a full disk); what follows it is dropped, saying so."""
        try:
            lines = self.metrics.read_text().splitlines()
        except FileNotFoundError:
            return []
        records = []
        for number, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict) or "round" not in rec:
                    raise ValueError("not a metrics record")
            except ValueError as err:
                log.warning(
                    "%s line %d is corrupt (%s); keeping the %d records before it",
                    self.metrics,
                    number,
                    err,
                    len(records),
                )
                break
            records.append(RoundRecord.from_json(rec))
        return records

    def last_record(self) -> RoundRecord | None:
        """The last readable record of metrics.jsonl, typed (a line cut by a kill is skipped): where an
        interrupted job got to, without parsing the lines before it."""
        try:
            lines = self.metrics.read_text().splitlines()
        except FileNotFoundError:
            return None
        for line in reversed(lines):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "round" in record:
                return RoundRecord.from_json(record)
        return None

    def write_metrics(self, records: list[dict]) -> None:
        atomic_write_bytes(self.metrics, "".join(strict_json(r) + "\n" for r in records).encode())

    def load_checkpoint(self) -> dict | None:
        """The checkpoint, or None when there is none or it is unreadable (truncated, foreign):
        then it is moved aside to checkpoint.pt.corrupt and the job restarts, saying so."""
        if not self.checkpoint.exists():
            return None
        try:
            checkpoint = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
            checkpoint["simulation"]["round"]
            return checkpoint
        except Exception as err:  # torch raises RuntimeError, EOFError, UnpicklingError, ... for a bad file
            self.set_aside_checkpoint(f"it is unreadable ({type(err).__name__}: {err})")
            return None

    def set_aside_checkpoint(self, why: str) -> None:
        """Move a checkpoint the job cannot resume from to checkpoint.pt.corrupt, saying why."""
        aside = self.checkpoint.with_name("checkpoint.pt.corrupt")
        os.replace(self.checkpoint, aside)
        log.warning(
            "%s cannot be resumed from: %s; moved to %s, the job restarts from round 0",
            self.checkpoint,
            why,
            aside.name,
        )

    def remove_stale_temps(self) -> None:
        """Temp files of writes a killed process never finished; call it holding the job's lock
        (so no live process is writing them)."""
        if not self.path.is_dir():
            return
        for temp in (p for p in self.path.rglob(".*") if TEMP_NAME.match(p.name) and p.is_file()):
            temp.unlink(missing_ok=True)
            log.info("removed %s, left by a write that was interrupted", temp)

    def discard_checkpoint(self) -> None:
        """Remove resume material (memmap client state can be large)."""
        self.checkpoint.unlink(missing_ok=True)
        for leftover in ("client_state", "client_state.checkpoint"):
            shutil.rmtree(self.path / leftover, ignore_errors=True)

    def read_files(self, names: tuple[str, ...]) -> dict[str, bytes]:
        """The named files (folders: every file below them) as relative path -> bytes; absent ones are left out."""
        out: dict[str, bytes] = {}
        for name in names:
            path = self.path / name
            files = (
                sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.is_file() else []
            )
            out.update({str(f.relative_to(self.path)): f.read_bytes() for f in files})
        return out

    def write_files(self, files: dict[str, bytes]) -> None:
        """Write what `read_files` returned, in its order; a folder is replaced as a whole."""
        for folder in {Path(rel).parts[0] for rel in files if len(Path(rel).parts) > 1}:
            shutil.rmtree(self.path / folder, ignore_errors=True)
        for rel, data in files.items():
            atomic_write_bytes(self.path / rel, data)
