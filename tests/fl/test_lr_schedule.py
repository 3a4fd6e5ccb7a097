"""The local learning rate, hand-computed: η_0 d^t per round, times d^epoch inside it with intra-round decay."""

from __future__ import annotations

import pytest

from benchmark.fl.base import LrSchedule, RoundInfo
from benchmark.job.settings import LocalTraining


def test_round_decay_only():
    schedule = LrSchedule(base=0.1, decay=0.5)
    assert schedule.round_lr(0) == 0.1
    assert schedule.round_lr(2) == pytest.approx(0.025)
    assert schedule.step_lr(2, epoch=3) == pytest.approx(0.025), (
        "without intra-round decay every step takes the round's lr"
    )


def test_intra_round_decay_multiplies_by_d_per_epoch():
    schedule = LrSchedule(base=0.1, decay=0.5, intra_round=True)
    assert schedule.step_lr(2, epoch=0) == pytest.approx(0.025)
    assert schedule.step_lr(2, epoch=1) == pytest.approx(0.0125)
    assert schedule.step_lr(0, epoch=2) == pytest.approx(0.025)


def test_round_info_reads_the_schedule_of_the_local_settings():
    local = LocalTraining(lr=0.2, lr_decay=0.9, intra_round_decay=True)
    rnd = RoundInfo(round=3, schedule=local.lr_schedule, num_clients=10, spec=None)
    assert (rnd.lr, rnd.base_lr) == (pytest.approx(0.2 * 0.9**3), 0.2)
    assert rnd.step_lr(epoch=2) == pytest.approx(0.2 * 0.9**5)
