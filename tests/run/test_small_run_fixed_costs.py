"""A small `fedbench run -q --no-tracking` of FedAc cells pays for nothing it does not use (issue 37 point 1) and
gives up nothing for it: every job's files are written whole, each with the environment it ran in (computed
once per process: the same git commit as git's own, the installed fedbench), and the result table printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from engine.test_fedac_fixed_costs import SUITE, write_a9a
from fedtest import REPO

from benchmark.run.environment import checkout_state

# modules a FedAc run under -q --no-tracking never uses: downloads (ssl, http), archives, a new MLflow
# store, the live display, rich's emoji codes
UNUSED = (
    "urllib.request",
    "http.client",
    "ssl",
    "sqlite3",
    "tarfile",
    "rich.progress",
    "rich.live",
    "rich._emoji_codes",
)
PROBE = f"""\
import json, sys
from benchmark.cli import main
code = main(sys.argv[1:])
print("MODULES " + json.dumps(sorted(m for m in {UNUSED!r} if m in sys.modules)))
sys.exit(code)
"""


def quiet_run(tmp_path: Path, results: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    suite = tmp_path / "suite.yaml"
    if not suite.exists():
        write_a9a(tmp_path / "data", rows=60, seed=5)
        suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, mbsgd]"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_CACHE": str(tmp_path / "cache")}
    args = ["run", str(suite), "--results-dir", str(results), "--no-tracking", "--threads", "1", "-q"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("MODULES ")]
    return done, json.loads(line.removeprefix("MODULES "))


def test_a_quiet_fedac_run_imports_no_download_archive_store_or_display_module(tmp_path):
    first, _ = quiet_run(tmp_path, tmp_path / "first")  # solves F* with torch, once per machine
    assert first.returncode == 0, first.stderr
    ran, modules = quiet_run(tmp_path, tmp_path / "results")
    assert ran.returncode == 0, ran.stderr
    assert modules == []


def test_a_quiet_run_writes_every_job_whole_with_the_environment_it_ran_in(tmp_path):
    ran, _ = quiet_run(tmp_path, tmp_path / "results")
    assert ran.returncode == 0, ran.stderr
    assert "FedAc-I" in ran.stdout and "MB-SGD" in ran.stdout  # the result tables, under -q too
    jobs = sorted(p.parent for p in (tmp_path / "results" / "jobs").glob("*/summary.json"))
    assert len(jobs) == 4
    git = checkout_state(REPO)
    for job in jobs:
        assert sorted(p.name for p in job.iterdir()) == [
            "config.json",
            "final_model.pt",
            "metrics.jsonl",
            "summary.json",
        ]
        summary = json.loads((job / "summary.json").read_text())
        env = summary["environment"]
        assert summary["status"] == "finished" and summary["code_parts"] and summary["threads"]["count"] == 1
        assert env["fedbench"] == version("fedbench") and env["python"] and env["device_name"]
        assert (env["git_commit"], env["git_dirty"]) == (git or (None, None))
        lines = (job / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(line)["round"] for line in lines] == [2, 4]
    written = {job: (job / "summary.json").read_bytes() for job in jobs}
    again, _ = quiet_run(tmp_path, tmp_path / "results")  # everything done: reused, nothing trained or written again
    assert again.returncode == 0, again.stderr
    assert {job: (job / "summary.json").read_bytes() for job in jobs} == written and "FedAc-I" in again.stdout


def test_names_are_printed_as_written_not_as_emoji():
    from benchmark.commands.output import err_console, out

    for console in (out, err_console):
        with console.capture() as captured:
            console.print("[bold]method[/bold] a:smile:b :warning:")
        assert captured.get().strip() == "method a:smile:b :warning:"
