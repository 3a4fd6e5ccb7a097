"""What checking every finished job for staleness costs a `run` that has nothing to do.

    PYTHONPATH=$PWD python benchmarks/noop_run_stale_check.py BASE_CHECKOUT [--jobs 10000] [--repeats 3]

Builds a store of JOBS finished jobs (one tiny job trained for real, its folder copied to the id of
every seed of a one-method suite), then times `fedbench run SUITE --no-tracking -q` over it with
this checkout and with BASE_CHECKOUT (a tree without the staleness check, e.g. `git archive` of the
commit before), interleaved, and prints the median of the per-repeat ratios this / base, of the
processes' CPU seconds (user + system: what a loaded machine's other work inflates least) and of
their wall seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """\
name: noop
defaults:
  rounds: 2
  num_clients: 4
  local: {{epochs: 1, batch_size: 8, lr: 0.05}}
  model: {{name: logistic}}
  seeds: [{seeds}]
datasets:
  - name: synthetic
    params: {{num_users: 4, dim: 10, num_classes: 3, max_samples: 40}}
    split: {{kind: natural}}
methods: [fedavg]
"""


def fedbench(tree: Path, *args: str, cwd: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one `fedbench ARGS` run with `tree` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "benchmark", *args], cwd=cwd, env=env, check=True, capture_output=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def build_store(here: Path, folder: Path, jobs: int) -> Path:
    """A suite of `jobs` seeds whose every job is finished (copies of one trained job)."""
    suite = folder / "suite.yaml"
    suite.write_text(SUITE.format(seeds="0"))
    fedbench(here, "run", str(suite), "--no-tracking", "-q", "--results-dir", "results", cwd=folder)
    [trained] = [p for p in (folder / "results" / "jobs").iterdir() if not p.name.startswith(".")]
    suite.write_text(SUITE.format(seeds=", ".join(map(str, range(jobs)))))
    sys.path.insert(0, str(here))
    from benchmark.suite.expand import load_jobs

    for job in load_jobs(suite)[1]:
        if not (folder / "results" / "jobs" / job.id).exists():
            shutil.copytree(trained, folder / "results" / "jobs" / job.id)
    return suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", type=Path)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite = build_store(here, folder, args.jobs)
        command = ("run", str(suite), "--no-tracking", "-q", "--results-dir", "results")
        fedbench(here, *command, cwd=folder)  # links every job into the suite's view once, for both arms
        cpu, wall = [], []
        for repeat in range(args.repeats):
            arms = [here, args.base] if repeat % 2 == 0 else [args.base, here]
            took = {tree: fedbench(tree, *command, cwd=folder) for tree in arms}
            (cpu_here, wall_here), (cpu_base, wall_base) = took[here], took[args.base]
            cpu.append(cpu_here / cpu_base)
            wall.append(wall_here / wall_base)
            print(
                f"repeat {repeat}: CPU this {cpu_here:.2f} s, base {cpu_base:.2f} s; "
                f"wall this {wall_here:.2f} s, base {wall_base:.2f} s (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        print(
            f"{args.jobs} finished jobs, no-op run, this / base: CPU {statistics.median(cpu):.3f}, "
            f"wall {statistics.median(wall):.3f} (medians of {args.repeats})"
        )


if __name__ == "__main__":
    main()
