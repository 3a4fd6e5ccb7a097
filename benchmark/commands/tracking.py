"""MLflow for the commands: open the store (a warning and no tracking when it cannot be), the suite
run's headline numbers, and the report files attached to it."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.commands.output import err_console

if TYPE_CHECKING:
    from benchmark.store.layout import Store


def open_tracker(
    suite_name: str, uri: str | None, results: Store, suite_file: Path | None = None, background: bool = False
):
    """The MLflow tracker; a store that cannot be opened is a warning, and the suite runs
    without tracking (the results on disk are the record). `background`: opened beside the jobs
    (run/tracking.py), so the first job does not wait for MLflow's import and the store."""
    from benchmark.run.tracking import MlflowTracker, NullTracker, unusable_store

    def warn(message: str) -> None:
        err_console.print(f"warning: {message}", markup=False)

    try:
        return MlflowTracker(suite_name, uri, results, suite_file, warn if background else None)
    except Exception as err:
        warn(unusable_store(uri, err))
        return NullTracker()


@contextlib.contextmanager
def closed_with_outcome(tracker):
    """The tracker's runs end FINISHED when the block does, KILLED on Ctrl-C, FAILED on an error."""
    status = "FAILED"
    try:
        yield
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        tracker.close(status)


def summarise(tracker, suite, jobs, store: Store) -> None:
    """The suite's MLflow run gets the tables' headline numbers (none to compute without tracking)."""
    if tracker.writes:
        from benchmark.report.entry_tables import headline_numbers

        tracker.summarise(suite, jobs, headline_numbers(suite, jobs, store))


def attach_report(suite_name: str, files: list[Path], uri: str | None) -> None:
    """The report files on the suite's MLflow parent run; a store without that run, or one that
    cannot be opened, is a note: the files on disk are the report."""
    from benchmark.run.tracking import attach_to_suite_run

    try:
        attached = attach_to_suite_run(suite_name, files, uri)
    except Exception as err:
        first = (str(err).splitlines() or [""])[0][:160]
        err_console.print(f"note: report not attached to MLflow ({type(err).__name__}: {first})", markup=False)
        return
    if not attached:
        err_console.print(
            f"note: no MLflow run of suite {suite_name!r} to attach the report to (--no-tracking skips this)",
            markup=False,
        )
