"""The batched FedAc engine (all workers as one tensor computation, an lr grid as one batch)
gives the numbers of the per-client round loop, record by record."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fedtest import measured

from benchmark.protocols.fedac import engine as fedac_batched
from benchmark.protocols.fedac import numpy_round
from benchmark.protocols.fedac.jobs import batch_key
from benchmark.run.job_runner import run_job
from benchmark.run.protocol_batches import ProtocolBatches
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.store.records import RoundRecord
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

LRS = [0.05, 0.2, 1.0]


def shared_suite(method, steps: int = 3, clients: int = 4, batch: int = 2, lrs=LRS, **defaults) -> Suite:
    return Suite(
        **{
            "name": "fedac-batched",
            "defaults": {
                "rounds": 4,
                "eval_every": 2,
                "num_clients": clients,
                "participation": {"rate": 1.0},
                "local": {"steps": steps, "batch_size": batch, "weight_decay": 0.01, "clip_norm": None},
                "model": {"name": "binary_logistic", "init": "normal"},
                "suboptimality": True,
                **defaults,
            },
            "datasets": [
                {
                    "name": "synthetic",
                    "params": {"num_users": 5, "dim": 6, "num_classes": 2, "max_samples": 40},
                    "split": {"kind": "shared"},
                }
            ],
            "methods": method if isinstance(method, list) else [method],
            "grid": {"local.lr": lrs},
        }
    )


def run_both(tmp_path, suite: Suite):
    """(records per job from the per-client loop, records per job from the batched engine)."""
    jobs = expand(suite)
    loop = {
        j.id: run_job(j, "loop", JobDir(Store(tmp_path / "loop"), j.id))
        and JobDir(Store(tmp_path / "loop"), j.id).read_metrics()
        for j in jobs
    }
    batched = ProtocolBatches(jobs)
    fast = {}
    for j in jobs:
        d = JobDir(Store(tmp_path / "fast"), j.id)
        run_job(j, "fast", d, simulation_for=batched.simulation_for)
        fast[j.id] = d.read_metrics()
    return jobs, loop, fast


def assert_same_records(loop: list[RoundRecord], fast: list[RoundRecord], rel: float = 2e-5, abs: float = 1e-6) -> None:
    assert loop and [r.round for r in loop] == [r.round for r in fast]
    for a, b in zip(measured(loop), measured(fast)):  # wall-clock fields differ by nature
        assert a.keys() == b.keys()
        for key in a:
            assert b[key] == pytest.approx(a[key], rel=rel, abs=abs), key


ALL = ["fedac1", "fedac2", "fedac_vanilla", "fedavg", "mbsgd", "mbacsgd"]
AUTHORS_BETA = {
    "preset": "fedac2",
    "label": "FedAc-II (authors' β)",
    "client": {"fedac": {"beta_rule": "authors_code"}},
}


@pytest.fixture(params=[False, True], ids=["numba", "numpy"])
def in_numpy(request):
    """K local steps in the numba kernel, then in numpy (numpy_round.py), whatever the cost model would choose."""
    with numpy_round.pinned(request.param):
        yield request.param


def test_an_lr_grid_of_every_method_is_two_batches():
    """K local steps (FedAc-I/II, vanilla, FedAvg) and one step per round (MB-SGD, MB-AC-SGD)."""
    batched = ProtocolBatches(expand(shared_suite(ALL)))
    assert sorted(len(g) for g in batched.batches.values()) == [2 * len(LRS), 4 * len(LRS)]


@pytest.mark.parametrize("method", [ALL[:4], ALL[4:]])
def test_batched_engine_equals_the_per_client_loop(tmp_path, method, in_numpy):
    jobs, loop, fast = run_both(tmp_path, shared_suite(method))
    for j in jobs:
        assert_same_records(loop[j.id], fast[j.id])
    finals = [torch.load(JobDir(Store(tmp_path / "fast"), j.id).model)["fc.weight"] for j in jobs]
    loops = [torch.load(JobDir(Store(tmp_path / "loop"), j.id).model)["fc.weight"] for j in jobs]
    for a, b in zip(loops, finals):
        assert torch.allclose(a, b, atol=1e-5)


def test_fedac_ii_with_the_authors_beta_is_batched_as_the_per_client_loop_runs_it(tmp_path):
    jobs, loop, fast = run_both(tmp_path, shared_suite(["fedac2", AUTHORS_BETA], lrs=[0.05]))
    for j in jobs:
        assert_same_records(loop[j.id], fast[j.id])
    paper, authors = (measured(fast[j.id])[-1]["subopt"] for j in jobs)
    assert paper != pytest.approx(authors, rel=1e-6), "the β rule changes the trajectory"


@pytest.mark.parametrize("steps,batch,fold", [(1, 3, 50.0), (6, 2, 1.0001)])
def test_one_step_rounds_and_folds_agree(tmp_path, monkeypatch, steps, batch, fold, in_numpy):
    """K = 1 (the one-step path), and the sparse path folding P into U after almost every step."""
    monkeypatch.setattr(fedac_batched, "FOLD_CONDITION", fold)
    jobs, loop, fast = run_both(tmp_path, shared_suite("fedac2", steps=steps, batch=batch, rounds=2, eval_every=1))
    for j in jobs:
        assert_same_records(loop[j.id], fast[j.id])


def test_only_the_fedac_protocol_is_batched():
    job = expand(shared_suite("fedac1"))[0]
    assert batch_key(job.config) is not None
    other = job.config.model_copy(update={"local": job.config.local.model_copy(update={"clip_norm": 10.0})})
    assert batch_key(other) is None
    assert (
        batch_key(job.config.model_copy(update={"method": job.config.method.model_copy(update={"client": []})})) is None
    )
    seeds = expand(shared_suite("fedac1", seeds=[0, 1]))
    assert len({batch_key(j.config) for j in seeds}) == 2, "batches group lr values, not seeds"


@pytest.mark.parametrize("in_numpy", [False, True], ids=["numba", "numpy"])
def test_binary_features_shortcut_equals_the_general_sparse_step(in_numpy):
    """a9a's features are 0/1: the engine then skips multiplying by x (padding reads a zero row)."""
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(50, 9, generator=g) < 0.3).float().numpy()
    y = (torch.randint(0, 2, (50,), generator=g) * 2.0 - 1.0).numpy()
    jobs = [j.config for j in expand(shared_suite(ALL[:4], steps=5, clients=3))]
    linear = fedac_batched.Batch.of(jobs, [fedac_batched.Outcome() for _ in jobs]).linear
    sparse = fedac_batched.SparseRows.of(x)
    assert sparse.binary and int((sparse.cols == 9).sum()) > 0  # padded rows present
    general = fedac_batched.SparseRows(sparse.cols, sparse.vals, sparse.width, binary=False)
    state = torch.randn(len(jobs), 2, 9, generator=g).numpy()
    idx = torch.randint(0, 50, (3, 5, 2), generator=g).numpy()
    fast = fedac_batched.LocalSteps(linear, sparse, y, 3, 5, in_numpy).round(state, idx)
    slow = fedac_batched.LocalSteps(linear, general, y, 3, 5, in_numpy).round(state, idx)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def assert_loop_and_batch_agree(tmp_path, jobs) -> None:
    """Each job run by the per-client loop and by the batched engine: same status, divergence round and records."""
    batched = ProtocolBatches(jobs)
    for j in jobs:
        loop = run_job(j, "loop", JobDir(Store(tmp_path / "loop"), j.id))
        fast = run_job(j, "fast", JobDir(Store(tmp_path / "fast"), j.id), simulation_for=batched.simulation_for)
        assert (loop.status, loop.diverged and loop.diverged.at_round) == (
            fast.status,
            fast.diverged and fast.diverged.at_round,
        )
        assert_same_records(
            JobDir(Store(tmp_path / "loop"), j.id).read_metrics(), JobDir(Store(tmp_path / "fast"), j.id).read_metrics()
        )


