"""The results folder travels as a typed `Store` (issue 32 point 4): the layers converted so far, store/ and
run/, take no raw results path; the command builds the Store and hands it down (benchmarks/job_walk.py
follows it at run time and counts what still takes a path)."""

from __future__ import annotations

import sys
from pathlib import Path

from fedtest import REPO

import benchmark

sys.path.insert(0, str(REPO / "benchmarks"))
from job_walk import results_parameters  # noqa: E402

CONVERTED = ("store", "run")


def test_store_and_run_take_the_results_folder_as_a_store():
    root = Path(benchmark.__file__).parent
    raw = [place for place in results_parameters(root)[0] if place.split("/")[1] in CONVERTED]
    assert raw == []


def test_the_scan_finds_a_raw_results_parameter_and_counts_a_typed_one(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "from pathlib import Path\n\n\ndef f(results_dir: Path, store: 'Store'):\n    pass\n\n\n"
        "def g(results_root):\n    pass\n"
    )
    assert results_parameters(tmp_path / "pkg") == (["pkg/m.py:f(results_dir)", "pkg/m.py:g(results_root)"], 1)
