"""`fedbench check --reuse` takes no summary at its word: a job is reused only when the current
code computes its first evaluated round again to the stored values (benchmark/run/reuse.py)."""

from __future__ import annotations

import json

from fedtest import REPO

from benchmark.cli import main
from benchmark.fl.servers import Average
from benchmark.run.code_fingerprint import code_fingerprint
from benchmark.store.layout import Store

SUITE = str(REPO / "suites" / "ci.yaml")
BASELINE = REPO / "results" / "baselines" / "ci.json"
CHECK = ["check", SUITE, "--no-tracking", "--threads", "1", "--quiet", "--baseline", str(BASELINE), "--only", "FedAvg"]


def set_aside(results) -> list[str]:
    return sorted(p.name for p in (results / "jobs").glob("[!.]*.*"))


def test_reuse_recomputes_the_code_and_refuses_what_a_broken_build_did_not_produce(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    assert main(CHECK + ["--results-dir", str(results)]) == 0  # the good code's results
    summaries = sorted((results / "jobs").glob("*/summary.json"))
    assert len(summaries) == 3
    stored = {p: p.read_text() for p in summaries}

    assert main(CHECK + ["--results-dir", str(results), "--reuse"]) == 0  # verified, reused as they are
    assert set_aside(results) == [] and {p: p.read_text() for p in summaries} == stored

    old = json.loads(summaries[0].read_text())
    del old["code_parts"]  # as a fedbench before per-part fingerprints wrote it: its code is unknown
    summaries[0].write_text(json.dumps(old))
    assert main(CHECK + ["--results-dir", str(results), "--reuse"]) == 0
    unknown = f"{summaries[0].parent.name}.code-{code_fingerprint()}"
    assert set_aside(results) == [unknown] and summaries[0].read_text() != json.dumps(old)  # rerun

    # a broken build (FedAvg's server step scaled by 0.1) whose files, and so every fingerprint the
    # summaries record, are the good code's; the summaries claim it outright too
    update = Average.update
    monkeypatch.setattr(
        Average, "update", lambda self, theta, *a: ((theta + 0.1 * (update(self, theta, *a)[0] - theta)), a[0])
    )
    for path in summaries:
        path.write_text(json.dumps({**json.loads(path.read_text()), "code_fingerprint": code_fingerprint()}))
    capsys.readouterr()
    assert main(CHECK + ["--results-dir", str(results), "--reuse", "--json"]) == 1  # rerun, and caught
    assert not json.loads(capsys.readouterr().out)["passed"]
    rerun = [f"{p.parent.name}.code-{code_fingerprint()}" for p in summaries]
    assert set_aside(results) == sorted([unknown, *rerun[1:], f"{unknown}-2"])


def test_reuse_verifies_a_protocols_jobs_in_the_batches_a_run_computes(tmp_path):
    """FedAc's jobs are computed in batches: the check recomputes them in the batches a run computes."""
    from engine.test_fedac_batched import shared_suite

    from benchmark.run.executor import run_jobs
    from benchmark.run.reuse import ReuseCheck
    from benchmark.store.job_dir import JobDir
    from benchmark.suite.expand import expand

    jobs = expand(shared_suite(["fedac1", "fedavg"], clients=4))
    run_jobs(jobs, "fedac-batched", Store(tmp_path))
    verdicts = ReuseCheck(jobs, "fedac-batched", "cpu")
    assert {verdicts.why_not(j, JobDir(Store(tmp_path), j.id)) for j in jobs} == {None}
