"""What MLflow tracking costs a run: `fedbench run SUITE` tracked against `--no-tracking`.

    PYTHONPATH=$PWD FEDBENCH_DATA=... python benchmarks/tracking_cost.py [--suite suites/fedac_small.yaml]
        [--only NAME ...] [--repeats 3] [--threads 1]

Three arms per repeat, interleaved, each a fresh process in a fresh results folder and working
directory (where a SQLite store's artifacts land): `--no-tracking`; tracked on a new store (a SQLite
file that does not exist yet: fedbench copies the empty store MLflow migrated once per machine,
benchmark/run/mlflow_new_store.py, which the existing store's making has made by then); tracked on an
existing store (a copy of one that already holds the suite's runs of another seed, made once before
the repeats: the experiment holds as many job runs as the run adds). Prints each arm's median wall
and CPU seconds (user + system of the process: what a loaded machine's other work inflates least),
the medians of the per-repeat ratios to the untracked arm, and the tracking cost per job:
(tracked - untracked) / jobs, medians.
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

ARMS = ("untracked", "new store", "existing store")


def fedbench(args: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `fedbench ARGS` process run in `cwd`."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchmark", *args], cwd=cwd, capture_output=True, text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"fedbench {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def jobs_in(results: Path) -> int:
    return sum(1 for p in (results / "jobs").iterdir() if p.is_dir() and not p.name.startswith("."))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=Path("suites/fedac_small.yaml"))
    parser.add_argument("--only", action="append", default=[], help="passed to `fedbench run --only`")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="passed to `fedbench run --threads`")
    parser.add_argument("--seed", type=int, default=0, help="the seed timed (the existing store holds seed + 1)")
    args = parser.parse_args()
    suite = args.suite.resolve()
    common = [f"--only={name}" for name in args.only] + ["--threads", str(args.threads), "-q"]
    timed = ["run", str(suite), "--seeds", str(args.seed), "--results-dir", "results", *common]
    with tempfile.TemporaryDirectory(prefix="tracking-cost-") as tmp:
        root = Path(tmp)
        template = root / "template"
        template.mkdir()
        store = f"sqlite:///{template / 'mlflow.db'}"
        other_seed = ["--seeds", str(args.seed + 1), "--results-dir", "results", *common]
        fedbench(["run", str(suite), *other_seed, "--tracking-uri", store], cwd=template)
        print(f"existing store: {jobs_in(template / 'results')} runs of seed {args.seed + 1}", flush=True)
        times: dict[str, list[tuple[float, float]]] = {arm: [] for arm in ARMS}
        jobs = 0
        for repeat in range(args.repeats):
            for arm in ARMS:
                folder = root / f"{repeat}-{arm.replace(' ', '-')}"
                folder.mkdir()
                if arm == "untracked":
                    tracking = ["--no-tracking"]
                else:
                    if arm == "existing store":
                        shutil.copy(template / "mlflow.db", folder / "mlflow.db")
                    tracking = ["--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"]
                times[arm].append(fedbench([*timed, *tracking], cwd=folder))
                jobs = jobs_in(folder / "results")
                wall, cpu = times[arm][-1]
                print(f"repeat {repeat} {arm:>14}: {wall:7.2f} s wall, {cpu:7.2f} s CPU, {jobs} jobs", flush=True)
                shutil.rmtree(folder)
        load = os.getloadavg()[0]
    print(f"\n{jobs} jobs, {args.repeats} repeats, load {load:.1f} at the end; medians:")
    base = times["untracked"]
    for arm in ARMS:
        wall = statistics.median(w for w, _ in times[arm])
        cpu = statistics.median(c for _, c in times[arm])
        line = f"{arm:>14}: {wall:7.2f} s wall, {cpu:7.2f} s CPU"
        if arm != "untracked":
            ratio_wall = statistics.median(t[0] / b[0] for t, b in zip(times[arm], base))
            ratio_cpu = statistics.median(t[1] / b[1] for t, b in zip(times[arm], base))
            per_job_wall = statistics.median(1000 * (t[0] - b[0]) / jobs for t, b in zip(times[arm], base))
            per_job_cpu = statistics.median(1000 * (t[1] - b[1]) / jobs for t, b in zip(times[arm], base))
            line += f"; x{ratio_wall:.2f} wall, x{ratio_cpu:.2f} CPU; {per_job_wall:.1f} ms wall, {per_job_cpu:.1f} ms CPU a job"
        print(line)


if __name__ == "__main__":
    main()
