"""What `plan --budget` measured, remembered per machine so that the next call need not measure again.

One JSON file in the fedbench cache (data/cache.py) per machine key: the CPU model (or GPU name), the
cores this process may use, the thread count the run will train at, the torch, numpy and Python
versions, and fedbench's code fingerprint (run/code_fingerprint.py). The file holds its key, and a
file whose key differs from this machine's, or that cannot be read, is measured over (never used).
Each entry is one measured kind of work (a job shape, a protocol's batches, the run's imports, a
dataset's load), keyed by what decides its speed, plugin code included (its parts' fingerprints,
run/code_parts.py).

Entries are wall seconds measured under some load: a later call scales them by the share of a core
one thread got then against now (a short probe: budget_timing.probe_share), and says so in the `assumed:` block.
`plan --budget --remeasure` measures everything again and rewrites the entries.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable

from benchmark.data.cache import cache_dir, cache_key
from benchmark.plan.budget_timing import Load
from benchmark.run.code_fingerprint import code_fingerprint
from benchmark.run.environment import package_version

FORMAT = 1
Measure = Callable[[], tuple[dict[str, float], list[str]]]


def machine_key(device: str, threads: object) -> dict:
    """What a measured rate depends on besides the work itself."""
    from benchmark.run.environment import cpu_name

    if device.startswith("cuda"):
        import torch

        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = cpu_name()
    return {
        "format": FORMAT,
        "device": device,
        "device_name": device_name,
        "cores": Load.now().cores,
        "threads": str(threads),
        "torch": package_version("torch") or "absent",
        "numpy": package_version("numpy") or "absent",
        "python": platform.python_version(),
        "code": code_fingerprint(),
    }


class Memo:
    """The measured entries for one machine key; `remeasure` ignores (and then rewrites) what is on file."""

    def __init__(self, key: dict, remeasure: bool = False, load: Load | None = None):
        self.key, self.load = key, load or Load.now()
        self.path = cache_dir() / "budget_rates" / f"{cache_key(key)}.json"
        self.entries: dict[str, dict] = {} if remeasure else self._read()
        self.reused = self.measured = 0

    def _read(self) -> dict[str, dict]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):  # none yet, or damaged: measured over
            return {}
        if not isinstance(found, dict) or found.get("key") != self.key or not isinstance(found.get("entries"), dict):
            return {}  # another machine, torch or code: its rates do not hold here
        return {k: v for k, v in found["entries"].items() if _valid(v)}

    def has(self, what: object) -> bool:
        return cache_key(what) in self.entries

    def remembered(self, what: object, measure: Measure, per_load: bool = True) -> tuple[dict, list[str], str]:
        """`measure()`'s named numbers (and lines saying how it measured) for the work `what`, from the
        memo (seconds scaled to the load now, unless not `per_load`: counts) or measured now and
        remembered; with a note for the `assumed:` block ("" when measured now)."""
        name = cache_key(what)
        entry = self.entries.get(name)
        share_now = self.load.share_now
        if entry is None:
            self.measured += 1
            values, lines = measure()
            at = time.strftime("%Y-%m-%d %H:%M")
            self.entries[name] = {"values": values, "lines": list(lines), "share": share_now, "at": at}
            return values, list(lines), ""
        self.reused += 1
        factor = entry["share"] / share_now if per_load else 1.0  # a thread's share of a core then over now
        note = f"memoised {entry['at']}" + (f", x{factor:.2f} for the load now" if abs(factor - 1) > 0.005 else "")
        return {k: v * factor for k, v in entry["values"].items()}, entry["lines"], note

    def save(self) -> None:
        """Write the entries (atomically; a memo that cannot be written only costs the next call a measurement)."""
        from benchmark.store.job_dir import atomic_write_json

        if not self.measured:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.path, {"key": self.key, "entries": self.entries}, durable=False)
        except (OSError, ValueError):  # unwritable cache, or a non-finite time (never stored)
            pass

    def summary(self) -> str:
        where = f"{self.path}; --remeasure to measure again"
        return f"measurements: {self.measured} made now, {self.reused} memoised ({where})"


def _valid(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("values"), dict) or not isinstance(entry.get("at"), str):
        return False
    if not isinstance(entry.get("lines"), list) or not all(isinstance(x, str) for x in entry["lines"]):
        return False
    share = entry.get("share")
    numbers = [share, *entry["values"].values()]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in numbers) and share > 0
