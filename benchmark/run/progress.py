"""What both executors show while jobs run: on a terminal a live display (jobs done, and per
running job its round bar, accuracy and rounds/s) with a line per finished job; without one,
log lines through Python logging (job started / round / finished), a round line per job at
most every `log_every_s`.

Executors report events (`started`, `round`, `ended`, `skipped`, `note`); where a job runs
(this process or a Ray node) does not matter here.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchmark.run.status import DIVERGED, FAILED

log = logging.getLogger("fedbench.progress")


def job_label(job) -> str:
    return f"{job.dataset_label} / {job.method_label} / seed {job.config.seed}"


@dataclass
class _Running:
    label: str
    total: int
    task: int | None = None
    first: tuple[int, float] | None = None  # (round, time) of the first round seen: rounds/s is measured from it
    last_logged: float = field(default=float("-inf"))


def rounds_per_s(first: tuple[int, float] | None, rnd: int, at: float) -> float | None:
    if first is None or at <= first[1] or rnd <= first[0]:
        return None
    return (rnd - first[0]) / (at - first[1])


def round_text(rec: dict, rate: float | None) -> str:
    text = f"acc {rec['test_acc']:.2f}% (ema {rec['ema_acc']:.2f})"
    return text + (f"  {rate:.2f} r/s" if rate is not None else "")


class SuiteProgress:
    """Context manager: `with SuiteProgress(console, len(jobs)) as show: show.started(job) ...`."""

    def __init__(self, console: Console, total_jobs: int, title: str = "jobs", log_every_s: float = 30.0):
        self.console, self.live = console, console.is_terminal
        self.log_every_s = log_every_s
        self.total, self.done = total_jobs, 0
        self.running: dict[str, _Running] = {}
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console)
        self.bar = self.progress.add_task(title, total=total_jobs, status="") if self.live else None

    def __enter__(self) -> SuiteProgress:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self.progress.stop()

    def _count_done(self) -> None:
        self.done += 1
        if self.live:
            self.progress.advance(self.bar)

    def _log(self, message: str) -> None:
        """A log line; on a terminal the live display says it already (a log line would tear it)."""
        if not self.live:
            log.info("%s", message)

    def skipped(self, job) -> None:
        self._count_done()
        self._log(f"job {job.id} ({job_label(job)}) already finished: skipped [{self.done}/{self.total}]")

    def started(self, job, where: str = "") -> None:
        """The job runs (again: a resubmitted Ray job restarts its rounds/s)."""
        run = self.running.get(job.id) or _Running(job_label(job), job.config.rounds)
        run.first = None
        self.running[job.id] = run
        if self.live and run.task is None:
            run.task = self.progress.add_task(escape(run.label[:60]), total=run.total, status=escape(where))
        self._log(f"job {job.id} ({run.label}) started" + (f" on {where}" if where else ""))

    def round(self, job_id: str, rec: dict, at: float | None = None) -> None:
        """An evaluated round; `at` is when it was measured (default now)."""
        run, at = self.running[job_id], time.time() if at is None else at
        rate = rounds_per_s(run.first, rec["round"], at)
        if run.first is None:
            run.first = (rec["round"], at)
        text = round_text(rec, rate)
        if self.live:
            self.progress.update(run.task, completed=rec["round"], status=escape(text))
        elif at - run.last_logged >= self.log_every_s or rec["round"] == run.total:
            run.last_logged = at
            log.info("job %s round %d/%d %s", job_id, rec["round"], run.total, text)

    def note(self, message: str) -> None:
        """Something the user must see (a lost worker, a failed or diverged job): printed on a terminal, else logged."""
        if self.live:
            self.console.print(message, highlight=False, markup=False)
        else:
            log.warning("%s", message)

    def ended(self, job, summary: dict) -> None:
        run = self.running.pop(job.id, None)
        if self.live and run is not None and run.task is not None:
            self.progress.update(run.task, visible=False)
        self._count_done()
        status = summary.get("status")
        detail = f"acc {summary['final_acc']:.2f}%" if summary.get("final_acc") is not None else summary.get("error", "")
        line = f"job {job.id} ({job_label(job)}) {status}: {detail} [{self.done}/{self.total}]"
        if status in (FAILED, DIVERGED):
            self.note(line)
        elif self.live:
            self.console.print(line, highlight=False, markup=False)
        else:
            log.info("%s", line)
