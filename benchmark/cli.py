"""fedbench command line: run, plan, report (and data, once datasets register commands)."""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import sys
import threading
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmark.cli_data import data as _data_group
from benchmark.cli_options import COUNT, Amount, job_options, load_selected, verbosity_options
from benchmark.errors import UserError

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default.
out = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _threads(n: int | None) -> None:
    """Fix torch's CPU threads for every job; without --threads each job's model is probed (run/threads.py)."""
    from benchmark.run.threads import request

    request(n)


JSON = click.option("--json", "as_json", is_flag=True, help="print machine-readable JSON on stdout instead of tables")


def _print_json(obj) -> None:
    """Strict JSON on stdout (no NaN), for scripts: nothing else is printed there."""
    from benchmark.run.results import strict_json

    click.echo(strict_json(obj, indent=2))


THREADS = click.option(
    "--threads",
    type=COUNT,
    default=None,
    help="CPU threads for torch (default: the fastest of 1, 2, 4, ... cores in a short probe per model)",
)


def _progress(jobs, quiet: bool, verbose: bool):
    """The progress reporter for this invocation (and the log level of the "fedbench" logger)."""
    if quiet and verbose:
        raise UserError("--quiet and --verbose exclude each other")
    from benchmark.run.progress import NORMAL, QUIET, VERBOSE, configure_logging, reporter

    verbosity = QUIET if quiet else VERBOSE if verbose else NORMAL
    configure_logging(verbosity)
    return reporter(jobs, err_console, verbosity)


def _print_results(suite, jobs, summaries: dict, results_dir: Path, columns=(), wide: bool = False) -> None:
    """The FedAc figure's tables (and PNG) for FedAc-protocol jobs, the paper tables for the rest."""
    from benchmark.report.fedac_figure import fedac_report
    from benchmark.report.table import result_tables

    rest = fedac_report(out, suite, jobs, summaries, results_dir)
    for table in result_tables(suite, rest, summaries, results_dir, columns, wide):
        out.print(table)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
@THREADS
@click.option(
    "--executor",
    default="local",
    show_default=True,
    help="where jobs run: local (this process), ray (Ray tasks, one machine or a cluster), or any "
    "executor registered in benchmark/run (README: Extending fedbench)",
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
    stop_after,
    threads,
    executor: str,
    ray_address,
    gpus_per_job: float,
    cpus_per_job: float,
    data_uris: tuple[str, ...],
    ship_max_mb: float,
    quiet: bool,
    verbose: bool,
) -> None:
    """Run every unfinished job of SUITE_FILE; print measured vs paper numbers."""
    _threads(threads)
    from benchmark.run.executor_base import EXECUTORS, ClusterOptions
    from benchmark.run.results import check_writable
    from benchmark.run.tracking import NullTracker

    suite, jobs = load_selected(suite_file, only, sets, seeds, rounds)  # first: its plugins may add executors
    runner = EXECUTORS.require(executor)(
        ClusterOptions(ray_address, gpus_per_job, cpus_per_job, data_uris, ship_max_mb)
    )
    dev = runner.device(device)
    runner.check(jobs)
    check_writable(results_dir / suite.name)
    progress = _progress(jobs, quiet, verbose)
    tracker = NullTracker() if no_tracking else open_tracker(suite.name, tracking_uri, results_dir, suite_file)
    status = "FAILED"
    try:
        tracker.heal(jobs)  # results/ is the source of truth: finished jobs missing in MLflow are mirrored
        summaries = runner.run(jobs, suite.name, results_dir, dev, tracker, progress, stop_after)
        _summarise(tracker, suite, jobs, results_dir)
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        tracker.close(status)
    _print_results(suite, jobs, summaries, results_dir)
    out.print(
        f"results: {results_dir / suite.name}"
        + (f"   MLflow: {tracker.uri} (mlflow ui --backend-store-uri {tracker.uri})" if tracker.uri else ""),
        markup=False,
        highlight=False,
    )
    exit_for_statuses(jobs, summaries)


