"""The inner loop's waits, each as a ratio to `fedbench --version` measured beside it: a `run` whose jobs
are all finished (the quickstart, with and without MLflow; grids of 10^4 and 10^5 jobs), the first job of
a fresh quickstart, and `plan` on every shipped suite.

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/noop_run_speed.py [--repeats 5]
        [--sizes 10000,100000] [--other OTHER_CHECKOUT]

Every command runs in a fresh interpreter from a temporary folder (results, MLflow store and the fedbench
cache in it). The cases are interleaved: each repeat runs `--version` and then every case once, so a
busy machine slows them alike; each case reports the median wall seconds, the median of the per-repeat
ratios to that repeat's `--version`, the median CPU seconds (user + system) and the largest peak RSS.

The grids' finished jobs are made as a person's results would be: one job per method is trained for
real, and every other job's folder holds hard links to its method's files (so 10^5 jobs cost little
disk). `first job` is the time from launch to the log line `job 1/4 started` of a quickstart run in an
empty results folder, untracked and into a new MLflow store (the process is then killed). `--other` runs the same cases on another checkout
(e.g. `git archive` of the commit before a change) in the same rotation; `--folder` keeps the finished
stores for the next call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SEEDS = 10
GRID = """\
name: noop{jobs}
defaults:
  rounds: 3
  num_clients: 10
  seeds: [{seeds}]
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{alpha: 1.0, beta: 1.0, num_users: 10, dim: 20, num_classes: 5, seed: 0}}
    split: {{kind: natural}}
methods:
  - fedavg
  - preset: fedprox
    client: {{prox: {{mu: 0.01}}}}
grid:
  local.lr: [{lrs}]
"""


def grid_suite(folder: Path, jobs: int, seeds: int = SEEDS) -> Path:
    lrs = ", ".join(f"{(i + 1) * 1e-4:.4f}" for i in range(max(1, jobs // (2 * seeds))))
    path = folder / f"noop{jobs}.yaml"
    path.write_text(GRID.format(jobs=jobs, seeds=", ".join(map(str, range(seeds))), lrs=lrs))
    return path


def env_for(tree: Path, folder: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "FEDBENCH_CACHE": str(folder / "cache"), "OMP_NUM_THREADS": "1"}


def timed(tree: Path, args: list[str], folder: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB) of `python -m benchmark ARGS` run from `folder` with `tree` first on the path."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "benchmark", *args],
            cwd=folder,
            env=env_for(tree, folder),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"fedbench {' '.join(args)} exited {status}: {err.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def until_first_job(
    tree: Path, suite: Path, folder: Path, results: Path, tracked: bool = False
) -> tuple[float, float, float]:
    """Seconds from launch to `job 1/N started` of a run in an empty results folder (`tracked`: into a new
    MLflow store beside it); then the run is killed."""
    start = time.perf_counter()
    tracking = ["--tracking-uri", f"sqlite:///{results}.db"] if tracked else ["--no-tracking"]
    args = ["run", str(suite), *tracking, "--results-dir", str(results)]
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmark", *args],
        cwd=folder,
        env=env_for(tree, folder),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in child.stderr:
        if "job 1/" in line and "started" in line:
            wall = time.perf_counter() - start
            break
    else:
        raise SystemExit(f"no job started: fedbench {' '.join(args)} exited {child.wait()}")
    child.kill()
    child.wait()
    return wall, float("nan"), float("nan")


LINK_JOBS = """
import os, sys
from pathlib import Path
from benchmark.suite.expand import load_jobs
one, suite, store = map(Path, sys.argv[1:])
trained = {job.method_label.split("[")[0]: job.id for job in load_jobs(one)[1]}
for job in load_jobs(suite)[1]:
    target = store / job.id
    if not target.exists():
        target.mkdir()
        for f in (store / trained[job.method_label.split("[")[0]]).iterdir():
            os.link(f, target / f.name)
