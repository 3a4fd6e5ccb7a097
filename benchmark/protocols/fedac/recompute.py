"""The comparison with the authors' runs recomputed from a record's runs.csv (a report's one row per
job) instead of a results store, through the report's own code:

    python -m benchmark.protocols.fedac.recompute suites/papers/fedac.fig1.yaml \\
        docs/reproductions/fedac/fig1/runs.csv.gz --seeds 0,1,2,3,4,5,6,7

A job of the suite missing from runs.csv counts as not run, as in the report.
"""

from __future__ import annotations

import math
import sys

import click
import pandas as pd

from benchmark.errors import UserError


def summaries_from_runs(runs: pd.DataFrame) -> dict[str, dict]:
    """job id -> the summary fields the report reads (status, final F − F*)."""
    missing = {"job_id", "status", "final_subopt"} - set(runs.columns)
    if missing:
        raise UserError(f"runs.csv lacks the columns {', '.join(sorted(missing))}: not a FedAc report's runs.csv")
    return {
        row.job_id: {"status": row.status, "final_subopt": None if math.isnan(row.final_subopt) else row.final_subopt}
        for row in runs.itertuples()
    }


@click.command()
@click.argument("suite", type=click.Path(exists=True, dir_okay=False))
@click.argument("runs_csv", type=click.Path(exists=True, dir_okay=False))
@click.option("--seeds", default=None, help="the seeds the record ran, as for `fedbench report`")
def main(suite: str, runs_csv: str, seeds: str | None) -> None:
    """Print the comparison summary of SUITE's FedAc cells from RUNS_CSV."""
    from benchmark.protocols.fedac.compare import comparison_summary
    from benchmark.protocols.fedac.report import authors_runs, collect
    from benchmark.suite.expand import load_jobs
    from benchmark.suite.overrides import Overrides

    try:
        try:
            runs = pd.read_csv(runs_csv)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, EOFError, OSError, UnicodeDecodeError) as err:
            raise UserError(f"{runs_csv}: not a readable CSV ({err})") from None
        parsed, jobs = load_jobs(suite, Overrides.parse(seeds=seeds))
        click.echo(comparison_summary(collect(jobs, summaries_from_runs(runs), authors_by_entry=authors_runs(parsed))))
    except UserError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