def _summarise(tracker, suite, jobs, results_dir: Path) -> None:
    """The suite's MLflow run gets the tables' headline numbers (none to compute without tracking)."""
    if tracker.uri:
        from benchmark.report.entry_tables import headline_numbers

        tracker.summarise(suite, jobs, headline_numbers(suite, jobs, results_dir))


def exit_for_statuses(jobs, summaries: dict[str, dict]) -> None:
    """Failed jobs: exit 2. Diverged jobs are results (an lr sweep may diverge at its largest
    value): exit 0, unless every job of a method on a dataset diverged (exit 1)."""
    from benchmark.run.job_status import DIVERGED, FAILED, methods_all_diverged

    failed = [s for s in summaries.values() if s.get("status") == FAILED]
    diverged = [s for s in summaries.values() if s.get("status") == DIVERGED]
    if failed:
        raise UserError(f"{len(failed)} job(s) failed; see summary.json in their results folders")
    if diverged:
        err_console.print(
            f"{len(diverged)} job(s) diverged (status diverged@round: no accuracy is reported for them)", markup=False
        )
    hopeless = methods_all_diverged(
        [(f"{j.dataset_label} / {j.method_label.split('[')[0]}", summaries[j.id]) for j in jobs if j.id in summaries]
    )
    if hopeless:
        err_console.print("every job diverged for: " + ", ".join(hopeless), markup=False)
        raise click.exceptions.Exit(1)


def open_tracker(suite_name: str, uri: str | None, results_dir: Path, suite_file: Path | None = None):
    """The MLflow tracker; a store that cannot be opened is a warning, and the suite runs
    without tracking (the results on disk are the record)."""
    from benchmark.run.tracking import MlflowTracker, NullTracker

    try:
        return MlflowTracker(suite_name, uri, results_dir, suite_file)
    except Exception as err:
        first = (str(err).splitlines() or [""])[0][:160]
        err_console.print(
            f"warning: MLflow store {uri or 'default'} cannot be used ({type(err).__name__}: {first}); "
            "running without tracking, results on disk are unaffected",
            markup=False,
        )
        return NullTracker()


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
    "participation draws) and its time at step rates measured on --device",
)
@click.option("--device", default="auto", show_default=True, help="with --budget: where the step rates are measured")
@job_options
def plan(
    suite_file: Path,
    splits: bool,
    max_clients: int,
    figures_dir,
    audit_only: bool,
    budget: bool,
    device: str,
    only,
    sets,
    seeds,
    rounds,
) -> None:
    """Print the expanded job table without running anything."""
    if figures_dir and not splits:
        raise UserError("--figures writes the split figures: use it with --splits")
    suite, jobs = load_selected(suite_file, only, sets, seeds, rounds)
    if audit_only:
        _print_audit(suite, jobs)
        return
    if budget:
        from benchmark.report.budget import budget_table
        from benchmark.run.executor_base import torch_device

        out.print(budget_table(suite.name, jobs, torch_device(device)))
        return
    if splits:
        from benchmark.report.splits import split_tables

        for table in split_tables(jobs, max_clients):
            out.print(table)
        if figures_dir:
            from benchmark.report.splits import split_figures

            for path in split_figures(jobs, figures_dir):
                out.print(f"split figure: {path}", markup=False)
    table = Table(title=escape(f"{suite.name}: {len(jobs)} jobs"))
    for col in ("id", "dataset", "split", "clients", "part.", "rounds", "method", "key hyper-parameters", "seed"):
        table.add_column(col, no_wrap=col in ("id", "method"))
    for j in jobs:
        c = j.config
        split = c.dataset.split.kind + (f"(α={c.dataset.split.alpha})" if c.dataset.split.alpha else "")
        # unset (None) parameters mean "the default": not key, left out
        hyper = [f"{k}={v}" for k, v in c.method.server.params.model_dump().items() if v is not None]
        hyper += [
            f"{t.name}.{k}={v}" for t in c.method.client for k, v in t.params.model_dump().items() if v is not None
        ]
        if c.method.uplink.name != "identity":
            hyper.append("uplink=" + c.method.uplink.name)
        local = f"lr={c.local.lr} B={c.local.batch_size} " + (
            f"E={c.local.epochs}" if c.local.epochs else f"K={c.local.steps}"
        )
        table.add_row(
            j.id,
            escape(j.dataset_label),
            split,
            str(c.num_clients),
            f"{c.participation.rate:g}",
            str(c.rounds),
            escape(j.method_label),
            escape(" ".join(hyper + [local])),
            str(c.seed),
        )
    out.print(table)