"""


def finished_store(tree: Path, folder: Path, jobs: int) -> tuple[Path, Path]:
    """A suite of `jobs` grid jobs and a results folder where every one is finished. Built in a child
    process: pages this process held would count in the peak RSS of every child it forks."""
    results = folder / f"results{jobs}"
    one = grid_suite(folder, 2, seeds=1)  # one job per method, trained
    timed(tree, ["run", str(one), "--no-tracking", "-q", "--results-dir", str(results)], folder)
    suite = grid_suite(folder, jobs)
    link = [sys.executable, "-c", LINK_JOBS, str(one), str(suite), str(results / "jobs")]
    subprocess.run(link, env=env_for(tree, folder), check=True)
    return suite, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="10000,100000", help="jobs of the finished grids, comma-separated")
    parser.add_argument("--other", type=Path, default=None, help="another checkout, measured in the same rotation")
    parser.add_argument("--plans", default="*.yaml", help="the suites to plan, a glob under suites/ ('**/*.yaml': all)")
    parser.add_argument("--folder", type=Path, default=None, help="work here and keep it (a second call reuses it)")
    opts = parser.parse_args()
    trees = [HERE, *([opts.other.resolve()] if opts.other else [])]
    with tempfile.TemporaryDirectory() as tmp:
        folder = opts.folder.resolve() if opts.folder else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        quickstart = HERE / "suites" / "quickstart.yaml"
        cases: list[tuple[str, object]] = []
        for tree in trees:
            tag = "" if tree == HERE else f" [{tree.name}]"
            quick = folder / f"quick-{trees.index(tree)}"
            # trained with MLflow into a store of this tree's own (another tree's runs would change it)
            store = ["--tracking-uri", f"sqlite:///{quick}.db"]
            timed(tree, ["run", str(quickstart), "--results-dir", str(quick), *store], folder)
            noop = ["run", str(quickstart), "--results-dir", str(quick)]
            cases.append((f"run quickstart, all finished{tag}", [*noop, "--no-tracking", "-q"]))
            cases.append((f"run quickstart, all finished, MLflow{tag}", [*noop, *store, "-q"]))
            fresh = iter(range(10**6))
            for tracked in (False, True):
                cases.append(
                    (
                        f"first job of a fresh quickstart{', MLflow' if tracked else ''}{tag}",
                        lambda tree=tree, fresh=fresh, tracked=tracked: until_first_job(
                            tree, quickstart, folder, folder / f"fresh-{next(fresh)}", tracked
                        ),
                    )
                )
            for size in (int(s) for s in opts.sizes.split(",")):
                suite, results = finished_store(tree, folder, size)
                args = ["run", str(suite), "--no-tracking", "-q", "--results-dir", str(results)]
                timed(tree, args, folder)  # links every job into the suite's view once
                cases.append((f"run {size:,} jobs, all finished{tag}", args))
            for suite in sorted((HERE / "suites").glob(opts.plans)):
                cases.append((f"plan {suite.relative_to(HERE / 'suites')}{tag}", ["plan", str(suite)]))
        took: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name, _ in cases}
        print(f"load average {os.getloadavg()[0]:.1f} before; {opts.repeats} interleaved repeats", flush=True)
        for _ in range(opts.repeats):
            unit = {tree: timed(tree, ["--version"], folder)[0] for tree in trees}
            for name, case in cases:
                tree = next((t for t in trees[1:] if name.endswith(f"[{t.name}]")), HERE)
                wall, cpu, peak = case() if callable(case) else timed(tree, case, folder)
                took[name].append((wall, wall / unit[tree], cpu, peak))
            took.setdefault("fedbench --version", []).append((unit[HERE], 1.0, float("nan"), float("nan")))
        print(f"load average {os.getloadavg()[0]:.1f} after")
        print(f"{'case':58s} {'wall s':>7s} {'ratio':>7s} {'CPU s':>6s} {'peak MB':>8s}")
        for name, rows in took.items():
            wall, ratio, cpu = (statistics.median(r[i] for r in rows) for i in range(3))
            peak = max(r[3] for r in rows)
            print(f"{name:58s} {wall:7.2f} {ratio:6.1f}x {cpu:6.2f} {peak:8.0f}")


if __name__ == "__main__":
    main()
