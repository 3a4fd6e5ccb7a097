"""The data fingerprint of a job without loading its data, where that can be known: a no-op `run` must
tell whether each finished job was trained on the data found now (docs/runs.md, "Data checks"), and
loading a dataset to hash its tensors costs a second or more (and torch's import).

When a dataset is loaded, its fingerprint is remembered under a stamp of everything the tensors are
made from: the dataset's name, params and data root, the name, size and mtime of each of its files
(generated datasets have none), the code of its loader (run/code_parts.py) and the numpy and torch
versions. A later process finds the fingerprint under the same stamp, or nothing, and then loads the
data as before. The memo lives in the fedbench cache (data/cache.py); one small file per stamp.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from benchmark.data.archive import Found
from benchmark.data.cache import cache_dir, files_fingerprint, tree_fingerprint
from benchmark.data.source import DATASETS, data_root
from benchmark.errors import UserError
from benchmark.run.code_parts import job_code
from benchmark.run.environment import package_version

log = logging.getLogger(__name__)


def _files_stamp(found: Found) -> str:
    """Name, size and mtime of the dataset's files (no read of their contents)."""
    origin = found.origin
    stamp = tree_fingerprint(origin) if origin.is_dir() else files_fingerprint([origin], origin.parent)
    also = files_fingerprint([p for p in found.also if p.is_file()], origin.parent) if found.also else ""
    return f"{stamp}:{also}:{found.relative}"


def _stamp(name: str, params_json: str, root: str | None, loader_code: str) -> str | None:
    """The stamp of a dataset's tensors (module docstring); None where it cannot be made without loading
    (files missing, a hub id, a probe that fails)."""
    spec = DATASETS.get(name)
    files = ""
    if spec.probe is not None:
        try:
            found = spec.probe(data_root(root))
        except (UserError, OSError):  # missing or unreadable: loading says what is wrong
            return None
        if not isinstance(found, Found):  # a hub id: its content is not on disk to stamp
            return None
        files = _files_stamp(found)
    root_text = str(data_root(root) or "") if spec.probe is not None else ""
    parts = [
        name,
        params_json,
        root_text,
        files,
        loader_code,
        package_version("numpy") or "absent",
        package_version("torch") or "absent",
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def _memo_path(stamp: str) -> Path:
    return cache_dir() / "data_fingerprints" / f"{stamp}.json"


def _read(stamp: str) -> str | None:
    try:
        memo = json.loads(_memo_path(stamp).read_text())
    except (OSError, ValueError):  # none yet, or unreadable: the data are loaded instead
        return None
    found = memo.get("fingerprint") if isinstance(memo, dict) else None
    return found if isinstance(found, str) else None


class DataMemo:
    """The memo as one pass over a run's jobs sees it: each dataset is stamped (its files listed) and
    looked up once per pass, never carried over to the next (its files may have changed meanwhile)."""

    def __init__(self):
        self._stamps: dict[tuple, str | None] = {}
        self._known: dict[str, str | None] = {}
        self._by_section: dict[int, tuple] = {}  # id of a dataset section -> (it, its stamp)

    def stamp(self, config) -> str | None:
        d = config.dataset
        held = self._by_section.get(id(d))
        if held is not None and held[0] is d:  # the jobs of an expansion share their dataset section
            return held[1]
        key = (d.name, json.dumps(d.params, sort_keys=True), d.root, job_code(config).get(f"dataset {d.name}", ""))
        if key not in self._stamps:
            self._stamps[key] = _stamp(*key)
        self._by_section[id(d)] = (d, self._stamps[key])
        return self._stamps[key]

    def known(self, config) -> str | None:
        """The fingerprint of the data `config` trains on, as remembered for the files and code found
        now; None when nothing is remembered for them (then only loading the data tells)."""
        if (stamp := self.stamp(config)) is None:
            return None
        if stamp not in self._known:
            self._known[stamp] = _read(stamp)
        return self._known[stamp]

    def remember(self, config, fingerprint: str) -> None:
        """Remember the fingerprint of `config`'s data, just computed from its loaded tensors. A cache
        that cannot be written only costs the next run a load."""
        from benchmark.store.job_dir import atomic_write_json

        if (stamp := self.stamp(config)) is None or self.known(config) == fingerprint:
            return
        try:
            atomic_write_json(_memo_path(stamp), {"dataset": config.dataset.name, "fingerprint": fingerprint}, False)
        except OSError as err:
            log.debug("cannot remember the data fingerprint in %s: %s", _memo_path(stamp), err)
            return
        self._known[stamp] = fingerprint
