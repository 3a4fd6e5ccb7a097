"""What a running suite tells its user. On a terminal: a live display (a bar over the suite's
rounds with its ETA, one per running job with its accuracy and ETA) and a line per finished
job. Otherwise (CI logs, `> run.log`): plain lines through Python logging (logger "fedbench"):
job started/finished, every `interval` seconds the round, accuracy, rounds/s and ETA, and, while
a round is still training after WITHIN_ROUND_S, a line per WITHIN_ROUND_S with its clients and
local steps done (engine/round_tally.py).
`--quiet` keeps warnings only; `--verbose` logs every evaluated round."""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from benchmark.store.records import FailedSummary, JobSummary, Outcome, RoundRecord, measured

if TYPE_CHECKING:  # for annotations only: the display does not import the engine
    from benchmark.engine.round_tally import ClientsDone

log = logging.getLogger("fedbench")
QUIET, NORMAL, VERBOSE = -1, 0, 1
# log lines: a round still training after this many seconds gets a line, then one per this many seconds
# (a Table-1 round on a 2-core CPU trains for 10 minutes); shorter rounds print nothing extra
WITHIN_ROUND_S = 60.0
LIVE_CLIENTS_AFTER_S = 2.0  # the terminal display: a job's line shows its round's clients once it ran this long


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def accuracy(acc: float, ema: float | None = None) -> str:
    """The records hold accuracies as percentages already (the engines multiply by 100), as the report shows them."""
    text = f"{acc:.2f}%"
    return text if ema is None else f"{text} (ema {ema:.2f}%)"


def job_name(job) -> str:
    return f"{job.dataset_label} / {job.method_label} / seed {job.config.seed}"


def clients_done(done: ClientsDone) -> str:
    return f"{done.done}/{done.total} clients trained ({round(100 * done.done / done.total)} %)"


def outcome(summary: JobSummary | FailedSummary) -> str:
    """How a job ended, in words: a failed or diverged job shows no accuracy."""
    status, ran = summary.status, measured(summary)
    if status == "finished":
        subopt = ran.final_subopt
        return (
            f"acc {accuracy(ran.final_acc, ran.final_ema_acc)}"
            + (f", F − F* {subopt:.3g}" if subopt is not None else "")
            + f" after {ran.rounds_completed} rounds in {duration(ran.wall_time_s)}"
        )
    if status == "stopped":
        return f"stopped at round {ran.rounds_completed} (resumable)"
    return f"{status}: {summary.error or ''}".rstrip(": ")


class Periodic:
    """A kind of log line that is due at most once per `interval` seconds."""

    def __init__(self, interval: float):
        # None, not 0.0: time.monotonic() counts from boot on Linux, so a "last written at 0" made nothing
        # due in a freshly booted machine's first `interval` seconds
        self.interval, self.last = interval, None

    def due(self) -> bool:
        """Whether it is due now (always, the first time); if so, it counts as written."""
        now = time.monotonic()
        if self.last is not None and now - self.last < self.interval:
            return False
        self.last = now
        return True


class LogProgress:
    """Plain log lines; also the quiet mode (failures are warnings, the rest info/debug). Jobs replayed
    from a batch computed at once (a protocol's batch, run/protocols.py: hundreds per minute) log their start at
    debug level and their end at most once per `interval`, unless they failed or the suite is done."""

    def __init__(self, jobs: list, verbosity: int = NORMAL, interval: float = 30.0, within_round: float | None = None):
        self.total_jobs, self.verbosity = len(jobs), verbosity
        self.done_jobs = 0
        self.started: dict[str, tuple[float, int | None]] = {}  # job id -> (start time, first round seen)
        self.replayed: set[str] = set()
        self.round_lines, self.replay_lines = Periodic(interval), Periodic(interval)
        self.within_round_s = WITHIN_ROUND_S if within_round is None else within_round
        self.client_lines: dict[str, Periodic] = {}  # job id -> its within-round lines (jobs may run side by side)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None: ...

    def skipped(self, job, summary: JobSummary | Outcome) -> None:
        self.done_jobs += 1
        log.debug("job %s (%s) already finished: skipped", job.id, job_name(job))

    def job_started(self, job, replayed: bool = False) -> None:
        self.started[job.id] = (time.monotonic(), None)
        if replayed:
            self.replayed.add(job.id)
        log.log(
            logging.DEBUG if replayed else logging.INFO,
            "job %d/%d started: %s (id %s, %d rounds)",
            self.done_jobs + 1,
            self.total_jobs,
            job_name(job),
            job.id,
            job.config.rounds,
        )

    def rate(self, job, rec: RoundRecord) -> float | None:
        """Rounds per second since the first evaluation this process saw (resumes start late)."""
        t0, first = self.started[job.id]
        if first is None:
            self.started[job.id] = (time.monotonic(), rec.round)
            return None
        elapsed = time.monotonic() - t0
        return (rec.round - first) / elapsed if elapsed > 0 and rec.round > first else None

    def evaluated(self, job, rec: RoundRecord) -> None:
        rate = self.rate(job, rec)
        if self.verbosity < VERBOSE and not self.round_lines.due():
            return
        speed = f", {rate:.3g} rounds/s, ETA {duration((job.config.rounds - rec.round) / rate)}" if rate else ""
        log.info(
            "%s: round %d/%d, acc %s%s",
            job_name(job),
            rec.round,
            job.config.rounds,
            accuracy(rec.test_acc, rec.ema_acc),
            speed,
        )

    def within_round(self, job, done: ClientsDone) -> None:
        """Whenever a round reports how far it has come: a line once it has trained `within_round_s`."""
        if done.seconds < self.within_round_s:
            return
        if not self.client_lines.setdefault(job.id, Periodic(self.within_round_s)).due():
            return
        log.info(
            "%s: round %d/%d, %s, %d local steps, %s into the round",
            job_name(job),
            done.round,
            job.config.rounds,
            clients_done(done),
            done.steps,
            duration(done.seconds),
        )

    def job_finished(self, job, summary: JobSummary | FailedSummary) -> None:
        self.done_jobs += 1
        self.client_lines.pop(job.id, None)
        status = summary.status
        level = logging.INFO if status in ("finished", "stopped") else logging.WARNING
        if job.id in self.replayed and status != "failed":  # a diverged η of a batched grid is a result
            last = self.done_jobs == self.total_jobs
            level = logging.INFO if self.verbosity >= VERBOSE or last or self.replay_lines.due() else logging.DEBUG
        log.log(
            level, "job %d/%d %s: %s (id %s)", self.done_jobs, self.total_jobs, job_name(job), outcome(summary), job.id
        )


