"""The results folder travels as a typed `Store` (issue 32 point 4): store/, run/ and report/ take no raw
results path; a command takes its --results-dir as given, builds the Store once and hands it down
(benchmarks/job_walk.py follows it at run time and counts what still takes a path)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from fedtest import REPO

import benchmark

sys.path.insert(0, str(REPO / "benchmarks"))
from job_walk import results_parameters, store_builds  # noqa: E402

ROOT = Path(benchmark.__file__).parent
CONVERTED = ("store", "run", "report")
# each command's entry: its --results-dir as given, the Store built from it once
COMMANDS = {
    "benchmark/commands/check.py:check_suite",
    "benchmark/commands/report.py:report_suite",
    "benchmark/commands/run.py:run_suite",
    "benchmark/commands/status.py:show_status",
    "benchmark/commands/sync.py:sync_suite",
    "benchmark/protocols/fedac/released.py:main",  # the replay record's own commands
    "benchmark/protocols/fedac/released_run.py:main",
}
SCRATCH = (  # stores of their own in a temporary folder, no --results-dir
    "benchmark/plan/budget",  # plan --budget times a job in one
    "benchmark/report/check.py:check_folder",  # fedbench check without --results-dir
    "benchmark/run/ray_worker.py:run_remote_job",  # a Ray node's job: its files go back to the driver as bytes
)


def test_store_run_and_report_take_the_results_folder_as_a_store():
    raw = [place for place in results_parameters(ROOT)[0] if place.split("/")[1] in CONVERTED]
    assert raw == []


def test_a_command_takes_the_raw_results_folder_only_at_its_entry():
    raw = {place.split("(")[0] for place in results_parameters(ROOT)[0] if place.split("/")[1] == "commands"}
    assert raw == {c for c in COMMANDS if c.startswith("benchmark/commands/")}


def test_a_store_is_built_once_at_each_command_and_elsewhere_only_as_scratch():
    built = Counter(store_builds(ROOT))
    assert {c: built[c] for c in COMMANDS} == dict.fromkeys(COMMANDS, 1)
    assert [place for place in built if place not in COMMANDS and not place.startswith(SCRATCH)] == []


def test_the_scan_finds_a_raw_results_parameter_and_counts_a_typed_one(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "from pathlib import Path\n\n\ndef f(results_dir: Path, store: 'Store'):\n    pass\n\n\n"
        "def g(results_root):\n    pass\n"
    )
    assert results_parameters(tmp_path / "pkg") == (["pkg/m.py:f(results_dir)", "pkg/m.py:g(results_root)"], 1)


def test_the_scan_finds_each_store_built_in_its_innermost_function_outside_store(tmp_path):
    (tmp_path / "pkg" / "store").mkdir(parents=True)
    (tmp_path / "pkg" / "store" / "layout.py").write_text("def here(root):\n    return Store(root)\n")
    (tmp_path / "pkg" / "m.py").write_text(
        "def outer(path):\n    def inner():\n        return Store(path)\n\n    return inner(), Store(path).jobs\n"
    )
    assert store_builds(tmp_path / "pkg") == ["pkg/m.py:inner", "pkg/m.py:outer"]