def _print_audit(suite, jobs) -> None:
    from benchmark.report.audit import audit

    rows = audit(suite, jobs)
    if not rows:
        raise UserError(f"{suite.name}: no dataset entry has reference.stated / reference.chosen to audit")
    for source in dict.fromkeys(r.source for r in rows):
        table = Table(title=f"{suite.name}: {source} — paper vs suite")
        for col in ("method", "setting", "status", "paper / suite", "runs", "", "where stated / why chosen"):
            table.add_column(col, overflow="fold")
        for r in (r for r in rows if r.source == source):
            mark = "ok" if r.ok else "[bold red]MISMATCH[/]"
            table.add_row(r.method, r.setting, r.status, str(r.paper), r.runs, mark, escape(r.reason))
        out.print(table)
    kinds = ", ".join(f"{sum(r.status == k for r in rows)} {k}" for k in dict.fromkeys(r.status for r in rows))
    bad = [r for r in rows if not r.ok]
    if bad:
        by_setting: dict[str, list[str]] = {}
        for r in bad:
            by_setting.setdefault(r.setting, []).append(f"{r.paper} -> {r.runs}")
        named = "; ".join(f"{k} ({', '.join(dict.fromkeys(v))})" for k, v in by_setting.items())
        err_console.print(escape(f"{len(bad)} mismatch(es) between the paper/suite and the jobs: {named}"))
        raise SystemExit(1)
    out.print(f"{len(rows)} settings checked ({kinds}): the jobs run every stated and decided value")


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option(
    "--tracking-uri",
    default=None,
    help="MLflow store whose suite run gets the report files (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)",
)
@click.option("--no-tracking", is_flag=True, help="do not attach the report files to the suite's MLflow run")
@click.option(
    "--columns",
    default=None,
    metavar="KEY,..",
    help="terminal tables: these metric columns (keys such as acc@60, final_acc, wall_s, status), "
    "instead of those that fit 100 columns",
)
@click.option("--wide", is_flag=True, help="terminal tables: every column, however wide")
@job_options
@JSON
def report(
    suite_file: Path,
    results_dir: Path,
    tracking_uri,
    no_tracking: bool,
    columns,
    wide: bool,
    only,
    sets,
    seeds,
    rounds,
    as_json: bool,
) -> None:
    """Print measured vs paper numbers from the results already on disk (never reruns) and write
    results/<suite>/report/: report.md, report.html, tables/*.csv and *.tex, runs.csv. Every seed
    with a result on disk is reported; --seeds narrows."""
    from benchmark.report.fedac_figure import FIGURE_CAPTION, figure_path
    from benchmark.report.figures import Figure, report_figures
    from benchmark.report.on_disk import jobs_with_seeds_on_disk, left_out_of_previous_report
    from benchmark.report.report_files import write_report
    from benchmark.run.results import JobDir

    suite, jobs = jobs_with_seeds_on_disk(
        lambda s: load_selected(suite_file, only, sets, s, rounds), results_dir, seeds
    )
    summaries = {j.id: s for j in jobs if (s := JobDir(results_dir, suite.name, j.id).read_summary())}
    if not summaries:
        raise UserError(
            f"no results for suite {suite.name!r} under {results_dir}; run `fedbench run {suite_file}` first"
        )
    if columns and wide:
        raise UserError("--columns picks columns, --wide shows all of them: use one")
    picked = tuple(c.strip() for c in columns.split(",") if c.strip()) if columns else ()
    if not as_json:
        _print_results(suite, jobs, summaries, results_dir, picked, wide)
    _note_unselected(suite, jobs, results_dir)
    convergence = report_figures(suite, jobs, results_dir)
    figures = [
        Figure(FIGURE_CAPTION, figure_path(results_dir, suite.name)),
        *convergence,
    ]
    report_dir = results_dir / suite.name / "report"
    if dropped := left_out_of_previous_report(
        report_dir / "report.json", {j.id for j in jobs}, results_dir, suite.name
    ):
        err_console.print(
            f"warning: the report in {report_dir} covered {dropped} more job(s) whose results are still on disk; "
            "this narrower selection (--seeds/--only) replaces it: rerun without them to restore the fuller one",
            markup=False,
        )
    try:
        files = write_report(suite, jobs, summaries, results_dir, figures)
    except OSError as err:  # a read-only or full results folder: say where, no traceback
        raise UserError(
            f"cannot write the report under {report_dir}: {err.strerror or err} ({err.filename or ''})"
        ) from None
    say = err_console if as_json else out  # with --json stdout carries the JSON only
    for figure in convergence:
        say.print(f"figure: {figure.path}", markup=False)
    say.print(f"report: {files[-1]} and {files[-2].name}, tables in {report_dir / 'tables'}", markup=False)
    if as_json:
        click.echo((report_dir / "report.json").read_text())
    if not no_tracking:
        folder = files[-1].parent  # the convergence figures lie inside it
        _attach_report(
            suite.name,
            [folder] + [f.path for f in figures if f.path.exists() and folder not in f.path.parents],
            tracking_uri,
        )


