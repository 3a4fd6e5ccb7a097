"""`fedbench plan` on suites of 10^3 to 10^5 jobs, `--only` on the largest, a 10^6-job suite (refused
by the job cap), and a no-op `run` of the quickstart, each as a ratio to `fedbench --version`.

    PYTHONPATH=$PWD python benchmarks/expansion_scale.py [--sizes 1000,10000,100000] [--repeats 3]
        [--other OTHER_CHECKOUT] [--suite suites/papers/fedac.authors_replay.yaml ...]

Each suite is YAML text as a person writes it: synthetic data, FedAvg and FedProx, a grid of
learning rates, 10 seeds. Every command runs in a fresh interpreter; wall time is the median of
`--repeats`, CPU time (user + system) the median too (less sensitive to the machine's load than
wall time), peak memory the child's maximum resident set. `--other` runs the same commands on
another checkout (e.g. one before a change) in turn with this one, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SEEDS = 10


def grid_suite(folder: Path, jobs: int) -> Path:
    lrs = jobs // (2 * SEEDS)
    lr_values = ", ".join(f"{(i + 1) * 1e-4:.4f}" for i in range(lrs))
    text = f"""\
name: scale{jobs}
defaults:
  rounds: 5
  num_clients: 30
  seeds: [{", ".join(str(s) for s in range(SEEDS))}]
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{alpha: 1.0, beta: 1.0, num_users: 30, dim: 60, num_classes: 10, seed: 0}}
    split: {{kind: natural}}
methods:
  - fedavg
  - preset: fedprox
    client: {{prox: {{mu: 0.01}}}}
grid:
  local.lr: [{lr_values}]
"""
    path = folder / f"scale{jobs}.yaml"
    path.write_text(text)
    return path


def timed(tree: Path, args: list[str], cwd: Path, limit: float = 600) -> tuple[float, float, int, float]:
    """(wall s, peak MB, exit code, CPU s) of `python -m benchmark ARGS` run from `tree`; killed after `limit` s
    (exit -9: the old expansion took 290 s at 10^5 jobs, and an hour at 10^6)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmark", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    killer = threading.Timer(limit, child.kill)
    killer.start()
    _, status, usage = os.wait4(child.pid, 0)
    killer.cancel()
    wall = time.perf_counter() - start
    child.stderr.close()
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def median_of(repeats: int, tree: Path, args: list[str], cwd: Path, limit: float = 600):
    """Median wall s, largest peak MB, last exit code, median CPU s."""
    runs = [timed(tree, args, cwd, limit) for _ in range(repeats)]
    return (
        statistics.median(r[0] for r in runs),
        max(r[1] for r in runs),
        runs[-1][2],
        statistics.median(r[3] for r in runs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="jobs per suite, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--other", type=Path, default=None, help="another checkout to measure in turn")
    parser.add_argument("--limit", type=float, default=600, help="seconds before a command is killed")
    parser.add_argument("--suite", action="append", default=[], help="a shipped suite to plan too (repeatable)")
    opts = parser.parse_args()
    trees = [HERE, *([opts.other.resolve()] if opts.other else [])]
    sizes = [int(s) for s in opts.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [(f"plan, {n:,} jobs", ["plan", str(grid_suite(folder, n))]) for n in sizes]
        largest = str(folder / f"scale{sizes[-1]}.yaml")
        cases.append((f"plan --only FedAvg, {sizes[-1]:,} jobs", ["plan", largest, "--only", "FedAvg"]))
        cases.append(("plan, 1,000,000 jobs (over the cap)", ["plan", str(grid_suite(folder, 1_000_000))]))
        cases += [(f"plan {Path(s).name}", ["plan", str((HERE / s).resolve())]) for s in opts.suite]
        quickstart = ["run", str(HERE / "suites" / "quickstart.yaml"), "--no-tracking", "-q"]
        print(f"load average {os.getloadavg()[0]:.1f}; medians of {opts.repeats}; ratio = wall / `--version`")
        for tree in trees:
            print(f"\n{tree}")
            unit, _, _, cpu = median_of(opts.repeats, tree, ["--version"], folder)
            print(f"  {'fedbench --version':42s} {unit:7.2f} s {'':8s} {'':10s} {cpu:6.2f} CPU-s")
            for name, args in cases:
                wall, peak, code, cpu = median_of(opts.repeats, tree, args, folder, opts.limit)
                print(f"  {name:42s} {wall:7.2f} s {wall / unit:7.1f}x {peak:7.0f} MB {cpu:6.2f} CPU-s  exit {code}")
            results = folder / f"results-{trees.index(tree)}"
            timed(tree, [*quickstart, "--results-dir", str(results)], folder)  # trains the 4 jobs
            wall, peak, code, cpu = median_of(opts.repeats, tree, [*quickstart, "--results-dir", str(results)], folder)
            name = "run quickstart, every job finished"
            print(f"  {name:42s} {wall:7.2f} s {wall / unit:7.1f}x {peak:7.0f} MB {cpu:6.2f} CPU-s  exit {code}")


if __name__ == "__main__":
    main()
