"""What `fedbench report` writes is a list of registered outputs: each figure, table file, file format
and document is a `ReportOutput`, one module of benchmark/report/outputs/ (or a plugin's), registered
with `OUTPUTS.register`; the registry imports that package when first read. `write_report` builds the
suite's tables once (`ReportInputs`) and hands them to every output, in `order`: figures first (the
documents embed them), the documents last. A protocol's own tables and figure are its report section
(protocol_sections.py), which the outputs receive as `sections`."""

from __future__ import annotations

import datetime
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from benchmark.errors import UserError
from benchmark.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

    from benchmark.report.entry_tables import EntryTable
    from benchmark.report.figures import Figure
    from benchmark.report.protocol_sections import Section
    from benchmark.store.layout import Store, SuiteView
    from benchmark.suite.expand import Job
    from benchmark.suite.schema import Suite


@dataclass
class ReportInputs:
    """Everything an output may read, computed once per report."""

    suite: Suite
    jobs: list[Job]
    summaries: dict[str, dict]  # job id -> summary, of the jobs that have one
    store: Store  # the results folder: the jobs' records
    view: SuiteView  # where the report goes: view.report, view.tables, view.figures
    runs: pd.DataFrame  # the jobs' frame (frames.jobs_frame)
    tables: list[EntryTable]  # per dataset entry its main table (each with its sensitivity table, if any)
    sections: list[Section]  # the protocols' sections, for the jobs they claim
    columns: tuple[str, ...]  # --columns: the .tex tables' columns, as the terminal's (--wide: all of them)
    wide: bool
    figure_width: float  # inches (figure_output.py)
    figures: list[Figure] = field(default_factory=list)  # the report's figures: a figure output adds its own
    generated: str = field(default_factory=lambda: datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"))

    @property
    def protocol_tables(self) -> list[EntryTable]:
        return [t for s in self.sections for t in s.tables]

    @property
    def every_table(self) -> list[EntryTable]:
        """Each entry's table and its sensitivity table, then the protocols' tables: what has a file each."""
        return [x for t in self.tables for x in (t, t.sensitivity) if x is not None] + self.protocol_tables


class ReportOutput(ABC):
    name: ClassVar[str]
    # written in this order: figures (< 20) before the data files, the documents that embed them (90, 91) last
    order: ClassVar[int] = 50

    @abstractmethod
    def write(self, report: ReportInputs) -> list[Path]:
        """Write this output under report.view; the paths written."""


OUTPUTS: Registry[ReportOutput] = Registry("report output", "benchmark.report.outputs")
register_report_output = OUTPUTS.register  # a plugin's: @register_report_output on its ReportOutput class


def write_outputs(report: ReportInputs) -> list[Path]:
    """Every output written, in order; the paths written. A plugin's output that fails is its author's to fix: a
    UserError naming it (fedbench's own fail with their traceback, an OSError reaches the command, which says
    where)."""
    written = []
    for output in every_output():
        try:
            written += output.write(report)
        except OSError:
            raise
        except Exception as err:
            module = type(output).__module__
            if module.startswith("benchmark."):
                raise
            raise UserError(
                f"report output {output.name!r} ({module}) failed: {type(err).__name__}: {err}; the outputs before it "
                "are written, those after it are not: fix or remove it"
            ) from err
    return written


def every_output() -> list[ReportOutput]:
    """An instance of every registered output, in `order` (then by name)."""
    return [OUTPUTS.get(name)() for name in sorted(OUTPUTS.names(), key=lambda n: (OUTPUTS.get(n).order, n))]
