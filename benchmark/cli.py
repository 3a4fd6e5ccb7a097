"""fedbench command line: run, plan, report (and data, once datasets register commands)."""

from __future__ import annotations

import contextlib
import importlib
import shlex
import signal
import sys
import threading
from pathlib import Path

import click
from rich.markup import escape

from benchmark.cli_options import COUNT, Amount, job_options, load_selected, verbosity_options
from benchmark.commands.output import err_console
from benchmark.errors import UserError

JSON = click.option("--json", "as_json", is_flag=True, help="print machine-readable JSON on stdout instead of tables")

COLUMNS = click.option(
    "--columns",
    default=None,
    metavar="KEY,..",
    help="tables (terminal and, for report, .tex): these metric columns (keys such as acc@60, final_acc, wall_s, "
    "status), instead of those that fit the terminal (at most 100 columns) / the page",
)
WIDE = click.option("--wide", is_flag=True, help="tables: every column, however wide (.tex: split to fit the page)")

THREADS = click.option(
    "--threads",
    type=COUNT,
    default=None,
    help="CPU threads for torch per job (default: 1, which a busy machine cannot slow down the way it slows more)",
)


def _select(suite_file: Path, only, sets, seeds, rounds, max_jobs):
    """The parsed selection: (seeds, only) -> (suite, jobs), by default the command line's."""
    return lambda seeds=seeds, only=only: load_selected(suite_file, only, sets, seeds, rounds, max_jobs)


