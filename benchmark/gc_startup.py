"""A command's start-up with fewer scans by the cyclic garbage collector, then its objects frozen out of them.

Starting `fedbench` imports about 550 modules and builds the suite's pydantic models and dataclasses:
objects that live as long as the process, none of them garbage, which CPython's collector nevertheless scans
about 110 times at its default thresholds (about 25 ms of a one-cell FedAc run's 0.9 CPU-s; benchmarks/README.md).
`hold()`, before the imports, raises the youngest generation's threshold (collections stay possible, only
rarer: a command that never calls `release` still collects). `release()`, where a command starts its jobs,
moves every object alive to the permanent generation (`gc.freeze`), so no later collection scans them, and
restores the thresholds. Only the `fedbench` process calls `hold()`: a library user's or a test's collector is
left alone, and `release()` without it does nothing.
"""

from __future__ import annotations

import gc

STARTUP_THRESHOLD = 100_000  # objects allocated, net, between collections of the youngest generation (default 700)
_held: tuple[int, ...] | None = None  # the thresholds `hold()` replaced


def hold() -> None:
    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(STARTUP_THRESHOLD, *_held[1:])


def release() -> None:
    global _held
    if _held is not None:
        gc.freeze()
        gc.set_threshold(*_held)
        _held = None