class RichProgress(LogProgress):
    """The terminal display; finished jobs are printed above it, one line each."""

    def __init__(self, jobs: list, console: Console, verbosity: int = NORMAL):
        # here: a run that logs (piped, -q) never builds the live display (rich.progress, rich.live: 3 ms)
        from rich import progress as bars

        super().__init__(jobs, verbosity)
        self.console = console
        self.progress = bars.Progress(
            bars.TextColumn("[bold]{task.description}"),
            bars.BarColumn(),
            bars.MofNCompleteColumn(),
            bars.TextColumn("{task.fields[status]}"),
            bars.TimeElapsedColumn(),
            bars.TextColumn("ETA"),
            bars.TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.suite = self.progress.add_task("suite rounds", total=sum(j.config.rounds for j in jobs), status="")
        self.tasks: dict[str, tuple[int, int]] = {}  # job id -> (task, last round counted)
        self.accuracy: dict[str, str] = {}  # job id -> its status text at its last evaluated round
        self.live: set[str] = set()  # jobs whose line shows their round's clients

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def _suite_status(self) -> None:
        self.progress.update(self.suite, status=f"{self.done_jobs}/{self.total_jobs} jobs")

    def skipped(self, job, summary: JobSummary | Outcome) -> None:
        super().skipped(job, summary)
        self.progress.advance(self.suite, job.config.rounds)
        self._suite_status()

    def job_started(self, job, replayed: bool = False) -> None:
        self.tasks[job.id] = (self.progress.add_task(escape(job_name(job)[:60]), total=job.config.rounds, status=""), 0)

    def evaluated(self, job, rec: RoundRecord) -> None:
        task, counted = self.tasks[job.id]
        self.accuracy[job.id] = f"acc {accuracy(rec.test_acc, rec.ema_acc)}"
        self.progress.update(task, completed=rec.round, status=self.accuracy[job.id])
        self.progress.advance(self.suite, rec.round - counted)
        self.tasks[job.id] = (task, rec.round)
        if self.verbosity >= VERBOSE:
            self.console.print(
                f"  {job_name(job)}: round {rec.round}, acc {accuracy(rec.test_acc)}",
                markup=False,
                highlight=False,
            )

    def within_round(self, job, done: ClientsDone) -> None:
        """A round that has run LIVE_CLIENTS_AFTER_S shows its clients on the job's line, until a short one comes."""
        live = done.seconds >= LIVE_CLIENTS_AFTER_S
        if job.id not in self.tasks or not (live or job.id in self.live):
            return
        status = self.accuracy.get(job.id, "")
        if live:
            self.live.add(job.id)
            where = f"round {done.round}: {clients_done(done)}"
            status = f"{status} · {where}" if status else where
        else:
            self.live.discard(job.id)
        self.progress.update(self.tasks[job.id][0], status=status)

    def job_finished(self, job, summary: JobSummary | FailedSummary) -> None:
        self.done_jobs += 1
        self.accuracy.pop(job.id, None)
        self.live.discard(job.id)
        task, counted = self.tasks.pop(job.id, (None, 0))
        if task is not None:
            self.progress.update(task, visible=False)
        self.progress.advance(self.suite, job.config.rounds - counted)  # a failed job's rounds will not come
        self._suite_status()
        status = summary.status
        mark = "[green]done[/green]" if status in ("finished", "stopped") else f"[red]{escape(str(status))}[/red]"
        self.console.print(
            f"{mark} {escape(job_name(job))}: {escape(outcome(summary))} [dim]{job.id}[/dim]", highlight=False
        )


def reporter(jobs: list, console: Console, verbosity: int = NORMAL):
    """The display for this output: live on a terminal, log lines otherwise or when quiet."""
    if console.is_terminal and verbosity > QUIET:
        return RichProgress(jobs, console, verbosity)
    return LogProgress(jobs, verbosity)


class StderrHandler(logging.StreamHandler):
    """Writes to the current sys.stderr (which tests and wrappers may swap), not the one at setup."""

    stream = property(lambda self: sys.stderr, lambda self, value: None)


def configure_logging(verbosity: int) -> None:
    """Plain timestamped lines on stderr for the "fedbench" logger (once per process)."""
    log.setLevel({QUIET: logging.WARNING, NORMAL: logging.INFO, VERBOSE: logging.DEBUG}[verbosity])
    if not any(isinstance(h, StderrHandler) for h in log.handlers):
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        log.addHandler(handler)
        log.propagate = False
