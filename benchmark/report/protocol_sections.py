"""The report sections of job protocols (run/protocols.py): a protocol's jobs are reported by its own
tables, note and figure instead of the entry tables; the report shows them after those.

A protocol's package registers a `ProtocolSection` with `SECTIONS.register`; the registry imports
benchmark.protocols when first read. A section's tables are EntryTables whose `kind` is the
protocol's name (a row per method, each cell its own text).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from benchmark.registry import Registry
from benchmark.store.layout import Store, SuiteView

if TYPE_CHECKING:
    from benchmark.report.entry_tables import EntryTable
    from benchmark.suite.expand import Job
    from benchmark.suite.schema import Suite


@dataclass
class Section:
    """What the report shows for a protocol's jobs."""

    tables: list[EntryTable]
    note: str  # under the tables: what they leave out, how they compare
    draw: Callable[[Path], Path] | None = None  # writes the figure (PNG and PDF) at a path; None: nothing to draw


class ProtocolSection(ABC):
    name: ClassVar[str]  # the protocol's
    figure_name: ClassVar[str]  # its figure's file under report/figures/ (a PDF beside it)
    figure_caption: ClassVar[str]  # printed by the report: the figure has no title of its own

    @abstractmethod
    def claims(self, job: Job) -> bool:
        """Whether this section reports `job` (the entry tables then leave it out)."""

    @abstractmethod
    def build(self, suite: Suite, jobs: list[Job], summaries: dict[str, dict]) -> Section:
        """The section for `jobs` (every one claimed) from their summaries."""


SECTIONS: Registry[ProtocolSection] = Registry("report section", "benchmark.protocols")


def every_section() -> list[ProtocolSection]:
    return [SECTIONS.get(name) for name in SECTIONS.names()]


def figure_path(section: ProtocolSection, view: SuiteView) -> Path:
    """Where a section's figure goes: beside the report's other figures."""
    return view.figures / section.figure_name


def split(jobs: list[Job]) -> tuple[list[tuple[ProtocolSection, list[Job]]], list[Job]]:
    """(each section with the jobs it claims, where it claims any; the jobs none claims)."""
    claimed, rest = {}, []
    sections = every_section()
    for job in jobs:
        owner = next((s for s in sections if s.claims(job)), None)
        if owner is None:
            rest.append(job)
        else:
            claimed.setdefault(owner.name, (owner, []))[1].append(job)
    return list(claimed.values()), rest


def unclaimed(jobs: list[Job]) -> list[Job]:
    return split(jobs)[1]


def build_sections(
    suite: Suite, jobs: list[Job], summaries: dict[str, dict]
) -> tuple[list[tuple[ProtocolSection, Section]], list[Job]]:
    """The sections of the protocols whose jobs are among `jobs`, and the jobs none claims."""
    claimed, rest = split(jobs)
    return [
        (section, _marked(section.build(suite, mine, summaries), mine, summaries)) for section, mine in claimed
    ], rest


def _marked(built: Section, jobs: list[Job], summaries: dict[str, dict]) -> Section:
    """A section whose runs include stale ones (kept by `run --keep-stale`) says how many, under its tables."""
    from benchmark.run.stale import is_stale

    if stale := sum(is_stale(job, summaries.get(job.id)) for job in jobs):
        built.note += f"\nstale: {stale} of these {len(jobs)} runs ran on code that changed since (kept by --keep-stale; `fedbench run` trains them again)"
    return built


def print_sections(
    console, suite: Suite, jobs: list[Job], summaries: dict[str, dict], store: Store, draw: bool = True
) -> list[Job]:
    """Print each protocol's tables and note, and write its figure (`draw`: `report` does, `run` leaves
    matplotlib unimported); returns the jobs none claims."""
    built, rest = build_sections(suite, jobs, summaries)
    for section, shown in built:
        for table in shown.tables:
            console.print(rich_table(table))
        console.print(shown.note)
        if draw and shown.draw:
            console.print(f"figure: {shown.draw(figure_path(section, store.suite(suite.name)))}")
    return rest


def draw_sections(suite: Suite, jobs: list[Job], summaries: dict[str, dict], store: Store) -> None:
    """Write each protocol's figure without printing its section (`report --json`)."""
    for section, shown in build_sections(suite, jobs, summaries)[0]:
        if shown.draw:
            shown.draw(figure_path(section, store.suite(suite.name)))


def rich_table(t: EntryTable):
    """A section's table for the terminal."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(t.title))
    table.add_column("method")
    for col in t.columns:
        table.add_column(col.header, justify="right")
    for row in t.rows:
        table.add_row(row.method, *(row.cells[c.key].text for c in t.columns))
    return table
