"""Progress output: log lines when piped (started/finished, round, accuracy, rounds/s), a live
display with ETA and one line per finished job on a terminal, --quiet and --verbose."""

from __future__ import annotations

import io
import json
import math
import re

from fedtest import tiny_suite, write_suite
from rich.console import Console

from benchmark.cli import main
from benchmark.run.executor import run_jobs
from benchmark.run.progress import RichProgress
from benchmark.store.layout import Store
from benchmark.store.records import RoundRecord, summary_from_json
from benchmark.suite.expand import load_jobs


def _run(tmp_path, capsys, *flags) -> str:
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r"), *flags]) == 0
    return capsys.readouterr().err


def test_piped_run_logs_jobs_and_rounds(tmp_path, capsys):
    err = _run(tmp_path, capsys)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO "
    assert re.search(stamp + r"job 1/2 started: synthetic / FedAvg / seed 0 \(id \w{12}, 4 rounds\)", err)
    assert re.search(stamp + r"synthetic / FedAvg / seed 0: round 1/4, acc [\d.]+% \(ema [\d.]+%\)", err)  # the first
    assert re.search(
        stamp + r"job 2/2 synthetic / FedACG / seed 0: acc [\d.]+% \(ema [\d.]+%\) after 4 rounds in \d+s", err
    )
    assert "━" not in err  # no progress bar drawn into a log file
    assert "into the round" not in err  # rounds shorter than WITHIN_ROUND_S: no lines within them
    shown = [float(a) for a in re.findall(r"([\d.]+)%", err)]
    assert shown and all(0 <= a <= 100 for a in shown)  # the records' percentages, not scaled again


def test_accuracies_are_shown_as_percentages():
    from benchmark.run.progress import accuracy, outcome

    assert accuracy(19.36) == "19.36%" and accuracy(50, 25) == "50.00% (ema 25.00%)"
    done = '"status": "finished", "final_acc": 80.0, "final_ema_acc": 75.0, "rounds_completed": 3, "wall_time_s": 5'
    assert outcome(summary_from_json(json.loads(f"{{{done}}}"))) == "acc 80.00% (ema 75.00%) after 3 rounds in 5s"
    convex = summary_from_json(json.loads(f'{{{done}, "final_subopt": 0.0123}}'))
    assert outcome(convex) == "acc 80.00% (ema 75.00%), F − F* 0.0123 after 3 rounds in 5s"


def test_verbose_logs_every_round_with_speed_and_quiet_logs_nothing(tmp_path, capsys):
    err = _run(tmp_path, capsys, "--verbose")
    assert len(re.findall(r"FedACG / seed 0: round \d/4", err)) == 4
    assert re.search(r"round 4/4, acc [\d.]+% \(ema [\d.]+%\), [\d.e+]+ rounds/s, ETA 0s", err)
    (tmp_path / "again").mkdir()
    assert _run(tmp_path / "again", capsys, "--quiet") == ""


def test_terminal_display_shows_eta_and_a_line_per_finished_job(tmp_path):
    path = write_suite(tmp_path, tiny_suite())
    _, jobs = load_jobs(path)
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=150)
    summaries = run_jobs(jobs, "tiny", Store(tmp_path), progress=RichProgress(jobs, console))
    text = screen.getvalue()
    for job in jobs:
        acc = f"{summaries[job.id].final_acc:.2f}%"
        assert re.search(rf"done.*{job.method_label} / seed 0: acc {re.escape(acc)}.*{job.id}", text)
    assert "suite rounds" in text and "ETA" in text and "2/2 jobs" in text


def test_a_failed_job_is_a_warning_without_accuracy(tmp_path, capsys, monkeypatch):
    from benchmark.fl.registry import SERVER_RULES

    def explode(self, *args):
        raise RuntimeError("boom")

    monkeypatch.setattr(SERVER_RULES.get("acg"), "update", explode)
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r"), "-q"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"WARNING job 2/2 synthetic / FedACG / seed 0: failed: RuntimeError: boom \(id \w{12}\)", err)
    assert "FedAvg" not in err  # --quiet: the finished job is not logged


def test_jobs_replayed_from_a_batch_log_at_most_a_line_per_interval(tmp_path, capsys):
    from engine.test_fedac_batched import shared_suite

    path = write_suite(tmp_path, shared_suite(["fedac1", "fedavg"]).model_dump())  # 6 jobs, one batch each method
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "started" not in err  # at debug level
    finished = re.findall(r"job (\d)/6 fedac-batched|job (\d)/6 synthetic", err)
    assert 1 <= len(finished) <= 2 and "job 6/6 " in err  # the suite's last job always says so
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(tmp_path / "v"), "--verbose"]) == 0
    assert len(re.findall(r"job \d/6 \S", capsys.readouterr().err)) >= 6 + 6  # verbose: every start and end


