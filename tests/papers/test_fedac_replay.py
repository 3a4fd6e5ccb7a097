"""The FedAc authors' sample stream (`split.samples: authors_numpy`): their draws, their released
runs replayed to 1e-6 by the record's command, the batched engine and the per-client loop on the
same examples, and the suite of all their runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from engine.test_fedac_batched import assert_same_records, run_both, shared_suite
from fedtest import REPO
from papers.test_paper_suites import REFERENCE, needs_reference

from benchmark.cli import main
from benchmark.engine.fed_data import authors_positions
from benchmark.papers.fedac_replay import LABELS, released_runs
from benchmark.protocols.fedac import authors_rerun, released, released_run
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def test_the_stream_is_their_choice_per_step_after_their_w0():
    """logistic.py: np.random.seed(s); w0 = randn(d); then per step choice(n, M) (FedAc, FedAvg:
    worker m takes index m) or per round choice(n, M·K) (the minibatch methods): one stream."""
    seed, d, n, m, k, rounds = 1, 123, 32561, 4, 3, 5
    np.random.seed(seed)
    np.random.randn(d)
    per_step = [np.random.choice(n, m) for _ in range(rounds * k)]
    np.random.seed(seed)
    np.random.randn(d)
    per_round = [np.random.choice(n, m * k) for _ in range(rounds)]
    for rnd in range(rounds):
        drawn = authors_positions(seed, d, rnd, m, k, 1, n)
        assert drawn.shape == (m, k, 1)
        for j in range(k):
            assert drawn[:, j, 0].tolist() == per_step[rnd * k + j].tolist()
        assert sorted(drawn.flatten().tolist()) == sorted(per_round[rnd].tolist())
    # asked out of order (a resumed job), a round is the same draw
    assert authors_positions(seed, d, 1, m, k, 1, n).tolist() == authors_positions(seed, d, 1, m, k, 1, n).tolist()


def test_a_local_batch_is_their_reshape_of_one_draw_per_step():
    """local_batch b: choice(n, b·M).reshape(b, M): worker m's s-th example is index s·M + m."""
    np.random.seed(3)
    np.random.randn(7)
    draws = [np.random.choice(50, 2 * 3).reshape(2, 3) for _ in range(4)]  # b = 2, M = 3, K = 2, 2 rounds
    for rnd in range(2):
        drawn = authors_positions(3, 7, rnd, 3, 2, 2, 50)
        for j in range(2):
            assert drawn[:, j, :].tolist() == draws[rnd * 2 + j].T.tolist()


REPLAY_SUITE = """\
name: replay-check
defaults:
  seeds: [1]
  participation: {mode: fixed, rate: 1.0}
  model: {name: binary_logistic, init: normal_numpy}
  local: {batch_size: 1, clip_norm: null}
  suboptimality: true
datasets:
{entries}
methods: [fedac_vanilla, fedavg, fedac1, mbsgd, mbacsgd, {preset: fedac2, label: "FedAc-II (authors' β)",
  client: {fedac: {beta_rule: authors_code}}}]
grid:
  num_clients: [2]
  local.lr: [0.01, 0.02]
"""
ENTRY = """\
- name: a9a
  label: lambda={lam} K={k}
  split: {{kind: shared, samples: authors_numpy}}
  rounds: {rounds}
  eval_every: {every}
  local: {{steps: {k}, epochs: null, weight_decay: {lam}}}
"""