def test_a_diverging_lr_diverges_at_the_same_round_in_both(tmp_path, in_numpy):
    """|1 − ηλ| = 99 blows the iterates up: both paths report status diverged at the same round,
    with the same records before it; the other lr of the batch is unaffected."""
    suite = shared_suite("fedavg", rounds=12, eval_every=1, lrs=[0.05, 1e4])
    jobs = expand(suite)
    assert_loop_and_batch_agree(tmp_path, jobs)
    assert [JobDir(Store(tmp_path / "fast"), j.id).read_summary().status for j in jobs] == ["finished", "diverged"]


@pytest.mark.parametrize("method,rounds", [("fedavg", 12), ("mbsgd", 30)])
def test_divergence_between_evaluations_is_found_at_the_same_round(tmp_path, method, rounds, in_numpy):
    """Rounds that are not evaluated skip the training loss's logarithms, yet still see it turn
    non-finite (K local steps, and one step per round): the diverging lr stops at the same round
    as in the per-client loop."""
    jobs = expand(shared_suite(method, rounds=rounds, eval_every=5, lrs=[0.05, 1e4]))
    assert_loop_and_batch_agree(tmp_path, jobs)
    assert JobDir(Store(tmp_path / "fast"), jobs[1].id).read_summary().diverged.at_round % 5, (
        "diverges between evaluations"
    )


@pytest.mark.parametrize("in_numpy", [False, True], ids=["numba", "numpy"])
def test_the_loss_stand_in_is_finite_exactly_when_the_loss_is(in_numpy):
    g = torch.Generator().manual_seed(1)
    x = (torch.rand(40, 7, generator=g) < 0.4).float().numpy()
    y = (torch.randint(0, 2, (40,), generator=g) * 2.0 - 1.0).numpy()
    jobs = [j.config for j in expand(shared_suite("fedavg", steps=4, clients=3, lrs=[0.05, 1e4]))]
    linear = fedac_batched.Batch.of(jobs, [fedac_batched.Outcome() for _ in jobs]).linear
    steps = fedac_batched.LocalSteps(linear, fedac_batched.SparseRows.of(x), y, 3, 4, in_numpy)
    state = (
        torch.randn(len(jobs), 2, 7, generator=g) * torch.tensor([1.0, 1e37])[:, None, None]
    ).numpy()  # the second job's scores overflow
    idx = torch.randint(0, 40, (3, 4, 2), generator=g).numpy()
    new, loss = steps.round(state, idx, with_loss=True)
    again, stand_in = steps.round(state, idx, with_loss=False)
    np.testing.assert_array_equal(new, again)
    assert np.isfinite(loss).tolist() == np.isfinite(stand_in).tolist() == [True, False]
    assert stand_in[0] == 0


