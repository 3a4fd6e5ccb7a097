"""Per-client persistent state (FedDyn h_i, SCAFFOLD c_i, MOON's previous model, ...).

Kept off the training device: a client's tensors are moved to the device when it trains and
back after. A client never seen before (dynamic pools) starts from empty state.

Two backends with one interface (get / put / in / len / state_dict / load_state_dict):
- `ClientStateStore`: a dict in host memory (default);
- `MemmapClientStateStore`: one float32 memory-mapped file of N x P per state name, allocated on
  first use, with a `present` mask per name — for e.g. 500 clients x ResNet-18 (≈ 22 GB per
  model-sized state), which need neither device nor host memory.
`make_client_store(kind, ...)` picks one.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from benchmark.lazy import torch


class ClientStateStore:
    """client id -> {name: tensor}, held in host memory."""

    def __init__(self):
        self._data: dict[int, dict[str, torch.Tensor]] = {}

    def get(self, client: int, device) -> dict[str, torch.Tensor]:
        return {k: v.to(device) for k, v in self._data.get(client, {}).items()}

    def put(self, client: int, state: dict[str, torch.Tensor]) -> None:
        if state:
            self._data[client] = {k: v.detach().to("cpu", copy=True) for k, v in state.items()}

    def drop(self, client: int) -> None:
        self._data.pop(client, None)

    def __contains__(self, client: int) -> bool:
        return client in self._data

    def __len__(self) -> int:
        return len(self._data)

    def state_dict(self) -> dict:
        return {str(k): v for k, v in self._data.items()}

    def load_state_dict(self, data: dict) -> None:
        self._data = {int(k): dict(v) for k, v in data.items()}


class MemmapClientStateStore:
    """Client state in memory-mapped files under `directory`: `<name>.f32` (N x P float32) and
    `<name>.present` (N bools). A checkpoint snapshots them into `<directory>.checkpoint`."""

    def __init__(self, num_clients: int, directory: str | Path | None = None):
        self.num_clients = num_clients
        self.directory = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="fedbench-client-state-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self._values: dict[str, np.memmap] = {}
        self._present: dict[str, np.memmap] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}

    def _file(self, name: str, suffix: str) -> Path:
        return self.directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + suffix)

    def _open(self, name: str, shape: tuple[int, ...], create: bool) -> None:
        size = int(np.prod(shape))
        mode = "w+" if create else "r+"
        self._values[name] = np.memmap(self._file(name, ".f32"), np.float32, mode, shape=(self.num_clients, size))
        self._present[name] = np.memmap(self._file(name, ".present"), np.bool_, mode, shape=(self.num_clients,))
        self._shapes[name] = shape

    def get(self, client: int, device) -> dict[str, torch.Tensor]:
        out = {}
        for name, present in self._present.items():
            if present[client]:
                row = torch.from_numpy(np.array(self._values[name][client]))
                out[name] = row.view(self._shapes[name]).to(device)
        return out

    def put(self, client: int, state: dict[str, torch.Tensor]) -> None:
        for name, tensor in state.items():
            if name not in self._values:
                self._open(name, tuple(tensor.shape), create=True)
            self._values[name][client] = tensor.detach().to("cpu", torch.float32).reshape(-1).numpy()
            self._present[name][client] = True

    def drop(self, client: int) -> None:
        for present in self._present.values():
            present[client] = False

    def __contains__(self, client: int) -> bool:
        return any(bool(p[client]) for p in self._present.values())

    def __len__(self) -> int:
        if not self._present:
            return 0
        return int(np.logical_or.reduce([np.asarray(p) for p in self._present.values()]).sum())

    def _snapshot_dir(self) -> Path:
        return self.directory.with_name(self.directory.name + ".checkpoint")

    def state_dict(self) -> dict:
        """Copy the files to a sibling snapshot folder: the live files keep changing after a
        checkpoint, and a resume must see the client states of the checkpoint's round."""
        for arr in (*self._values.values(), *self._present.values()):
            arr.flush()
        snapshot, tmp = self._snapshot_dir(), self.directory.with_name(self.directory.name + ".checkpoint-tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.directory, tmp)
        shutil.rmtree(snapshot, ignore_errors=True)
        tmp.rename(snapshot)
        return {"__memmap__": snapshot.name, "shapes": {k: list(v) for k, v in self._shapes.items()}}

    def load_state_dict(self, data: dict) -> None:
        """Restore the snapshot (found beside this store's folder) into this store's folder."""
        self._values, self._present, self._shapes = {}, {}, {}
        shutil.rmtree(self.directory, ignore_errors=True)
        shutil.copytree(self.directory.with_name(data["__memmap__"]), self.directory)
        for name, shape in data["shapes"].items():
            self._open(name, tuple(shape), create=False)


def make_client_store(kind: str = "memory", num_clients: int = 0, directory: str | Path | None = None):
    """`memory` (default) or `memmap` (needs num_clients; files under `directory`, default a temp dir)."""
    if kind == "memory":
        return ClientStateStore()
    if kind == "memmap":
        return MemmapClientStateStore(num_clients, directory)
    raise ValueError(f"unknown client state store {kind!r}; choose 'memory' or 'memmap'")
