"""The progress display both executors share: rounds/s from measured times, log lines without a terminal."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from benchmark.run.progress import SuiteProgress, rounds_per_s
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite
from fedtest import tiny_suite


def test_rounds_per_s_is_measured_from_the_first_round_seen():
    assert rounds_per_s(None, 5, 10.0) is None  # the first round: nothing to measure from yet
    assert rounds_per_s((3, 100.0), 3, 100.0) is None
    assert rounds_per_s((3, 100.0), 13, 104.0) == 2.5  # a resumed job: 10 rounds in 4 s


def rec(r: int, acc: float) -> dict:
    return {"round": r, "test_acc": acc, "ema_acc": acc / 2}


def test_without_a_terminal_progress_is_logged_and_round_lines_are_throttled(caplog):
    fedavg, fedacg = expand(Suite(**tiny_suite()))  # 4 rounds each
    console = Console(file=io.StringIO())  # not a terminal
    with caplog.at_level(logging.INFO, logger="fedbench.progress"):
        with SuiteProgress(console, 2, log_every_s=10) as show:
            show.skipped(fedacg)
            show.started(fedavg, "node 10.0.0.2 abcd pid 7")
            show.round(fedavg.id, rec(1, 40.0), at=100.0)
            show.round(fedavg.id, rec(2, 50.0), at=101.0)  # within 10 s of the last line: not logged
            show.round(fedavg.id, rec(3, 60.0), at=111.0)
            show.round(fedavg.id, rec(4, 70.0), at=112.0)  # the last round is always logged
            show.ended(fedavg, {"status": "finished", "final_acc": 70.0})
    assert console.file.getvalue() == ""  # nothing drawn
    assert [r.getMessage() for r in caplog.records] == [
        f"job {fedacg.id} (synthetic / FedACG / seed 0) already finished: skipped [1/2]",
        f"job {fedavg.id} (synthetic / FedAvg / seed 0) started on node 10.0.0.2 abcd pid 7",
        f"job {fedavg.id} round 1/4 acc 40.00% (ema 20.00)",
        f"job {fedavg.id} round 3/4 acc 60.00% (ema 30.00)  0.18 r/s",
        f"job {fedavg.id} round 4/4 acc 70.00% (ema 35.00)  0.25 r/s",
        f"job {fedavg.id} (synthetic / FedAvg / seed 0) finished: acc 70.00% [2/2]",
    ]


def test_a_failed_job_is_a_warning(caplog):
    (job,) = expand(Suite(**tiny_suite(methods=["fedavg"])))
    with caplog.at_level(logging.INFO, logger="fedbench.progress"):
        with SuiteProgress(Console(file=io.StringIO()), 1) as show:
            show.started(job)
            show.ended(job, {"status": "failed", "error": "RuntimeError: boom"})
    assert caplog.records[-1].levelno == logging.WARNING
    assert caplog.records[-1].getMessage() == f"job {job.id} (synthetic / FedAvg / seed 0) failed: RuntimeError: boom [1/1]"
