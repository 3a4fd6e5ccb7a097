"""Options shared by the commands that expand a suite (run, plan, report, status, check):
command-line overrides and exact job selection. Import-light: click and the standard library."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import click

COUNT = click.IntRange(min=1)  # rounds, threads, clients listed: at least one
SEED = click.IntRange(min=0, max=2**32 - 1)  # as a suite's seeds


class Amount(click.FloatRange):
    """A finite float within a range (click's FloatRange lets nan and inf through)."""

    name = "finite float"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def _stacked(*options):
    """One decorator applying `options` in the order given (as --help lists them)."""
    return lambda command: functools.reduce(lambda f, option: option(f), reversed(options), command)


verbosity_options = _stacked(
    click.option("--quiet", "-q", is_flag=True, help="no progress output: warnings, errors and the result table only"),
    click.option("--verbose", "-v", is_flag=True, help="log every evaluated round"),
)

# --only (selection) and --set/--seeds/--rounds (overrides, applied like a one-valued suite grid)
job_options = _stacked(
    click.option(
        "--only",
        multiple=True,
        metavar="NAME",
        help="only jobs whose id, method label (with or without its [grid] suffix) or dataset label is "
        "exactly NAME (case-insensitive); repeatable",
    ),
    click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="PATH=VALUE",
        help="override a job setting for every selected job that has it, e.g. --set local.lr=0.05 (YAML value), "
        "or for one method's jobs: --set FedACG:method.server.lam=0.9; repeatable",
    ),
    click.option("--seeds", default=None, metavar="S1,S2,..", help="run these seeds instead of the suite's"),
    click.option(
        "--rounds", type=COUNT, default=None, help="rounds per job instead of the suite's (same as --set rounds=N)"
    ),
    click.option(
        "--max-jobs",
        type=COUNT,
        default=None,
        help="refuse a selection of more jobs than this, before building any (default 200,000)",
    ),
)


def load_selected(suite_file: Path, only=(), sets=(), seeds=None, rounds=None, max_jobs=None):
    """(suite, jobs) after selection and overrides."""
    from benchmark.errors import SuiteError
    from benchmark.suite.expand import MAX_JOBS, load_jobs
    from benchmark.suite.load import with_lines
    from benchmark.suite.overrides import Overrides

    try:
        return load_jobs(suite_file, Overrides.parse(sets, seeds, rounds), tuple(only), max_jobs or MAX_JOBS)
    except SuiteError as err:
        raise with_lines(err) from None