def test_the_one_step_loss_stand_in_is_finite_exactly_when_the_loss_is():
    """MB-SGD's rounds between evaluations skip the loss's logarithms: the stand-in is finite for the
    jobs whose loss is, whether their scores are moderate, overflow the sum, or overflow themselves."""
    g = torch.Generator().manual_seed(2)
    x = (torch.rand(40, 7, generator=g) < 0.4).float().numpy()
    y = (torch.randint(0, 2, (40,), generator=g) * 2.0 - 1.0).numpy()
    jobs = [j.config for j in expand(shared_suite("mbsgd", lrs=[0.05, 0.1, 0.2, 0.5]))]
    linear = fedac_batched.Batch.of(jobs, [fedac_batched.Outcome() for _ in jobs]).linear
    scale = torch.tensor([1.0, 1e30, 1e37, 1e38])[:, None, None]  # moderate, large, sums overflow, scores overflow
    state = (torch.randn(len(jobs), 2, 7, generator=g) * scale).numpy()
    rows = torch.randint(0, 40, (60,), generator=g).numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        new, loss = fedac_batched._one_step(linear, state, x, y, rows, with_loss=True)
        again, stand_in = fedac_batched._one_step(linear, state, x, y, rows, with_loss=False)
    np.testing.assert_array_equal(new, again)
    assert np.isfinite(loss).tolist() == np.isfinite(stand_in).tolist() == [True, True, False, False]


def test_a_batched_job_stopped_early_resumes_to_the_numbers_of_a_straight_run(tmp_path, in_numpy):
    """Its checkpoint is the replay's (round, engine): the resumed job replays the rest."""
    jobs = expand(shared_suite("fedac1", lrs=[0.05]))
    (job,) = jobs
    straight = JobDir(Store(tmp_path / "straight"), job.id)
    run_job(job, "fast", straight, simulation_for=ProtocolBatches(jobs).simulation_for)
    d = JobDir(Store(tmp_path / "stopped"), job.id)
    assert (
        run_job(job, "fast", d, stop_after=2, simulation_for=ProtocolBatches(jobs).simulation_for).status == "stopped"
    )
    assert run_job(job, "fast", d, simulation_for=ProtocolBatches(jobs).simulation_for).status == "finished"
    assert measured(d.read_metrics()) == measured(straight.read_metrics())


def test_a_round_drawing_most_rows_computes_each_distinct_row_once_to_the_same_step(monkeypatch):
    """Above GATHER_BELOW of the rows drawn, the distinct rows (here each row twice, half of them labelled
    both ways) are scored once, weighted by their draws of each label: the step and loss of the copied-out rows,
    to float32 rounding; the loss stand-in finite exactly where the loss is, for moderate and overflowing scores."""
    g = torch.Generator().manual_seed(3)
    half = (torch.rand(20, 7, generator=g) < 0.4).float().numpy()
    x = np.concatenate([half, half])
    y = (torch.randint(0, 2, (40,), generator=g) * 2.0 - 1.0).numpy()
    rows = torch.randint(0, 40, (400,), generator=g).numpy()
    distinct = fedac_batched.DistinctRows.of(x, y)
    assert len(distinct.x) == len(np.unique(half, axis=0)) and (distinct.x[distinct.of_row] == x).all()
    jobs = [j.config for j in expand(shared_suite("mbacsgd", lrs=[0.05, 0.1, 0.2, 0.5]))]
    linear = fedac_batched.Batch.of(jobs, [fedac_batched.Outcome() for _ in jobs]).linear
    scale = torch.tensor([1.0, 3.0, 1e37, 1e38])[:, None, None]
    state = (torch.randn(len(jobs), 2, 7, generator=g) * scale).numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        for with_loss in (True, False):
            dense = fedac_batched._one_step(linear, state, x, y, rows, with_loss, lambda: distinct)
            monkeypatch.setattr(fedac_batched, "GATHER_BELOW", 1.01)  # every round copies its drawn rows out
            copied = fedac_batched._one_step(linear, state, x, y, rows, with_loss)
            monkeypatch.undo()
            for a, b in zip(dense, copied):
                assert np.isfinite(a).tolist() == np.isfinite(b).tolist() and np.isfinite(a[:2]).all()
                ok = np.isfinite(b)
                np.testing.assert_allclose(a[ok], b[ok], rtol=2e-5, atol=1e-6)