class LazyGroup(click.Group):
    """Subcommands whose module is imported only when one is used or listed: `fedbench --version` and
    the other commands skip `data`'s imports (the dataset registry, pydantic)."""

    lazy = {"data": "benchmark.cli_data:data"}

    def list_commands(self, ctx) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx, name: str):
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attr = self.lazy[name].split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fedbench", prog_name="fedbench", message="%(prog)s %(version)s")
def cli() -> None:
    """fedbench: declare a federated-optimisation study in YAML, run it, compare with the papers."""


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option(
    "--tracking-uri", default=None, help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)"
)
@click.option("--no-tracking", is_flag=True, help="do not log to MLflow")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N or auto")
@job_options
@click.option("--stop-after", type=COUNT, default=None, help="stop every job after this many rounds (resumable)")
@click.option(
    "--keep-stale",
    is_flag=True,
    help="reuse done jobs whose code changed since they ran (marked stale in every table) instead of training "
    "them again",
)
@THREADS
@click.option(
    "--executor",
    default="local",
    show_default=True,
    help="where jobs run: local (this process), ray (Ray tasks, one machine or a cluster), or any "
    "executor registered in benchmark/run (docs/extending.md)",
)
@click.option("--ray-address", default=None, help="Ray cluster to join (e.g. auto); default: start a local one")
@click.option(
    "--gpus-per-job",
    type=Amount(min=0),
    default=0.0,
    show_default=True,
    help="Ray: GPUs per job (0.25 = 4 jobs per GPU)",
)
@click.option(
    "--cpus-per-job", type=Amount(min=0, min_open=True), default=1.0, show_default=True, help="Ray: CPUs per job"
)
@click.option(
    "--data-uri",
    "data_uris",
    multiple=True,
    metavar="[NAME=]URI",
    help="Ray: nodes without dataset NAME fetch it from URI (file://, https://, fsspec; #sha256=<hex> "
    "pins it); repeatable",
)
@click.option(
    "--ship-max-mb",
    type=Amount(min=0),
    default=1024,
    show_default=True,
    help="Ray: largest dataset the driver ships to nodes that lack it (0: never)",
)
@COLUMNS
@WIDE
@verbosity_options
def run(
    suite_file: Path,
    results_dir: Path,
    tracking_uri,
    no_tracking: bool,
    device: str,
    only,
    sets,
    seeds,
    rounds,
    max_jobs,
    stop_after,
    keep_stale: bool,
    threads,
    executor: str,
    ray_address,
    gpus_per_job: float,
    cpus_per_job: float,
    data_uris: tuple[str, ...],
    ship_max_mb: float,
    columns,
    wide: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """Run every unfinished job of SUITE_FILE; print measured vs paper numbers."""
    from benchmark.commands.run import run_suite

    cluster = (ray_address, gpus_per_job, cpus_per_job, data_uris, ship_max_mb)
    run_suite(
        load_selected(suite_file, only, sets, seeds, rounds, max_jobs),  # the suite itself, not its loader
        suite_file,
        results_dir,
        tracking_uri,
        no_tracking,
        device,
        stop_after,
        threads,
        executor,
        cluster,
        quiet,
        verbose,
        keep_stale,
        (columns, wide),
    )


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option(
    "--splits", is_flag=True, help="also load the data and print each split's client sizes and label histograms"
)
@click.option(
    "--max-clients", type=COUNT, default=20, show_default=True, help="with --splits: clients listed per split"
)
@click.option(
    "--figures",
    "figures_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="with --splits: also write each split's label distribution per client as a PNG into this folder",
)
@click.option(
    "--audit",
    "audit_only",
    is_flag=True,
    help="instead of the job table: each setting the paper states vs the value the suite runs, and the "
    "settings chosen where the paper is silent; exit 1 on a mismatch",
)
@click.option(
    "--budget",
    is_flag=True,
    help="instead of the job table: each job's client-steps and samples (exact, from the splits and the "
    "participation draws), the run's time measured on --device (a range, and what it assumed)",
)
@click.option("--device", default="auto", show_default=True, help="with --budget: where the step rates are measured")
@click.option("--threads", type=COUNT, default=None, help="with --budget: the --threads the run will be given")
@click.option(
    "--remeasure",
    is_flag=True,
    help="with --budget: measure every rate again instead of using this machine's memo of them (and update it)",
)
@click.option("--jobs", "every_job", is_flag=True, help="list every job, however many (default: up to 200)")
@job_options
def plan(
    suite_file: Path,
    splits: bool,
    max_clients: int,
    figures_dir,
    audit_only: bool,
    budget: bool,
    device: str,
    threads,
    remeasure: bool,
    every_job: bool,
    only,
    sets,
    seeds,
    rounds,
    max_jobs,
) -> None:
    """Print the expanded job table without running anything (over 200 jobs, a row per dataset and
    method; --jobs lists each) and the workload the jobs add up to."""
    from benchmark.commands.plan import plan_suite

    select = _select(suite_file, only, sets, seeds, rounds, max_jobs)
    if remeasure and not budget:
        raise UserError("--remeasure measures the budget's rates again: use it with --budget")
    plan_suite(select, splits, max_clients, figures_dir, audit_only, budget, device, every_job, threads, remeasure)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option(
    "--tracking-uri",
    default=None,
    help="MLflow store whose suite run gets the report files (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)",
)
@click.option("--no-tracking", is_flag=True, help="do not attach the report files to the suite's MLflow run")
@COLUMNS
@WIDE
@click.option(
    "--figure-width",
    type=Amount(min=2, max=20),
    default=7.0,
    show_default=True,
    metavar="INCHES",
    help="the figures' width as printed: 7 for a page's text width, 3.25 for one column of a two-column paper",
)
@job_options
@JSON
def report(
    suite_file: Path,
    results_dir: Path,
    tracking_uri,
    no_tracking: bool,
    columns,
    wide: bool,
    figure_width: float,
    only,
    sets,
    seeds,
    rounds,
    max_jobs,
    as_json: bool,
) -> None:
    """Print measured vs paper numbers from the results already on disk (never reruns) and write
    results/<suite>/report/: report.md, report.html, tables/*.csv and *.tex (the columns --columns / --wide
    pick, else those that fit the page), figures as PNG, PDF and SVG, runs.csv. Every seed with a result on
    disk is reported; --seeds narrows."""
    from benchmark.commands.report import report_suite

    select = _select(suite_file, only, sets, seeds, rounds, max_jobs)
    report_suite(
        select, suite_file, seeds, results_dir, tracking_uri, no_tracking, columns, wide, as_json, figure_width
    )


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option(
    "--tracking-uri", default=None, help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)"
)
@job_options
def sync(suite_file: Path, results_dir: Path, tracking_uri, only, sets, seeds, rounds, max_jobs) -> None:
    """Mirror SUITE_FILE's results on disk to MLflow (never runs a job): every finished job whose run
    is missing, KILLED or incomplete is mirrored again, and the suite run gets its headline numbers.
    Every seed on disk is included; jobs run with --set/--rounds need the same options."""
    from benchmark.commands.sync import sync_suite

    sync_suite(_select(suite_file, only, sets, seeds, rounds, max_jobs), suite_file, seeds, results_dir, tracking_uri)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--jobs", "every_job", is_flag=True, help="list every job, however many (default: up to 200)")