def _replay_suite(tmp_path, points) -> str:
    entries = "".join(ENTRY.format(lam=lam, k=k, rounds=4096 // k, every=512 // k) for lam, k in points)
    path = tmp_path / "replay.yaml"
    path.write_text(REPLAY_SUITE.replace("{entries}", entries))
    return str(path)


@pytest.mark.realdata
@needs_reference
def test_released_runs_replay_to_1e_6(data_root, tmp_path, monkeypatch):
    """A few of the authors' runs (M = 2, every method they ran, each λ, one- and K-step rounds),
    run in parallel parts by the record's command, equal their released final F(w) to 1e-6
    relative (in fact to 1e-13), and the record says so."""
    monkeypatch.setenv("FEDBENCH_DATA", str(data_root))
    suite = _replay_suite(tmp_path, [(0.01, 4), (0.001, 1), (0.001, 8), (0.0001, 16)])
    out, results = tmp_path / "record", tmp_path / "results"
    args = [suite, "--reference", str(REFERENCE), "--results-dir", str(results), "--out", str(out), "--workers", "2"]
    done = CliRunner().invoke(released_run.main, [*args, "--some-runs"])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(out / "runs.csv.gz")
    assert len(runs) == 44  # 4 entries × 6 methods × 2 η, but at λ = 1e-2 no vanilla FedAc or FedAc-II released
    assert set(runs["method"]) == set(LABELS.values()) and runs["runid"].is_unique
    assert runs["match"].all(), runs[~runs["match"]].to_string()
    assert (runs["rel_diff"] < 1e-6).all() and (runs["fedbench_status"] == "finished").all()
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    assert runs["ran_on"].str.contains(f", commit {head.strip()}").all(), runs["ran_on"].unique()  # machine, commit
    report = (out / "report.md").read_text()
    assert "**44 of 44 released runs match to 1e-06 relative**" in report and "released_run" in report
    assert "3 parts, 44 jobs, 2 workers" in (out / "run.log").read_text()  # M ≤ 512: a part per λ


@pytest.mark.realdata
@needs_reference
def test_a_replay_cut_by_its_deadline_records_what_did_not_run(data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_DATA", str(data_root))
    suite = _replay_suite(tmp_path, [(0.001, 8)])
    out = tmp_path / "record"
    args = [suite, "--reference", str(REFERENCE), "--results-dir", str(tmp_path / "results"), "--out", str(out)]
    done = CliRunner().invoke(released_run.main, [*args, "--deadline-s", "0", "--some-runs"])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(out / "runs.csv.gz", keep_default_na=False)
    assert len(runs) == 12 and set(runs["why"]) == {"not_run"} and not runs["match"].any()
    assert "**0 of 12 released runs match" in (out / "report.md").read_text()
    assert "12: no finished replay in the results store" in (out / "report.md").read_text()
    # another machine's record of the same runs fills the rows not run here, and says so
    earlier = pd.read_csv(out / "runs.csv.gz")
    earlier.loc[:1, ["fedbench_status", "fedbench_final_loss"]] = ["finished", 0.5]
    earlier.loc[:1, ["rel_diff", "match", "why"]] = [0.0, True, ""]
    earlier.to_csv(tmp_path / "earlier.csv.gz", index=False)
    merged = tmp_path / "merged"
    record = [suite, "--reference", str(REFERENCE), "--results-dir", str(tmp_path / "results"), "--out", str(merged)]
    extra = ["--some-runs", "--earlier", str(tmp_path / "earlier.csv.gz"), "--earlier-note", "the other machine"]
    done = CliRunner().invoke(released.main, [*record, *extra])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(merged / "runs.csv.gz", keep_default_na=False)
    assert runs["ran_on"].tolist() == ["the other machine"] * 2 + ["not run"] * 10 and runs["match"].sum() == 2
    report = (merged / "report.md").read_text()
    assert "0 rows by the command above" in report and "- 2: the other machine\n" in report, report
    # merged again, each row keeps where it ran, as it was written (not "earlier record's earlier record")
    again = tmp_path / "again"
    extra[-3] = str(merged / "runs.csv.gz")
    done = CliRunner().invoke(released.main, [*record[:-1], str(again), *extra[:-2]])
    assert done.exit_code == 0, done.output
    assert pd.read_csv(again / "runs.csv.gz", keep_default_na=False)["ran_on"].tolist() == runs["ran_on"].tolist()


@pytest.mark.parametrize("method", ["fedac1", "fedac_vanilla", "fedavg", "mbacsgd"])
def test_batched_engine_equals_the_per_client_loop_on_the_authors_stream(tmp_path, method):
    """Both paths draw the same examples from the authors' stream (after the same w0) and compute in
    float64 (the authors' numpy does): their records agree to float64's rounding, not float32's."""
    suite = shared_suite(method, steps=3, clients=3, batch=2, model={"name": "binary_logistic", "init": "normal_numpy"})
    entry = suite.datasets[0]
    suite.datasets[0] = entry.model_copy(update={"split": entry.split.model_copy(update={"samples": "authors_numpy"})})
    jobs, loop, fast = run_both(tmp_path, suite)
    assert {j.config.dataset.split.samples for j in jobs} == {"authors_numpy"}
    for j in jobs:
        assert_same_records(loop[j.id], fast[j.id], rel=1e-12, abs=1e-13)
    finals = {path: torch.load(JobDir(Store(tmp_path / path), j.id).model)["fc.weight"] for path in ("loop", "fast")}
    assert finals["loop"].dtype == finals["fast"].dtype == torch.float64
    assert torch.allclose(finals["loop"], finals["fast"], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "model, split, message",
    [
        (
            "{name: binary_logistic, init: normal}",
            "{kind: shared, samples: authors_numpy}",
            "set model.init: normal_numpy",
        ),
        ("{name: binary_logistic, init: normal_numpy}", "{kind: iid, samples: authors_numpy}", "kind: shared"),
        ("{name: binary_logistic, init: normal_numpy}", "{kind: shared, samples: numpy}", "authors_numpy"),
    ],
)
def test_the_authors_stream_without_its_w0_or_shared_split_is_refused(tmp_path, capsys, model, split, message):
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"name: bad\ndefaults:\n  model: {model}\n  local: {{steps: 2, batch_size: 1, weight_decay: 0.01}}\n"
        f"datasets:\n- name: synthetic\n  split: {split}\nmethods: [fedac1]\n"
    )
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


@needs_reference
def test_the_replay_suite_holds_every_released_run_as_a_job_of_its_own_settings():
    """suites/papers/fedac.authors_replay.yaml: each of the 32,190 released rows is one job with the
    row's method, λ, η, M and K (31,970 distinct: the λ = 1e-3 file repeats 220 rows), seed 1 and
    T = 4096, drawing the authors' samples after their w0, evaluated at K·R = 4096."""
    runs = released_runs(REFERENCE)
    assert len(runs) == 32_190 and len({r.key for r in runs}) == 31_970
    _, jobs = load_jobs(REPO / "suites" / "papers" / "fedac.authors_replay.yaml")
    by_key = {}
    for job in jobs:
        c = job.config
        by_key[(job.method_label, c.local.weight_decay, c.local.lr, c.num_clients, c.local.steps)] = c
    for run in runs:
        c = by_key[run.key]
        assert (c.seed, c.rounds * c.local.steps, c.local.batch_size) == (1, 4096, 1)
        assert (c.dataset.split.samples, c.model.init, c.evaluates(c.rounds)) == ("authors_numpy", "normal_numpy", True)
    fedac2 = by_key[next(r.key for r in runs if r.alg == 2)].method
    assert fedac2.term("fedac").params.beta_rule == "authors_code"


@pytest.mark.realdata
@needs_reference
def test_a_released_run_that_rounding_decides_is_shown_so(data_root, tmp_path, monkeypatch):
    """λ = 1e-3, K = 1, M = 2, η = 1: at K = 1 FedAc-I, vanilla FedAc and MB-AC-SGD are one recursion,
    which their code computes in two arrangements (the workers' pool; one minibatch) and fedbench, on
    their stream, in the minibatch one: it matches their MB-AC-SGD run (1.8e-14) and ends a factor
    2.2 from their pool runs, as their own two arrangements do from each other, and more than 1e-6
    from itself when η or λ moves by a few units in its last place: the record says rounding decides."""
    monkeypatch.setenv("FEDBENCH_DATA", str(data_root))
    suite = _replay_suite(tmp_path, [(0.001, 1)])
    Path(suite).write_text(Path(suite).read_text().replace("[0.01, 0.02]", "[1.0]"))
    out = tmp_path / "record"
    args = [suite, "--reference", str(REFERENCE), "--results-dir", str(tmp_path / "results"), "--out", str(out)]
    done = CliRunner().invoke(released_run.main, [*args, "--workers", "2", "--check-s", "900", "--some-runs"])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(out / "runs.csv.gz", keep_default_na=False).set_index("method")
    chaotic = ["FedAc-I", "FedAc (vanilla)"]
    assert runs.loc[[*chaotic, "MB-AC-SGD"], "fedbench_final_loss"].nunique() == 1  # one arithmetic here
    assert runs.loc["MB-AC-SGD", "match"] and float(runs.loc["MB-AC-SGD", "rel_diff"]) < 1e-12
    assert set(runs.loc[chaotic, "why"]) == {"rounding"} and not runs.loc[chaotic, "match"].any()
    assert (runs.loc[chaotic, "nudged_rel_change"].astype(float) > 1e-6).all()
    # judged by every probe (η, λ up and down, the sums in another order) and the run replayed again
    assert set(runs.loc[chaotic, "nudge"]) == {released.PROBED}
    assert (runs.loc[chaotic, "probe_replays_itself"].astype(float) >= 0).all()
    assert "differs" not in set(runs["why"])
    report = (out / "report.md").read_text()
    assert "rounding-chaotic" in report and "## The rounding floor, measured" in report
    # the record fed back as --earlier over the same store, with no time to probe: the same replays keep
    # the probes that measured them (not the "(earlier replay)" carry of a replay that moved)
    again = tmp_path / "again"
    more = ["--some-runs", "--check-s", "0", "--earlier", str(out / "runs.csv.gz")]
    done = CliRunner().invoke(released.main, [*args[:-1], str(again), *more])
    assert done.exit_code == 0, done.output
    kept = pd.read_csv(again / "runs.csv.gz", keep_default_na=False).set_index("method")
    assert set(kept.loc[chaotic, "why"]) == {"rounding"} and set(kept.loc[chaotic, "nudge"]) == {released.PROBED}
    assert kept["nudged_rel_change"].tolist() == runs["nudged_rel_change"].tolist()


# A stand-in for a checkout of the authors' repository: their entry point (LogiBinaryLibSVM(name, λ).train
# with their argument order) writing a curve where their ExprMgr does, its last value the one finals.json
# beside it gives for these arguments. The real one is run by the record's command.
STAND_IN = """\
import json, pathlib
FINALS = json.loads(pathlib.Path(__file__).with_name("finals.json").read_text())
class LogiBinaryLibSVM:
    def __init__(self, name, lambd):
        self.name, self.lambd = name, lambd
        assert pathlib.Path("libsvm_datasets", name).is_file()
    def train(self, alg, eta, M, K, T, local_batch, seed, record_intvl):
        assert (T, local_batch, seed, record_intvl) == (4096, 1, 1, 512)
        out = pathlib.Path("out", f"{self.name}_{self.lambd:.0e}", "out")
        out.mkdir(parents=True)
        final = FINALS[f"{alg} {eta!r} {M} {K} {self.lambd!r}"]
        (out / "0101T000000Z_xxxxxx.csv").write_text(f",loss\\n0,9.0\\n{T},{final!r}\\n")
"""


def _rerun(tmp_path, record, out, *extra):
    checkout = tmp_path / "authors"
    checkout.mkdir(exist_ok=True)
    (checkout / "logistic.py").write_text(STAND_IN)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a9a").write_text("-1 3:1\n")
    args = ["--authors", str(checkout), "--record", str(record), "--out", str(out), "--data", str(data), *extra]
    return CliRunner().invoke(authors_rerun.main, args)


@pytest.mark.realdata
@needs_reference
def test_the_authors_code_rerun_here_classes_the_rows_it_does_not_reproduce(data_root, tmp_path, monkeypatch):
    """authors_rerun.py runs their entry point on the record's unexplained rows (cheapest first, one
    process each, appended as they end, not run again); released.py --authors-here reads its CSV: a
    row their own code here ends more than 1e-6 from their released number is authors_code_here_differs,
    one it reproduces keeps its class, with the numbers beside it."""
    monkeypatch.setenv("FEDBENCH_DATA", str(data_root))  # F* of the record's rows
    suite = _replay_suite(tmp_path, [(0.001, 8)])
    store, out = tmp_path / "results", tmp_path / "cut"
    base = [suite, "--reference", str(REFERENCE), "--results-dir", str(store), "--some-runs", "--out"]
    done = CliRunner().invoke(released.main, [*base, str(out), "--check-s", "0"])
    assert done.exit_code == 0, done.output  # nothing ran: 12 not_run
    earlier = pd.read_csv(out / "runs.csv.gz")
    # two rows replayed elsewhere, 1e-4 from the authors; their code here: their released number, and 1e-5 off it
    theirs = [earlier["authors_final_loss"][0], earlier["authors_final_loss"][1] * (1 + 1e-5)]
    (tmp_path / "authors").mkdir()
    keys = [f"{r.alg} {r.eta!r} {r.M} {r.K} {r['lambda']!r}" for _, r in earlier.head(2).iterrows()]
    (tmp_path / "authors" / "finals.json").write_text(json.dumps(dict(zip(keys, theirs))))
    earlier.loc[:1, ["fedbench_status", "match", "why"]] = ["finished", False, "differs_unchecked"]
    earlier.loc[:1, "fedbench_final_loss"] = earlier.loc[:1, "authors_final_loss"] * (1 + 1e-4)
    earlier.loc[:1, "rel_diff"] = 1e-4
    earlier.to_csv(tmp_path / "earlier.csv.gz", index=False)
    here = tmp_path / "authors_here.csv"
    done = _rerun(tmp_path, tmp_path / "earlier.csv.gz", here)
    assert done.exit_code == 0, done.output
    ran = pd.read_csv(here)
    assert ran["runid"].tolist() == earlier["runid"][:2].tolist()  # only the unexplained rows
    assert ran["authors_here_final_loss"].tolist() == theirs
    assert _rerun(tmp_path, tmp_path / "earlier.csv.gz", here).exit_code == 0
    assert len(pd.read_csv(here)) == 2  # resumed: nothing run twice
    merged = tmp_path / "merged"
    extra = ["--earlier", str(tmp_path / "earlier.csv.gz"), "--authors-here", str(here), "--check-s", "0"]
    done = CliRunner().invoke(released.main, [*base, str(merged), *extra])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(merged / "runs.csv.gz", keep_default_na=False)
    assert runs["why"][:2].tolist() == ["differs_unchecked", "authors_code_here_differs"]
    moved = runs["authors_here_rel_diff"][:2].astype(float)
    assert moved[0] == 0 and moved[1] == pytest.approx(1e-5, rel=1e-6)
    assert "1: the authors' own code, run again here" in (merged / "report.md").read_text()
    # a file that is not its CSV: exit 2, said so
    (tmp_path / "bad.csv").write_text("runid,final\nx,1\n")
    done = CliRunner().invoke(released.main, [*base, str(merged), "--authors-here", str(tmp_path / "bad.csv")])
    assert done.exit_code == 2 and "not a CSV of authors_rerun.py" in done.output


def test_the_rerun_refuses_what_it_cannot_run(tmp_path):
    """No logistic.py at --authors, a file that is not a replay record, no a9a at --data: exit 2, said so."""
    record, checkout = tmp_path / "runs.csv", tmp_path / "authors"
    checkout.mkdir()

    def rerun():
        args = ["--authors", str(checkout), "--record", str(record), "--out", str(tmp_path / "o.csv")]
        return CliRunner().invoke(authors_rerun.main, [*args, "--data", str(tmp_path)])

    record.write_text("runid,why\n")
    done = rerun()
    assert done.exit_code == 2 and "no logistic.py there" in done.output, done.output
    (checkout / "logistic.py").write_text(STAND_IN)
    done = rerun()
    assert done.exit_code == 2 and "not a replay record's runs.csv" in done.output, done.output
    record.write_text("runid,lambda,alg,eta,M,K,why,authors_final_loss\nr1,0.001,1,0.1,2,4,differs,0.5\n")
    done = rerun()
    assert done.exit_code == 2 and "a9a.gz exists" in done.output and "Traceback" not in done.output, done.output


AUTHORS_STEPS_SUITE = """\
name: authors-steps
defaults:
  seeds: [1]
  participation: {mode: fixed, rate: 1.0}
  model: {name: binary_logistic, init: normal_numpy}
  local: {batch_size: 1, clip_norm: null, steps: 3, epochs: null, weight_decay: 0.01}
datasets:
- name: synthetic
  split: {kind: shared, samples: authors_numpy}
methods: [fedac1, fedavg, fedac_vanilla, {preset: fedac2, client: {fedac: {beta_rule: authors_code}}}]
grid:
  local.lr: [0.05]
"""


def _their_pool_round(x, y, w, w_ag, idx, alg, eta, lam):
    """One round of their logistic.py `fedac` / `fedavg` (the test's oracle, transcribed from their
    code): every worker's pool row elementwise, σ as scipy's expit, averaged by pool.mean(axis=0)."""
    from scipy.special import expit

    m, k, bs = idx.shape
    if alg == "fedac1":
        gamma = max(eta, np.sqrt(eta / (lam * k)))
        alpha = 1 / (gamma * lam)
        beta = alpha + 1
    elif alg == "fedac_vanilla":
        gamma = np.sqrt(eta / lam)
        alpha = 1 / (gamma * lam)
        beta = alpha + 1
    elif alg == "fedac2":
        gamma = max(eta, np.sqrt(eta / (lam * k)))
        alpha = 3 / (2 * gamma * lam) - (1 / 2)
        beta = (2 * alpha * alpha) / (alpha - 1)
    pool, ag_pool = np.repeat(w[None], m, 0), np.repeat(w_ag[None], m, 0)
    for j in range(k):
        xs, ys = x[idx[:, j, :].T], y[idx[:, j, :].T]  # (batch, M, d): their reshape of one draw
        point = pool if alg == "fedavg" else (1 / beta) * pool + (1 - (1 / beta)) * ag_pool
        tmp1 = np.sum(xs * point, axis=-1)
        grad = np.mean((-ys * (1 - expit(ys * tmp1)))[:, :, None] * xs, axis=0) + lam * point
        if alg == "fedavg":
            pool = pool - eta * grad
        else:
            ag_pool = point - eta * grad
            pool = (1 - (1 / alpha)) * pool + (1 / alpha) * point - gamma * grad
    return pool.mean(axis=0), ag_pool.mean(axis=0)


ALGS = {"FedAc-I": "fedac1", "FedAvg": "fedavg", "FedAc (vanilla)": "fedac_vanilla", "FedAc-II": "fedac2"}


@pytest.mark.parametrize("batch", [1, 2])
def test_local_steps_on_the_authors_stream_are_their_arithmetic_bit_for_bit(tmp_path, batch):
    """AuthorsSteps (engine.run_batch on `authors_numpy`) computes each worker's steps in their order
    of operations (the point, the gradient plus λ·point, then w_ag and w) and their mean: equal, bit
    for bit, to their pool code, for FedAc-I, FedAvg, vanilla FedAc and FedAc-II together in a batch.
    (The multiplied-out recursion of LocalSteps is not: its coefficients round once, the same way
    at every step, and that moved four released runs by 2.1e-6..8.6e-6.)"""
    from benchmark.protocols.fedac.authors_steps import AuthorsSteps

    path = tmp_path / "suite.yaml"
    path.write_text(AUTHORS_STEPS_SUITE.replace("batch_size: 1", f"batch_size: {batch}"))
    _, jobs = load_jobs(path)
    configs = [j.config for j in jobs]
    rng = np.random.RandomState(0)
    x = (rng.rand(50, 130) < 0.1) * rng.randn(50, 130)  # d = 130: a pairwise sum of two blocks
    y = np.where(rng.rand(50) < 0.5, -1.0, 1.0)
    m, k = 5, 3
    steps = AuthorsSteps(configs, x, y, k)
    w0 = rng.randn(130)
    state = steps.broadcast(np.broadcast_to(w0, (len(configs), 2, 130)).copy(), m)
    assert state[0, 0].tolist() == np.repeat(w0[None], m, 0).mean(0).tolist()  # their first broadcast_avg
    theirs = {j.method_label: (state[0, 0], state[0, 1]) for j in jobs}
    for rnd in range(4):
        idx = rng.randint(0, 50, (m, k, batch))
        state, loss = steps.round(state, idx)
        assert np.isfinite(loss).all()
        for b, job in enumerate(jobs):
            alg = ALGS[job.method_label]
            w, w_ag = _their_pool_round(x, y, *theirs[job.method_label], idx, alg, 0.05, 0.01)
            theirs[job.method_label] = (w, w_ag)
            evaluated = w if alg == "fedavg" else w_ag
            assert state[b, -1].tolist() == evaluated.tolist(), (job.method_label, rnd)


@pytest.mark.realdata
@needs_reference
def test_a_run_the_multiplied_out_recursion_missed_replays_to_their_digits(data_root, tmp_path, monkeypatch):
    """0603T142209Z_xPXdZQ (FedAc-I, λ = 1e-4, η = 0.5, M = 8, K = 2): the record's command replays it
    to their released final loss within 1e-11 (was 8.6e-6, 17x the run's probed floor, `differs`,
    with the recursion's coefficients multiplied out once; their own code here: 1.2e-12)."""
    monkeypatch.setenv("FEDBENCH_DATA", str(data_root))
    suite = _replay_suite(tmp_path, [(0.0001, 2)])
    text = Path(suite).read_text().replace("num_clients: [2]", "num_clients: [8]").replace("[0.01, 0.02]", "[0.5]")
    Path(suite).write_text(text.replace("methods: [fedac_vanilla, fedavg, fedac1,", "methods: [fedac1,"))
    out = tmp_path / "record"
    args = [suite, "--reference", str(REFERENCE), "--results-dir", str(tmp_path / "results"), "--out", str(out)]
    done = CliRunner().invoke(released_run.main, [*args, "--workers", "1", "--some-runs"])
    assert done.exit_code == 0, done.output
    runs = pd.read_csv(out / "runs.csv.gz", keep_default_na=False).set_index("runid")
    row = runs.loc["0603T142209Z_xPXdZQ"]
    assert row["match"] and float(row["rel_diff"]) < 1e-11, row.to_dict()


def test_one_step_rounds_on_the_authors_stream_are_their_minibatch_code_bit_for_bit(tmp_path):
    """MB-SGD and MB-AC-SGD on their stream: their `mbsgd` / `mbasgd` step on the round's M·K draws in
    their draw order (one product over the dense rows: a sum in another order lands up to 1e-5
    away on runs that amplify rounding, 0609T201705Z_YKZhhA among them), bit for bit."""
    from scipy.special import expit

    from benchmark.protocols.fedac.authors_steps import AuthorsSteps

    path = tmp_path / "suite.yaml"
    path.write_text(AUTHORS_STEPS_SUITE.split("methods:")[0] + "methods: [mbsgd, mbacsgd]\ngrid:\n  local.lr: [0.05]\n")
    _, jobs = load_jobs(path)
    rng = np.random.RandomState(1)
    x = (rng.rand(50, 20) < 0.3) * 1.0
    y = np.where(rng.rand(50) < 0.5, -1.0, 1.0)
    m, k, eta, lam = 4, 3, 0.05, 0.01
    steps = AuthorsSteps([j.config for j in jobs], x, y, 1)
    w0 = rng.randn(20)
    state = np.broadcast_to(w0, (2, 2, 20)).copy()
    gamma = np.sqrt(eta / lam)
    alpha = 1 / (gamma * lam)
    beta = alpha + 1
    w, (acc_w, acc_ag) = w0.copy(), (w0.copy(), w0.copy())
    for _ in range(3):
        drawn = rng.randint(0, 50, (k, 1, m))  # authors_positions' draw, (M, K, batch) as it hands it over
        state, _ = steps.one_step(state, drawn.transpose(2, 0, 1))
        xs, ys = x[drawn.reshape(-1)], y[drawn.reshape(-1)]

        def grad(v, xs=xs, ys=ys):
            return -((ys * (1 - expit((xs @ v) * ys))).T @ xs) / len(ys) + lam * v

        w = w - eta * grad(w)
        point = (1 / beta) * acc_w + (1 - (1 / beta)) * acc_ag
        g = grad(point)
        acc_ag, acc_w = point - eta * g, (1 - (1 / alpha)) * acc_w + (1 / alpha) * point - gamma * g
        assert [state[0, -1].tolist(), state[1, -1].tolist()] == [w.tolist(), acc_ag.tolist()]


def test_a_rerun_that_still_differs_keeps_the_earlier_probes_rounding_verdict(tmp_path):
    """A row run again (new arithmetic) that still differs and that this record's probes did not reach,
    which the earlier record's probes found rounding-chaotic, stays `rounding` with those probes'
    numbers, marked as the earlier replay's; one the earlier record matched, one not run again, and one
    this record probed itself (d: its own verdict stands) are left to this record's own checks."""
    (tmp_path / "earlier.csv").write_text(
        "runid,why,nudge,nudged_rel_change,probe_replays_itself\n"
        "a,rounding,eta,0.25,\nb,,,,\nc,rounding,w0,0.5,\nd,rounding,eta,0.5,\ne,rounding,w0 (earlier replay),0.5,\n"
    )
    earlier = pd.read_csv(tmp_path / "earlier.csv")
    why = ["differs_unchecked"] * 3 + ["differs", "differs_unchecked"]
    runs = pd.DataFrame({"runid": list("abcde"), "why": why, "nudge": [""] * 5})
    runs["nudged_rel_change"] = runs["probe_replays_itself"] = float("nan")
    kept = released._still_rounding(runs, earlier, ran_here={"a", "b", "d", "e"})
    assert kept["why"].tolist() == ["rounding", "differs_unchecked", "differs_unchecked", "differs", "rounding"]
    assert kept.loc[0, "nudge"] == "eta (earlier replay)" and kept.loc[0, "nudged_rel_change"] == 0.25
    assert kept.loc[4, "nudge"] == "w0 (earlier replay)"  # carried again, marked once