def _note_unselected(suite, jobs: list, results_dir: Path) -> None:
    """Jobs on disk this selection leaves out (run with --set/--rounds, or by an earlier suite
    version) would silently be missing: say how many, and the options that show them."""
    from benchmark.report.on_disk import options_text, override_groups

    groups = override_groups(suite.name, jobs, results_dir)
    if not groups:
        return
    how = [
        f"{len(ids)} with `{options_text(sets)}`" if sets else f"{len(ids)} from other suite settings"
        for sets, ids in groups.items()
    ]
    err_console.print(
        f"note: {sum(map(len, groups.values()))} other job(s) in {results_dir / suite.name} are not shown: "
        + "; ".join(how)
        + " (pass those options to show them)",
        markup=False,
    )


def _attach_report(suite_name: str, files: list[Path], uri: str | None) -> None:
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


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option(
    "--tracking-uri", default=None, help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)"
)
@job_options
def sync(suite_file: Path, results_dir: Path, tracking_uri, only, sets, seeds, rounds) -> None:
    """Mirror SUITE_FILE's results on disk to MLflow (never runs a job): every finished job whose run
    is missing, KILLED or incomplete is mirrored again, and the suite run gets its headline numbers.
    Every seed on disk is included; jobs run with --set/--rounds need the same options."""
    from benchmark.report.on_disk import jobs_with_seeds_on_disk

    suite, jobs = jobs_with_seeds_on_disk(
        lambda s: load_selected(suite_file, only, sets, s, rounds), results_dir, seeds
    )
    tracker = open_tracker(suite.name, tracking_uri, results_dir, suite_file)
    if tracker.uri is None:
        raise UserError(f"MLflow store {tracking_uri or 'default'} cannot be used; nothing was mirrored")
    try:
        healed = tracker.heal(jobs)
        _summarise(tracker, suite, jobs, results_dir)
    finally:
        tracker.close("FINISHED")
    if tracker.offline:
        raise UserError(f"MLflow store {tracker.uri} stopped answering; rerun `fedbench sync` when it is back")
    out.print(f"MLflow {tracker.uri}: {healed or 0} job(s) mirrored, {len(jobs)} checked", markup=False)
    _note_unselected(suite, jobs, results_dir)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@job_options
