"""The command line: plan prints the job table, run prints the comparison, report reads results."""

from __future__ import annotations

from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main


def test_plan_lists_every_job_with_its_id(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite(grid={"local.lr": [0.1, 0.2]}))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 jobs" in out and out.count("FedACG") == 2 and "lam=0.85" in out


def test_plan_leaves_unset_parameters_out(capsys):
    assert main(["plan", str(REPO / "suites" / "fedac_small.yaml"), "--only", "FedAc-I", "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "fedac.variant=I" in out and "None" not in out  # fedac.mu: null means λ, not a value to show


def test_run_then_report_show_paper_beside_measured(tmp_path, capsys):
    suite = tiny_suite()
    suite["datasets"][0]["reference"] = {"source": "hand-made", "metrics": ["acc@4"], "rows": {"FedACG": [12.5]}}
    path = write_suite(tmp_path, suite)
    results = str(tmp_path / "results")
    assert main(["run", str(path), "--no-tracking", "--results-dir", results]) == 0
    first = capsys.readouterr().out
    assert "(paper 12.50, Δ" in first and "acc@4 (EMA, %)" in first and "finished" in first
    assert main(["report", str(path), "--results-dir", results]) == 0
    assert "12.50" in capsys.readouterr().out


def test_report_notes_finished_jobs_outside_its_selection(tmp_path, capsys):
    path, results = write_suite(tmp_path, tiny_suite()), str(tmp_path / "results")
    assert main(["run", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0,1", "--rounds", "2"]) == 0
    capsys.readouterr()
    assert main(["report", str(path), "--no-tracking", "--results-dir", results, "--rounds", "2", "--seeds", "0"]) == 0
    assert "note: 2 other job(s)" in " ".join(capsys.readouterr().err.split())
    assert (
        main(["report", str(path), "--no-tracking", "--results-dir", results, "--rounds", "2", "--seeds", "0,1"]) == 0
    )
    assert "other job(s)" not in capsys.readouterr().err


def test_report_without_results_exits_2(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    assert main(["report", str(path), "--results-dir", str(tmp_path / "none")]) == 2
    assert "fedbench run" in capsys.readouterr().err


def test_only_filter_and_missing_match(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--no-tracking", "--only", "nothing-matches", "--results-dir", str(tmp_path)]) == 2


def test_shipped_suites_validate():
    for suite in sorted((REPO / "suites").rglob("*.yaml")):
        assert main(["plan", str(suite)]) == 0, suite.name


def test_unusable_device_is_one_clear_error(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    for device in ("gpu", "cuda:7"):
        assert main(["run", str(path), "--no-tracking", "--device", device, "--results-dir", str(tmp_path)]) == 2
        assert "--device" in capsys.readouterr().err
    assert not list(tmp_path.glob("tiny/*"))  # nothing ran


def test_version_and_python_dash_m(tmp_path):
    import subprocess
    import sys

    import benchmark

    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "benchmark", "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == f"fedbench {benchmark.__version__}"
    path = write_suite(tmp_path, tiny_suite())
    bad = subprocess.run(
        [sys.executable, "-m", "benchmark", "plan", str(path), "--set", "x"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and "expected PATH=VALUE" in bad.stderr and "Traceback" not in bad.stderr
