"""The FedAc engine's F(w) − F* (engine/convex.py BinaryArrays): summed over distinct rows with one softplus a
row, it is the plain formula's value (mean over every training row of log(1 + e^{−yz}) + λ/2 ‖w‖² − F*) to
float64 rounding; what the engine finds once per data (F*, F's distinct rows, the local steps' sparse rows) is
cached under the loaded data's fingerprint, so another dataset never reads it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from engine.test_fedac_fixed_costs import write_a9a

from benchmark.data.a9a import A9aParams, decoded_a9a
from benchmark.engine.convex import BinaryArrays, BinaryLogistic
from benchmark.protocols.fedac.engine import PER_DATASET
from benchmark.protocols.fedac.replay import run_group
from benchmark.suite.expand import load_jobs

LAM = 1e-3


def plain(x: np.ndarray, y01: np.ndarray, ws: np.ndarray, f_star: float) -> np.ndarray:
    """F(w) − F* row by row, as written: every training row, its own softplus."""
    sign = 2.0 * y01 - 1.0
    z = x.astype(np.float64) @ ws.T.astype(np.float64)
    return np.logaddexp(0, -sign[:, None] * z).mean(0) + 0.5 * LAM * (ws.astype(np.float64) ** 2).sum(1) - f_star


def test_suboptimality_by_hand_with_a_row_under_both_labels():
    """Rows 0 and 1 are one row labelled +1 and −1, row 2 another; z = ±40 too, where e^z overflows nothing."""
    x = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    y = np.array([1, 0, 1])
    objective = BinaryArrays.of(x, y, LAM)
    assert objective.x_t.shape == (2, 2) and sorted(objective.count.tolist()) == [1.0, 2.0]
    f_star = BinaryLogistic.of(torch.from_numpy(x), torch.from_numpy(y), 2, LAM).solve()[1]
    assert objective.f_star == pytest.approx(f_star, abs=1e-15)
    for a, b in [(0.5, -1.5), (40.0, -40.0), (-40.0, 3.0)]:
        by_hand = (math.log1p(math.exp(-a)) + math.log1p(math.exp(a)) + math.log1p(math.exp(-b))) / 3
        expected = by_hand + 0.5 * LAM * (a * a + b * b) - f_star
        (got,) = objective.suboptimalities(np.array([[a, b]]))
        assert got == pytest.approx(expected, rel=1e-13, abs=1e-15)


def test_suboptimality_agrees_with_the_plain_formula_on_real_a9a(data_root):
    a = decoded_a9a(A9aParams(), data_root)
    x, y = a["train_x"], a["train_y"]
    objective = BinaryArrays.of(x, y, LAM)
    assert objective.x_t.shape[1] < len(x) and objective.count.sum() == len(x)
    w_star = BinaryLogistic.of(torch.from_numpy(x), torch.from_numpy(y), 2, LAM).optimum[0].numpy()
    rng = np.random.default_rng(0)
    # near the optimum (F − F* down to ~1e-9), around it, and far (|z| up to ~50)
    ws = np.stack([w_star + scale * rng.standard_normal(len(w_star)) for scale in (1e-4, 1e-2, 0.1, 1, 4)])
    got, expected = objective.suboptimalities(ws), plain(x, y, ws, objective.f_star)
    values = expected + objective.f_star  # F itself: the scale of both sums' rounding
    assert (expected > 0).all()
    assert np.abs(got - expected).max() <= 1e-12 * values.max()


def a9a_jobs(root: Path, tmp_path: Path):
    suite = tmp_path / f"suite-{root.name}.yaml"
    suite.write_text(
        f"""\
name: fstar-key
defaults:
  rounds: 2
  participation: {{mode: fixed, rate: 1.0}}
  model: {{name: binary_logistic, init: normal}}
  local: {{steps: 2, batch_size: 1, weight_decay: {LAM}, clip_norm: null}}
  suboptimality: true
datasets:
  - name: a9a
    root: {root}
    split: {{kind: shared}}
methods: [fedac1]
grid:
  num_clients: [2]
  local.lr: [0.1]
"""
    )
    return [job.config for job in load_jobs(suite)[1]]


def test_each_dataset_reads_its_own_f_star(tmp_path):
    """Two a9a folders of different rows, run in turn (and the first again): each run's F* is its own data's."""
    roots = [tmp_path / "one", tmp_path / "two"]
    for seed, root in enumerate(roots):
        write_a9a(root, 60, seed)
    solved = []
    for root in [*roots, roots[0]]:
        configs = a9a_jobs(root, tmp_path)
        run_group(configs)
        objective = PER_DATASET.values[("objective", LAM)]
        a = decoded_a9a(A9aParams(), root)
        f_star = BinaryLogistic.of(torch.from_numpy(a["train_x"]), torch.from_numpy(a["train_y"]), 2, LAM).solve()[1]
        assert objective.f_star == pytest.approx(f_star, abs=1e-14)
        ws = np.random.default_rng(1).standard_normal((3, 123))  # and F over its own rows, read back from the cache
        expected = plain(a["train_x"], a["train_y"], ws, objective.f_star)
        np.testing.assert_allclose(objective.suboptimalities(ws), expected, rtol=1e-12)
        solved.append(f_star)
    assert solved[0] != solved[1] and solved[0] == solved[2]


def test_sparse_rows_read_back_are_the_ones_built_and_each_datas_own(tmp_path):
    """The sparse rows the local steps read, cached per data: the same arrays as built, for each dataset its own."""
    from benchmark.data.cache import cache_dir
    from benchmark.engine.sources import load_arrays
    from benchmark.protocols.fedac.engine import SparseRows

    roots = [tmp_path / "one", tmp_path / "two"]
    for seed, root in enumerate(roots):
        write_a9a(root, 40, seed + 10)
    for root in [*roots, roots[0]]:
        job = a9a_jobs(root, tmp_path)[0]
        x = np.asarray(load_arrays(job).train_x)
        built, (written, read) = SparseRows.of(x), (SparseRows.cached(x, job) for _ in range(2))
        for rows in (written, read):
            np.testing.assert_array_equal(rows.cols, built.cols)
            np.testing.assert_array_equal(rows.vals, built.vals)
            assert (rows.width, rows.binary) == (built.width, built.binary) == (124, True)
    assert len(list((cache_dir() / "arrays").glob("sparse_rows-*.npz"))) >= 2