@job_options
@JSON
def status(
    suite_file: Path, results_dir: Path, every_job: bool, only, sets, seeds, rounds, max_jobs, as_json: bool
) -> None:
    """Every job as done / running / failed / diverged / pending, with rounds, accuracy and ETA
    (from the results on disk: works while a run is in progress and on interrupted suites).
    Over 200 jobs, a row per dataset and method (--jobs: a row per job; --json: every job).
    Every seed with a result on disk is shown; --seeds narrows."""
    from benchmark.commands.status import show_status

    show_status(_select(suite_file, only, sets, seeds, rounds, max_jobs), seeds, results_dir, as_json, every_job)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option(
    "--baseline",
    type=click.Path(path_type=Path),
    default=None,
    help="baseline file (default: results/baselines/<suite>.json)",
)
@click.option(
    "--results-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="where the jobs run, kept (default: a new temporary folder, removed afterwards)",
)
@click.option(
    "--reuse",
    is_flag=True,
    help="reuse the finished jobs in --results-dir that the current code produced (its code fingerprint); "
    "others run again. Default: every job runs afresh",
)
@click.option(
    "--tolerance",
    type=Amount(min=0),
    default=None,
    help="the smallest tolerance for every metric (accuracy points / rounds), at most 5; default 0.5 points, 1 round",
)
@click.option(
    "--allow-improvements",
    is_flag=True,
    help="one-sided: a change for the better beyond the tolerance passes (default: it fails, as any significant "
    "change of a reference implementation does)",
)
@click.option("--update", is_flag=True, help="write the baseline from these runs instead of checking")
@click.option(
    "--junit-xml",
    type=click.Path(path_type=Path),
    default=None,
    help="also write a JUnit XML report here (an <error> case when the check cannot compare)",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="print the outcome as JSON instead of the table (docs/schemas/check.schema.json), errors included",
)
@click.option("--no-tracking", is_flag=True, help="do not log this check as an MLflow run")
@job_options
@THREADS
@verbosity_options
def check(suite_file: Path, only, sets, seeds, rounds, max_jobs, **options) -> None:
    """Run SUITE_FILE's jobs (at least 3 seeds each) and compare the means with the baseline's,
    two-sided (docs/runs.md, "The regression gate"); exit 1 on a significant change, 2 on bad input."""
    from benchmark.commands.check import check_suite

    narrowed = bool(only or sets or rounds)
    check_suite(_select(suite_file, only, sets, seeds, rounds, max_jobs), suite_file, narrowed, **options)


@contextlib.contextmanager
def _sigterm_as_ctrl_c():
    """SIGTERM (a scheduler's kill, `kill PID`) stops like Ctrl-C: runs closed, resume hint printed."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(err: BaseException, argv: list[str] | None) -> int:
    command = "fedbench " + shlex.join(sys.argv[1:] if argv is None else argv)
    what = f"{err}. " if str(err) else ""
    err_console.print(
        f"interrupted: {what}Finished jobs and their results are kept.\nresume with: {command}",
        markup=False,
        highlight=False,
    )
    return 130


def main(argv: list[str] | None = None) -> int:
    try:
        with _sigterm_as_ctrl_c():
            code = cli.main(args=argv, prog_name="fedbench", standalone_mode=False)
        if isinstance(code, int):  # click returns an Exit's code instead of raising it here
            return code
    except UserError as err:
        err_console.print(f"[bold red]error:[/bold red] {escape(str(err))}", highlight=False, markup=True)
        return err.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort as abort:  # click turns a KeyboardInterrupt inside a command into Abort
        if isinstance(abort.__context__, KeyboardInterrupt):
            return _interrupted(abort.__context__, argv)
        err_console.print("aborted")
        return 130
    except click.ClickException as err:
        err.show()
        return 2
    except KeyboardInterrupt as err:
        return _interrupted(err, argv)
    except OSError as err:  # a full disk or lost permission where no command handled it (Ray driver, report)
        from benchmark.store.job_dir import environment_error, is_environment_error

        if not is_environment_error(err):
            raise
        err_console.print(
            f"[bold red]error:[/bold red] {escape(str(environment_error(err, 'go on')))}", highlight=False
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
