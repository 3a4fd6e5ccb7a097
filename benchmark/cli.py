"""fedbench command line: run, plan, report (and data, once datasets register commands)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from benchmark.errors import UserError

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default.
out = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _device(name: str) -> str:
    """The torch device to train on; a name this machine cannot use is a user error, not N failed jobs."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"--device {name!r} is not a device; use cpu, cuda, cuda:N or auto") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            raise UserError(f"--device {name}: {count} CUDA device(s) here; use --device cpu or auto")
    elif device.type != "cpu":
        raise UserError(f"--device {name}: only cpu and cuda devices are supported")
    return name


def _threads(n: int | None) -> None:
    """Small models on CPU run faster with few threads; the torch default is one per core."""
    if n is not None:
        if n < 1:
            raise UserError("--threads must be at least 1")
        import torch

        torch.set_num_threads(n)


THREADS = click.option("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")


def _filter(jobs, only: tuple[str, ...]):
    if not only:
        return jobs
    keep = [j for j in jobs if any(s.lower() in f"{j.id} {j.dataset_label} {j.method_label}".lower() for s in only)]
    if not keep:
        raise UserError(f"--only {' '.join(only)} matches no job of this suite (see `fedbench plan`)")
    return keep


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """fedbench: declare a federated-optimisation study in YAML, run it, compare with the papers."""


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--tracking-uri", default=None, help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)")
@click.option("--no-tracking", is_flag=True, help="do not log to MLflow")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N or auto")
@click.option("--only", multiple=True, help="run only jobs whose id, dataset or method contains this text")
@click.option("--stop-after", type=int, default=None, help="stop every job after this many rounds (resumable)")
@THREADS
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="run jobs in this process, or as Ray tasks (one machine or a cluster)")
@click.option("--ray-address", default=None, help="Ray cluster to join (e.g. auto); default: start a local one")
@click.option("--gpus-per-job", type=float, default=0.0, show_default=True, help="Ray: GPUs per job (0.25 = 4 jobs per GPU)")
@click.option("--cpus-per-job", type=float, default=1.0, show_default=True, help="Ray: CPUs per job")
def run(suite_file: Path, results_dir: Path, tracking_uri, no_tracking: bool, device: str, only, stop_after, threads,
        executor: str, ray_address, gpus_per_job: float, cpus_per_job: float) -> None:
    """Run every unfinished job of SUITE_FILE; print measured vs paper numbers."""
    _threads(threads)
    if executor == "local" and (ray_address or gpus_per_job):
        raise UserError("--ray-address and --gpus-per-job need --executor ray")
    from benchmark.report.table import result_tables
    from benchmark.run.executor import run_jobs
    from benchmark.run.tracking import MlflowTracker, NullTracker
    from benchmark.suite.expand import load_jobs

    suite, jobs = load_jobs(suite_file)
    jobs = _filter(jobs, only)
    if executor == "ray":  # the workers' devices matter, not the driver's
        dev = ("cuda" if gpus_per_job > 0 else "cpu") if device == "auto" else device
    else:
        dev = _device(device)
    tracker = NullTracker() if no_tracking else MlflowTracker(suite.name, tracking_uri)
    status = "FAILED"
    try:
        if executor == "ray":
            from benchmark.run.ray_executor import run_jobs_ray

            summaries = run_jobs_ray(jobs, suite.name, results_dir, dev, tracker, err_console, stop_after,
                                     address=ray_address, gpus_per_job=gpus_per_job, cpus_per_job=cpus_per_job)
        else:
            summaries = run_jobs(jobs, suite.name, results_dir, dev, tracker, err_console, stop_after)
        status = "FINISHED"
    finally:
        tracker.close(status)
    for table in result_tables(suite, jobs, summaries):
        out.print(table)
    failed = [s for s in summaries.values() if s.get("status") == "failed"]
    out.print(f"results: {results_dir / suite.name}" + ("" if no_tracking else f"   MLflow: {tracker.uri} (mlflow ui --backend-store-uri {tracker.uri})"))
    if failed:
        raise UserError(f"{len(failed)} job(s) failed; see summary.json in their results folders")


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--splits", is_flag=True, help="also load the data and print each split's client sizes and label histograms")
@click.option("--max-clients", type=int, default=20, show_default=True, help="with --splits: clients listed per split")
def plan(suite_file: Path, splits: bool, max_clients: int) -> None:
    """Print the expanded job table without running anything."""
    from benchmark.suite.expand import load_jobs

    suite, jobs = load_jobs(suite_file)
    if splits:
        from benchmark.report.splits import split_tables

        for table in split_tables(jobs, max_clients):
            out.print(table)
    table = Table(title=f"{suite.name}: {len(jobs)} jobs")
    for col in ("id", "dataset", "split", "clients", "part.", "rounds", "method", "key hyper-parameters", "seed"):
        table.add_column(col, no_wrap=col in ("id", "method"))
    for j in jobs:
        c = j.config
        split = c.dataset.split.kind + (f"(α={c.dataset.split.alpha})" if c.dataset.split.alpha else "")
        hyper = [f"{k}={v}" for k, v in c.method["server"].items() if k != "rule"]
        hyper += [f"{t['term']}.{k}={v}" for t in c.method["client"] for k, v in t.items() if k != "term"]
        if c.method["uplink"]["codec"] != "identity":
            hyper.append("uplink=" + c.method["uplink"]["codec"])
        local = f"lr={c.local.lr} B={c.local.batch_size} " + (f"E={c.local.epochs}" if c.local.epochs else f"K={c.local.steps}")
        table.add_row(j.id, j.dataset_label, split, str(c.num_clients), f"{c.participation.rate:g}", str(c.rounds),
                      j.method_label, " ".join(hyper + [local]), str(c.seed))
    out.print(table)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
