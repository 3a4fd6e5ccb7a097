"""Small FedAc cells take their K local steps in numpy (numpy_round.py), large ones in the numba kernel:
both compute the same round, and the cost model sends the paper's cells where each is cheaper."""

from __future__ import annotations

import numpy as np
import pytest
from engine.test_fedac_batched import ALL, shared_suite

from benchmark.protocols.fedac import engine, numpy_round
from benchmark.protocols.fedac.numpy_round import prefers_numpy
from benchmark.protocols.fedac.replay import run_group
from benchmark.suite.expand import expand, load_jobs


def round_inputs(binary: bool, batch: int, fold: float, scale: float = 1.0, seed: int = 0, methods=ALL[:4]):
    """A round's kernel arguments for FedAc-I/II, vanilla FedAc and FedAvg side by side (7 jobs padded to 8 lanes)."""
    rng = np.random.default_rng(seed)
    x = (rng.random((50, 9)) < 0.3) * (1.0 if binary else rng.normal(size=(50, 9)))
    x = x.astype(np.float32)
    y = rng.choice([-1.0, 1.0], size=50).astype(np.float32)
    jobs = [j.config for j in expand(shared_suite(methods, steps=6, clients=3, batch=batch, lrs=[0.05, 0.5]))]
    linear = engine.Batch.of(jobs, [engine.Outcome() for _ in jobs]).linear
    old = engine.FOLD_CONDITION
    engine.FOLD_CONDITION = fold
    try:
        steps = engine.LocalSteps(linear, engine.SparseRows.of(x), y, 3, 6, in_numpy=True)
    finally:
        engine.FOLD_CONDITION = old
    assert steps.sparse.binary == binary and (steps.fold_after.any() == (fold < 2) or len(steps.moving) == 1)
    state = (rng.normal(size=(len(linear.v), 2, 9)) * scale).astype(np.float32)
    idx = rng.integers(0, 50, size=(3, 6, batch))
    if batch > 1:
        idx[:, :, 1] = idx[:, :, 0]  # a minibatch drawing one row twice: its columns are written twice in a step
    return steps, state, idx


def both(steps: engine.LocalSteps, state, idx, with_loss: bool):
    compiled = engine.LocalSteps.__new__(engine.LocalSteps)
    compiled.__dict__ = {**steps.__dict__, "in_numpy": False}
    return steps.round(state, idx, with_loss), compiled.round(state, idx, with_loss)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "valued"])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("fold", [50.0, 1.0001], ids=["no-folds", "folds"])
@pytest.mark.parametrize("with_loss", [True, False])
def test_numpy_round_computes_what_the_kernel_does(binary, batch, fold, with_loss):
    steps, state, idx = round_inputs(binary, batch, fold)
    (mean, loss), (mean_k, loss_k) = both(steps, state, idx, with_loss)
    np.testing.assert_allclose(mean, mean_k, rtol=2e-5, atol=1e-6)  # float32, summed in another order
    np.testing.assert_allclose(loss, loss_k, rtol=1e-5)
    if not with_loss:
        assert (loss == 0).all()


@pytest.mark.parametrize("in_numpy", [True, False], ids=["numpy", "numba"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "valued"])
def test_the_row_sgd_never_moves_is_left_out_of_its_steps_with_the_same_bits(in_numpy, binary):
    """FedAvg's first row of X keeps w₀ (no step reads or moves it): its steps run on the other row alone, and
    the round's state and loss are those of the steps on both rows, bit for bit; FedAc's rows both move."""
    steps, state, idx = round_inputs(binary, 1, 50.0, methods=["fedavg"])
    assert steps.moving == [1] and round_inputs(binary, 1, 50.0, methods=["fedac1"])[0].moving == [0, 1]
    steps.in_numpy = in_numpy
    both_rows = engine.LocalSteps.__new__(engine.LocalSteps)
    c, padded = 2, steps.reads.shape[-1]
    both_rows.__dict__ = {**steps.__dict__, "moving": [0, 1]}
    for name in ("reads", "enters"):  # the still row put back: zeros, as the schedule has it
        full = np.zeros((6, c, padded), dtype=np.float32)
        full[:, 1] = getattr(steps, name)[:, 0]
        setattr(both_rows, name, full)
    both_rows.folds = np.zeros((6, c, c, padded), dtype=np.float32)
    for with_loss in (True, False):
        (mean, loss), (mean_b, loss_b) = steps.round(state, idx, with_loss), both_rows.round(state, idx, with_loss)
        np.testing.assert_array_equal(mean, mean_b)
        np.testing.assert_array_equal(loss, loss_b)
        np.testing.assert_array_equal(mean[:, 0], state[:, 0])  # w₀ where it was


def test_numpy_rounds_loss_stand_in_is_finite_exactly_when_the_kernels_is():
    """Scores that overflow in one job make its loss (and stand-in) non-finite there only, as in the kernel."""
    steps, state, idx = round_inputs(True, 1, 50.0)
    state[1] = np.float32(3e38)  # any two of its coordinates summed overflow
    with np.errstate(over="ignore", invalid="ignore"):
        for with_loss in (True, False):
            (_, loss), (_, loss_k) = both(steps, state, idx, with_loss)
            assert np.isfinite(loss).tolist() == np.isfinite(loss_k).tolist()
            assert not np.isfinite(loss[1]) and np.isfinite(loss[0])


