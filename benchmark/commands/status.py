"""`fedbench status`: every job's state from the results on disk, as a table or JSON."""

from __future__ import annotations

from pathlib import Path

from benchmark.commands.output import note_unselected, out, print_json
from benchmark.store.layout import Store

# `status --json`'s layout, described by docs/schemas/status.schema.json: a change of a key's meaning
# or type is a new version.
STATUS_SCHEMA_VERSION = 1


def show_status(select, seeds, results_dir: Path, as_json: bool, every_job: bool = False) -> None:
    from benchmark.report.on_disk import jobs_with_seeds_on_disk
    from benchmark.report.status import failed_lines, grouped, status_line, status_records, status_table, suite_status
    from benchmark.run.stale import stale_line
    from benchmark.store.job_store import look_at_results

    store = Store(results_dir)  # built once, here
    look_at_results(store)  # status reads only: nothing under results_dir moves
    suite, jobs = jobs_with_seeds_on_disk(select, store, seeds)
    statuses = suite_status(jobs, store)
    if as_json:
        print_json({"schema_version": STATUS_SCHEMA_VERSION, "suite": suite.name, "jobs": status_records(statuses)})
    else:
        out.print(status_table(suite.name, statuses, every_job))
        for line in failed_lines(statuses) if grouped(statuses, every_job) else []:
            out.print(line, highlight=False, markup=False)
        out.print(status_line(statuses), highlight=False)
        if said := stale_line([s.stale for s in statuses]):
            out.print(said, highlight=False, markup=False)
    note_unselected(suite, jobs, store)
