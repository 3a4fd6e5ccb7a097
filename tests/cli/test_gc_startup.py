"""The `fedbench` process starts with fewer collector scans and freezes its start-up's objects when its jobs
start (benchmark/gc_startup.py); a library user's collector is never touched."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from fedtest import REPO, tiny_suite, write_suite

from benchmark import gc_startup

# the thresholds and frozen-object count a `fedbench` process has after its command returns
PROBE = """
import gc, json, sys
from benchmark import launch
default = gc.get_threshold()
sys.argv = ["fedbench", *json.loads(sys.argv[1])]
code = launch.main()
print(json.dumps([code, default, gc.get_threshold(), gc.get_freeze_count()]))
"""


def fedbench_gc(*args: str) -> tuple[int, list, list, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], cwd=REPO, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_release_without_hold_leaves_the_collector_alone():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc_startup.release()
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_hold_then_release_restores_the_thresholds_and_freezes_what_lives():
    before = gc.get_threshold()
    try:
        gc_startup.hold()
        gc_startup.hold()  # a second hold keeps the first's saved thresholds
        assert gc.get_threshold() == (gc_startup.STARTUP_THRESHOLD, *before[1:])
        gc_startup.release()
        assert gc.get_threshold() == before and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test process's objects back in the collector's scans
        gc.set_threshold(*before)


def test_a_command_without_jobs_keeps_collecting_only_less_often():
    code, default, after, frozen = fedbench_gc("--version")
    assert code == 0 and after == [gc_startup.STARTUP_THRESHOLD, *default[1:]] and frozen == 0


def test_run_restores_the_collector_when_its_jobs_start(tmp_path):
    suite = write_suite(tmp_path, tiny_suite())
    code, default, after, frozen = fedbench_gc(
        "run", str(suite), "--results-dir", str(tmp_path / "results"), "--no-tracking", "-q"
    )
    assert code == 0 and after == default and frozen > 10_000  # the modules and models imported by then
