"""Where everything lives under a results folder, in one place: `Store` is the results root (the job store
`jobs/` and one view per suite), `SuiteView` a suite's folder `<suite>/` and what hangs off it (its lock,
its report with the report's tables and figures). Code elsewhere asks these for a path and builds none.
The layout itself: docs/design.md (Results layout)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmark.errors import UserError

# the job store: one folder per job id, whichever suites expand to it (store/job_store.py)
STORE = "jobs"


@dataclass(frozen=True)
class SuiteView:
    """`results/<suite>/`: one link per job the suite ran or reused, its lock and its report."""

    path: Path

    name = property(lambda self: self.path.name)
    locks = property(lambda self: self.path / ".locks")  # its own; in the layout before the store, its jobs' too
    lock = property(lambda self: self.locks / "suite.lock")  # held shared by each process running the suite
    report = property(lambda self: self.path / "report")  # report.md, report.html, report.json, runs.csv
    tables = property(lambda self: self.report / "tables")
    figures = property(lambda self: self.report / "figures")
    mlflow_mark = property(lambda self: self.path / ".mlflow-mirrored")  # run/mlflow_in_sync.py


@dataclass(frozen=True)
class Store:
    """A results root: `jobs/<job-id>/` (the job store) and `<suite>/` (each suite's view)."""

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    jobs = property(lambda self: self.root / STORE)
    locks = property(lambda self: self.jobs / ".locks")  # one lock per job id, and the migration's

    def job(self, job_id: str) -> Path:
        return self.jobs / job_id

    def job_lock(self, job_id: str) -> Path:
        return self.locks / f"{job_id}.lock"

    def suite(self, name: str) -> SuiteView:
        if name == STORE:
            raise UserError(f"a suite cannot be named {STORE!r}: results/{STORE}/ is the job store; rename the suite")
        return SuiteView(self.root / name)