def test_a_long_round_logs_how_far_it_has_come_when_piped(tmp_path, capsys, monkeypatch):
    from benchmark.engine import round_tally
    from benchmark.run import progress

    monkeypatch.setattr(progress, "WITHIN_ROUND_S", 0.0)  # every round counts as long, every line is due
    monkeypatch.setattr(round_tally, "STEP_REPORT_S", math.inf)  # a line per client, none within one
    err = _run(tmp_path, capsys)
    within = re.findall(
        r"INFO synthetic / (\w+) / seed 0: round (\d)/4, (\d)/(\d) clients trained \((\d+) %\), (\d+) local steps, "
        r"\d+s into the round",
        err,
    )
    for method in ("FedAvg", "FedACG"):  # 3 of 6 clients a round, one after another (auto: < 4 clients)
        lines = [(int(r), int(d), int(t), int(pct), int(steps)) for m, r, d, t, pct, steps in within if m == method]
        assert [(r, d, t, pct) for r, d, t, pct, _ in lines] == [
            (r, d, 3, round(100 * d / 3)) for r in range(1, 5) for d in (1, 2, 3)
        ]
        assert all(0 < a[4] < b[4] for a, b in zip(lines, lines[1:]) if a[0] == b[0])  # steps add up within a round


def test_within_round_lines_come_at_most_once_per_interval(tmp_path):
    import logging

    from benchmark.engine.round_tally import ClientsDone
    from benchmark.run.progress import LogProgress

    _, (job,) = load_jobs(write_suite(tmp_path, tiny_suite(methods=["fedavg"])))
    shown, lines = LogProgress([job], within_round=3600.0), []
    handler = logging.Handler()
    handler.emit = lines.append
    logging.getLogger("fedbench").addHandler(handler)
    try:
        for seconds in (10.0, 3600.0, 3700.0):  # too early; an hour in: a line; too soon after it
            shown.within_round(job, ClientsDone(2, 1, 4, 2, seconds))
    finally:
        logging.getLogger("fedbench").removeHandler(handler)
    assert [r.getMessage() for r in lines] == [
        "synthetic / FedAvg / seed 0: round 2/4, 1/4 clients trained (25 %), 2 local steps, 1h00m into the round"
    ]


def test_the_terminal_display_shows_a_long_rounds_clients(tmp_path, monkeypatch):
    from benchmark.engine.round_tally import ClientsDone
    from benchmark.run import progress

    path = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    _, (job,) = load_jobs(path)
    shown = RichProgress([job], Console(file=io.StringIO(), force_terminal=True, width=150))
    shown.job_started(job)
    status = lambda: shown.progress.tasks[shown.tasks[job.id][0]].fields["status"]  # noqa: E731
    shown.evaluated(job, RoundRecord.from_json({"round": 1, "test_acc": 50.0, "ema_acc": 40.0}))
    shown.within_round(job, ClientsDone(2, 1, 3, 4, progress.LIVE_CLIENTS_AFTER_S))
    assert status() == "acc 50.00% (ema 40.00%) · round 2: 1/3 clients trained (33 %)"
    shown.within_round(job, ClientsDone(3, 1, 3, 4, 0.0))  # a short round: the line goes back to the accuracy
    assert status() == "acc 50.00% (ema 40.00%)"


def test_ray_workers_relay_how_far_a_round_has_come_at_most_every_few_seconds():
    from benchmark.engine.round_tally import ClientsDone
    from benchmark.run.ray_worker import Relay

    sent = []
    relay = Relay(type("Queue", (), {"put": lambda self, message: sent.append(message)})(), "job")
    reports = [ClientsDone(1, done, 3, 10 * done, 60.0 + done) for done in (1, 2, 3)]
    for done in reports:  # within microseconds of each other, far less than RELAY_CLIENTS_S
        relay.on_clients(done)
    assert sent == [("clients", "job", reports[0])]


def test_periodic_lines_are_due_on_a_machine_booted_a_moment_ago(monkeypatch):
    """time.monotonic() counts from boot: at 0 the first line is due all the same, the next one an interval on."""
    from benchmark.run import progress

    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    lines = progress.Periodic(30.0)
    due = []
    for clock[0] in (0.0, 29.0, 30.0, 31.0):
        due.append(lines.due())
    assert due == [True, False, True, False]