@JSON
def status(suite_file: Path, results_dir: Path, only, sets, seeds, rounds, as_json: bool) -> None:
    """Every job as done / running / failed / diverged / pending, with rounds, accuracy and ETA
    (from the results on disk: works while a run is in progress and on interrupted suites).
    Every seed with a result on disk is shown; --seeds narrows."""
    from benchmark.report.on_disk import jobs_with_seeds_on_disk
    from benchmark.report.status import status_line, status_records, status_table, suite_status

    suite, jobs = jobs_with_seeds_on_disk(
        lambda s: load_selected(suite_file, only, sets, s, rounds), results_dir, seeds
    )
    statuses = suite_status(jobs, suite.name, results_dir)
    if as_json:
        _print_json({"suite": suite.name, "jobs": status_records(statuses)})
    else:
        out.print(status_table(suite.name, statuses))
        out.print(status_line(statuses), highlight=False)
    _note_unselected(suite, jobs, results_dir)


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
    help="the smallest tolerance for every metric (accuracy points / rounds); default 0.5 points, 1 round",
)
@click.option("--strict", is_flag=True, help="an improvement beyond the tolerance fails too")
@click.option("--update", is_flag=True, help="write the baseline from these runs instead of checking")
@click.option("--junit-xml", type=click.Path(path_type=Path), default=None, help="also write a JUnit XML report here")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON instead of the table")
@click.option("--no-tracking", is_flag=True, help="do not log the run to MLflow")
@job_options
@THREADS
@verbosity_options
def check(
    suite_file: Path,
    baseline,
    results_dir,
    reuse: bool,
    tolerance,
    strict: bool,
    update: bool,
    junit_xml,
    as_json: bool,
    no_tracking: bool,
    only,
    sets,
    seeds,
    rounds,
    threads,
    quiet: bool,
    verbose: bool,
) -> None:
    """Run SUITE_FILE's jobs (at least 3 seeds each) and compare the means with the baseline's,
    one-sided (docs/runs.md, "The regression gate"); exit 1 on a regression, 2 on bad input."""
    _threads(threads)
    from benchmark.report import check as gate
    from benchmark.report import check_output

    if update and (only or sets or rounds):
        raise UserError(
            "--update writes the suite's own baseline: every job, the suite's settings (no --only/--set/--rounds)"
        )
    suite, jobs = load_selected(suite_file, only, sets, seeds, rounds)
    gate.check_seeds(jobs)
    path = baseline or Path("results") / "baselines" / f"{suite.name}.json"
    expected = None if update else gate.load_baseline(path)
    if expected is not None:
        in_suite = {gate.group_of_job(j) for j in load_selected(suite_file, (), sets, seeds, rounds)[1]}
        gate.check_matches(expected, {gate.group_of_job(j) for j in jobs}, in_suite, path)
    with gate.check_folder(results_dir, reuse, suite.name, jobs) as folder:
        summaries = _run_for_check(suite, suite_file, jobs, folder, no_tracking, quiet, verbose)
    if update:
        gate.write_baseline(path, [summaries[j.id] for j in jobs])
        out.print(f"baseline written: {path} ({len(jobs)} jobs)", markup=False)
        return
    rows = gate.compare(expected, [summaries[j.id] for j in jobs], tolerance)
    if junit_xml:
        check_output.write_junit(junit_xml, suite.name, rows, strict)
    if as_json:
        click.echo(json.dumps(check_output.as_json(suite.name, path, rows, strict), indent=2))
    else:
        out.print(check_output.table(suite.name, rows, strict))
        out.print(gate.summary_line(rows, strict) + f" (baseline {path})", markup=False, highlight=False)
    if any(r.failed(strict) for r in rows):
        raise click.exceptions.Exit(1)


def _run_for_check(suite, suite_file, jobs, folder: Path, no_tracking: bool, quiet: bool, verbose: bool) -> dict:
    from benchmark.run.executor import LocalExecutor
    from benchmark.run.tracking import NullTracker

    local = LocalExecutor()
    local.check(jobs)
    tracker = NullTracker() if no_tracking else open_tracker(suite.name, None, folder, suite_file)
    status = "FAILED"
    try:
        summaries = local.run(
            jobs, suite.name, folder, local.device("auto"), tracker, _progress(jobs, quiet, verbose), None
        )
        status = "FINISHED"
    except KeyboardInterrupt:
        status = "KILLED"
        raise
    finally:
        tracker.close(status)
    return summaries


cli.add_command(_data_group)


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
        from benchmark.run.results import environment_error, is_environment_error

        if not is_environment_error(err):
            raise
        err_console.print(
            f"[bold red]error:[/bold red] {escape(str(environment_error(err, 'go on')))}", highlight=False
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