def cell(tmp_path, clients: int, steps: int, batch: int = 1):
    return load_jobs(cell_file(tmp_path, clients, steps, batch))[1][0].config


def cell_file(tmp_path, clients: int, steps: int, batch: int = 1):
    """A Figure-1 cell (T = 4,096 steps, 5 of the paper's 13 η) as a person writes it."""
    suite = tmp_path / f"cell-{clients}-{steps}-{batch}.yaml"
    suite.write_text(
        f"""\
name: cell
defaults:
  participation: {{mode: fixed, rate: 1.0}}
  model: {{name: binary_logistic, init: normal}}
  local: {{batch_size: {batch}, weight_decay: 0.001, clip_norm: null}}
datasets:
  - name: a9a
    root: {tmp_path}
    split: {{kind: shared}}
    rounds: {4096 // steps}
    local: {{steps: {steps}, epochs: null}}
methods: [fedac1]
grid:
  num_clients: [{clients}]
  local.lr: [0.001, 0.01, 0.1, 1.0, 10.0]
"""
    )
    return suite


def test_the_cost_model_sends_small_cells_to_numpy_and_large_ones_to_numba(tmp_path):
    """numba's start-up (~0.45 CPU-s) outweighs a whole small cell's steps: M ≤ 256 at T = 4,096 go to numpy;
    from M = 512 the kernel's speed repays it; a larger batch is more work per step, as more workers are."""
    assert [prefers_numpy(cell(tmp_path, m, 64)) for m in (2, 8, 64, 128, 256, 512, 1024)] == [True] * 5 + [False] * 2
    assert prefers_numpy(cell(tmp_path, 64, 1)) and not prefers_numpy(cell(tmp_path, 64, 64, batch=4))
    with numpy_round.pinned(True):  # plan --budget times a cut-down batch on its whole run's path
        assert prefers_numpy(cell(tmp_path, 1024, 64))
    assert not prefers_numpy(cell(tmp_path, 1024, 64))


@pytest.mark.parametrize("in_numpy", [True, False], ids=["numpy", "numba"])
def test_a_job_alone_computes_the_numbers_it_computes_in_its_grid(in_numpy):
    """The path is chosen by the job's own shape, not by how many jobs share its batch, and a job's lane is
    computed alone in either path: a job resumed on its own (or beside other jobs) takes the same steps."""
    configs = [j.config for j in expand(shared_suite("fedac1", lrs=[0.05, 0.2, 1.0, 0.01, 0.5]))]
    assert len({prefers_numpy(c) for c in configs}) == 1
    with numpy_round.pinned(in_numpy):
        grid, alone = run_group(configs)[2], run_group(configs[2:3])[0]
    np.testing.assert_array_equal(grid.final, alone.final)  # the trajectory, bit for bit
    assert [r["round"] for r in grid.records] == [r["round"] for r in alone.records] == [2, 4]
    for a, b in zip(grid.records, alone.records):
        # its evaluations are products over the batch's models (BLAS: another kernel for one model than for 5)
        for key in a.keys() - {"wall_s"}:
            assert a[key] == pytest.approx(b[key], rel=1e-6), key


class PathRecorder:
    """A protocol that computes nothing and records, per call, the batch it was handed and the path it would take."""

    def __init__(self):
        self.calls = []

    def run_batch(self, jobs):
        c = jobs[0].config
        self.calls.append((c.num_clients, c.rounds, prefers_numpy(c)))


def test_plan_budget_times_a_cut_down_batch_on_its_whole_runs_path(tmp_path):
    """cost.py times 1 round of at most 256 workers of an M = 1,024 cell, which alone would take numpy: it is
    pinned to numba, as the whole run; the run's start-up is timed with numba's load where any batch pays it."""
    from benchmark.protocols.fedac import cost

    large, small = (load_jobs(cell_file(tmp_path, m, 64))[1] for m in (1024, 64))
    recorder = PathRecorder()
    cost.time_shape(recorder, large)
    assert recorder.calls[0][:2] == (256, 1) and prefers_numpy(cost.shortened(large, 1, 256)[0].config)
    assert {in_numpy for *_, in_numpy in recorder.calls} == {False}
    recorder.calls.clear()
    cost.time_shape(recorder, small)
    assert {in_numpy for *_, in_numpy in recorder.calls} == {True}
    recorder.calls.clear()
    cost.batch_costs(recorder, [small, large], time_limit_s=0.0)
    assert recorder.calls[0] == (1, 1, False)  # the start-up: one worker, one round, numba's load included
    recorder.calls.clear()
    cost.batch_costs(recorder, [small], time_limit_s=0.0)
    assert recorder.calls[0] == (1, 1, True)  # no batch loads numba: neither does the start-up
