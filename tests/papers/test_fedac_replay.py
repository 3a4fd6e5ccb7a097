"""The FedAc authors' sample stream (`split.samples: authors_numpy`): their draws, and the batched
engine and the per-client loop on the same examples."""

from __future__ import annotations

import numpy as np
import pytest
from engine.test_fedac_batched import assert_same_records, run_both, shared_suite

from benchmark.cli import main
from benchmark.engine.fed_data import authors_positions


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


@pytest.mark.parametrize("method", ["fedac1", "fedac_vanilla", "fedavg", "mbacsgd"])
def test_batched_engine_equals_the_per_client_loop_on_the_authors_stream(tmp_path, method):
    """Both paths draw the same examples from the authors' stream (after the same w0): their records
    agree to float32 (the per-client loop computes in float32, the engine here in float64)."""
    suite = shared_suite(method, steps=3, clients=3, batch=2, model={"name": "binary_logistic", "init": "normal_numpy"})
    entry = suite.datasets[0]
    suite.datasets[0] = entry.model_copy(update={"split": entry.split.model_copy(update={"samples": "authors_numpy"})})
    jobs, loop, fast = run_both(tmp_path, suite)
    assert {j.config.dataset.split.samples for j in jobs} == {"authors_numpy"}
    for j in jobs:
        assert_same_records(loop[j.id], fast[j.id])


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