def report(suite_file: Path, results_dir: Path) -> None:
    """Print measured vs paper numbers from the results already on disk (never reruns)."""
    from benchmark.report.table import result_tables
    from benchmark.run.results import JobDir
    from benchmark.suite.expand import load_jobs

    suite, jobs = load_jobs(suite_file)
    summaries = {j.id: s for j in jobs if (s := JobDir(results_dir, suite.name, j.id).read_summary())}
    if not summaries:
        raise UserError(f"no results for suite {suite.name!r} under {results_dir}; run `fedbench run {suite_file}` first")
    for table in result_tables(suite, jobs, summaries):
        out.print(table)


@cli.command()
@click.argument("suite_file", type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="baseline file (default: results/baselines/<suite>.json)")
@click.option("--results-dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--tolerance", type=float, default=0.5, show_default=True, help="allowed change (accuracy points or rounds)")
@click.option("--update", is_flag=True, help="write the baseline from the current results instead of checking")
@click.option("--no-tracking", is_flag=True, help="do not log the run to MLflow")
@THREADS
def check(suite_file: Path, baseline, results_dir: Path, tolerance: float, update: bool, no_tracking: bool, threads) -> None:
    """Run SUITE_FILE (skipping finished jobs) and compare with its baseline; exit 1 on a regression."""
    _threads(threads)
    from benchmark.report.check import compare, write_baseline
    from benchmark.run.executor import run_jobs
    from benchmark.run.tracking import MlflowTracker, NullTracker
    from benchmark.suite.expand import load_jobs

    suite, jobs = load_jobs(suite_file)
    tracker = NullTracker() if no_tracking else MlflowTracker(suite.name)
    try:
        summaries = list(run_jobs(jobs, suite.name, results_dir, _device("auto"), tracker, err_console).values())
    finally:
        tracker.close()
    path = baseline or Path("results") / "baselines" / f"{suite.name}.json"
    if update:
        write_baseline(path, summaries)
        out.print(f"baseline written: {path}")
        return
    findings = compare(path, summaries, tolerance)
    for f in findings:
        out.print(f"[red]regression[/red] {f}")
    if findings:
        raise click.exceptions.Exit(1)
    out.print(f"[green]no regression[/green]: {len(jobs)} jobs within {tolerance} of {path}")
from benchmark.cli_data import data as _data_group
cli.add_command(_data_group)


def _log_to_stderr() -> None:
    """fedbench's own log lines (progress without a terminal) on stderr; other libraries' stay quiet."""
    logger = logging.getLogger("fedbench")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    _log_to_stderr()
    try:
        code = cli.main(args=argv, prog_name="fedbench", standalone_mode=False)
        if isinstance(code, int):  # click returns an Exit's code instead of raising it here
            return code
    except UserError as err:
        err_console.print(f"[bold red]error:[/bold red] {err}", highlight=False, markup=True)
        return err.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 130
    except click.ClickException as err:
        err.show()
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted: finished jobs and checkpoints are kept; run the same command to resume")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
