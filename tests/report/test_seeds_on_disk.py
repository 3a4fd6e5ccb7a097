"""`status` and `report` read every seed on disk (--seeds narrows; --set/--rounds must match), print
JSON with --json, and the terminal table fits 100 columns."""

from __future__ import annotations

import json

import pandas as pd
from fedtest import tiny_suite, write_suite

from benchmark.cli import main


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_status_and_report_read_every_seed_on_disk(tmp_path, capsys):
    path, results = write_suite(tmp_path, tiny_suite()), str(tmp_path / "results")
    base = ["--no-tracking", "--results-dir", results]
    assert main(["run", str(path), *base, "--seeds", "0,1,2", "-q"]) == 0  # the suite's seeds: [0]
    capsys.readouterr()

    assert main(["status", str(path), "--results-dir", results, "--json"]) == 0
    jobs = _json(capsys)["jobs"]
    assert len(jobs) == 6 and {j["state"] for j in jobs} == {"done"}  # 2 methods x 3 seeds
    assert sorted({j["seed"] for j in jobs}) == [0, 1, 2] and all(j["rounds_done"] == 4 for j in jobs)
    assert main(["status", str(path), "--results-dir", results, "--json", "--seeds", "0,1"]) == 0
    assert len(_json(capsys)["jobs"]) == 4  # --seeds narrows
    # jobs run with an override show only with the same override; plain status says they exist
    assert main(["status", str(path), "--results-dir", results, "--json", "--set", "local.lr=0.1"]) == 0
    out, err = capsys.readouterr()
    assert {j["state"] for j in json.loads(out)["jobs"]} == {"pending"}
    assert "6 other job(s)" in " ".join(err.split()) and "6 with `--set local.lr=0.05`" in " ".join(err.split())
    assert main(["status", str(path), "--results-dir", results, "--json", "--rounds", "2"]) == 0
    out, err = capsys.readouterr()
    assert "6 with `--rounds 4`" in " ".join(err.split())

    assert main(["report", str(path), *base, "--json"]) == 0
    report = _json(capsys)
    main_table = next(t for t in report["tables"] if t["kind"] == "main")
    assert [(row["seeds"], row["finished_seeds"]) for row in main_table["rows"]] == [([0, 1, 2], 3)] * 2
    table = pd.read_csv(tmp_path / "results" / "tiny" / "report" / "tables" / "synthetic.csv")
    assert list(table["final_ema_acc.n"]) == [3, 3]
    # a narrower report replaces the fuller one only saying so
    assert main(["report", str(path), *base, "--seeds", "0"]) == 0
    assert "covered 4 more job(s)" in " ".join(capsys.readouterr().err.split())


def test_terminal_table_fits_100_columns_and_wide_shows_all(tmp_path, capsys):
    path, results = write_suite(tmp_path, tiny_suite()), str(tmp_path / "results")
    assert main(["run", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0,1", "-q"]) == 0
    capsys.readouterr()
    assert main(["report", str(path), "--no-tracking", "--results-dir", results]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("┃", "│"))]
    assert lines and max(len(line) for line in lines) <= 100
    assert main(["report", str(path), "--no-tracking", "--results-dir", results, "--wide"]) == 0
    wide = capsys.readouterr().out
    assert "wall time" in wide and "not shown" not in wide
    assert main(["report", str(path), "--no-tracking", "--results-dir", results, "--columns", "wall_s"]) == 0
    assert "wall time" in capsys.readouterr().out
    assert main(["report", str(path), "--no-tracking", "--results-dir", results, "--columns", "nope"]) == 2
    assert "wall_s" in capsys.readouterr().err
