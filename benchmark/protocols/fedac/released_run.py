"""Run the replay of the FedAc authors' released runs in parallel, then write its record:

    python -m benchmark.protocols.fedac.released_run suites/papers/fedac.authors_replay.yaml \\
        --reference REFERENCE_DIR --results-dir RESULTS --out OUT --workers 16

The released runs are cut into parts, one `fedbench run SUITE --set num_clients=M --only <job id>...`
each (every job of a part shares M; a part holds whole batches: one (λ, K), or for small M every K of
a λ), run `--workers` at a time, the costliest first, all sharing one results store; only the jobs
of released runs are selected (the suite's superset is not run). With `--deadline-s`, no part starts
after it and running parts are stopped (SIGTERM: their jobs stay resumable) so the record is
written in time, counting what did not run. Then OUT/report.md and OUT/runs.csv.gz (released.py).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import click

from benchmark.protocols.fedac.released import check_option, out_option, reference_option

SMALL_M = 512  # parts of M up to this hold every K of a λ (their jobs are cheap: fewer processes to start)


def parts(
    suite: str, reference: Path, every_run: bool = True, workers_m: tuple[int, ...] = ()
) -> list[tuple[float, int, list[str]]]:
    """(estimated cost, M, job ids) of every part (only those of M in `workers_m`, if given),
    costliest first. The cost is M·T per job (a worker-step), which the K-step kernel and the
    one-step rounds both scale with."""
    from benchmark.papers.fedac_replay import T, released_runs
    from benchmark.protocols.fedac.released import job_ids_by_key

    by_key = job_ids_by_key(suite)
    groups: dict[tuple, set[str]] = defaultdict(set)
    for run in released_runs(reference):
        if (run.key not in by_key and not every_run) or (workers_m and run.workers not in workers_m):
            continue
        group = (run.workers, run.lam) if run.workers <= SMALL_M else (run.workers, run.lam, run.steps)
        groups[group].add(by_key[run.key])
    out = [(len(ids) * group[0] * T, group[0], sorted(ids)) for group, ids in groups.items()]
    return sorted(out, key=lambda p: -p[0])


def run_parts(
    suite: str, todo: list[tuple[float, int, list[str]]], results_dir: Path, workers: int, deadline: float | None, log
) -> tuple[int, int]:
    """Run the parts `workers` at a time, costliest first; (parts finished, parts not run or stopped)."""
    waiting, running, stopped, done, cut = list(todo), {}, set(), 0, 0
    while waiting or running:
        late = deadline is not None and time.time() > deadline
        while waiting and len(running) < workers and not late:
            _, m, ids = waiting.pop(0)
            cmd = [sys.executable, "-m", "benchmark", "run", suite, "--set", f"num_clients={m}", "--no-tracking", "-q"]
            cmd += ["--results-dir", str(results_dir)] + [a for i in ids for a in ("--only", i)]
            running[subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)] = (m, len(ids), time.time())
        if late:
            cut, waiting = cut + len(waiting), []
            for proc in running.keys() - stopped:
                proc.send_signal(signal.SIGTERM)  # once: the run stops after its batch's current round
                stopped.add(proc)
        for proc in [p for p in running if p.poll() is not None]:
            m, count, started = running.pop(proc)
            ok = proc.returncode == 0
            done, cut = done + ok, cut + (not ok)
            print(
                f"part M={m} ({count} jobs): exit {proc.returncode} in {time.time() - started:.0f} s",
                file=log,
                flush=True,
            )
        time.sleep(0.2)
    return done, cut


@click.command()
@click.argument("suite", type=click.Path(exists=True, dir_okay=False))
@reference_option
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
@out_option
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default=True)
@click.option("--deadline-s", type=float, default=None, help="start no part after this many seconds; stop the rest")
@click.option("--some-runs", is_flag=True, help="SUITE replays some of the released runs: run and record those")
@click.option(
    "--clients", "workers_m", type=int, multiple=True, help="run only the released runs of this M (repeatable)"
)
@check_option
def main(
    suite: str,
    reference: Path,
    results_dir: Path,
    out: Path,
    workers: int,
    deadline_s: float | None,
    some_runs: bool,
    workers_m: tuple[int, ...],
    check_s: float,
) -> None:
    """Run SUITE's jobs of the authors' released runs in parallel and write OUT/report.md, OUT/runs.csv.gz."""
    from benchmark.errors import UserError
    from benchmark.papers.fedac_authors import f_star
    from benchmark.papers.fedac_replay import LAMBDAS
    from benchmark.papers.paper_settings import GenerationError
    from benchmark.protocols.fedac.released import write_record
    from benchmark.store.layout import Store

    started = time.time()
    out.mkdir(parents=True, exist_ok=True)
    try:
        for lam in LAMBDAS:  # the data is there (else exit 2 now, not in every part), and F* cached for the parts
            f_star(lam)
        todo = parts(suite, reference, not some_runs, workers_m)
        with (out / "run.log").open("a") as log:
            print(f"{len(todo)} parts, {sum(len(p[2]) for p in todo):,} jobs, {workers} workers", file=log, flush=True)
            deadline = None if deadline_s is None else started + deadline_s
            done, cut = run_parts(suite, todo, results_dir, workers, deadline, log)
            print(f"{done} parts finished, {cut} not run or stopped", file=log, flush=True)
        command = "python -m benchmark.protocols.fedac.released_run " + shlex.join(sys.argv[1:])
        wall = time.time() - started  # the runs' (the rounding check comes after)
        write_record(suite, Store(results_dir), reference, out, command, wall, not some_runs, workers, check_s)
    except (UserError, GenerationError) as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
