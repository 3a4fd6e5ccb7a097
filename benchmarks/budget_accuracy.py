"""How close `fedbench plan --budget` comes to the wall time of `fedbench run --no-tracking` (issue 37 point 3).

For each load (the machine as found, then with N busy-loop processes beside it) and each suite: the
load averages, `plan --budget` (its own wall time, its estimate and range), then a fresh `run
--no-tracking` into a temporary results folder (its wall time, start to exit), and the ratio
measured / estimated. The busy loops are this script's own processes, ended by their ids.

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/budget_accuracy.py --busy 0 2
    ... --first-call    # each `plan --budget` measures everything (--remeasure): a first call's time
    ... --suite "suites/ci_femnist.yaml --seeds 0"    # a suite with selection options
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

SUITES = ["suites/quickstart.yaml", "suites/ci.yaml", "suites/ci_femnist.yaml --seeds 0", "suites/fedac_small.yaml"]
UNITS = {"s": 1, "min": 60, "h": 3600}
ESTIMATE = re.compile(r"estimated run time: ([\d.]+) (s|min|h) \(([\d.]+) (s|min|h) to ([\d.]+) (s|min|h)")


def seconds(value: str, unit: str) -> float:
    return float(value) * UNITS[unit]


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a method's every job diverged, still a run
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return took, done.stdout


def fedbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchmark", *args]


def measure(suite: str, first_call: bool) -> dict:
    path, *selection = shlex.split(suite)
    load_before = os.getloadavg()
    plan_s, shown = timed(fedbench("plan", path, "--budget", *selection, *(["--remeasure"] if first_call else [])))
    found = ESTIMATE.search(shown)
    if not found:
        sys.exit(f"no estimate in plan --budget's output:\n{shown[-2000:]}")
    g = found.groups()
    estimate, low, high = seconds(*g[0:2]), seconds(*g[2:4]), seconds(*g[4:6])
    with tempfile.TemporaryDirectory() as results:
        run_s, _ = timed(fedbench("run", path, "--no-tracking", "-q", "--results-dir", results, *selection))
    return {
        "suite": suite,
        "load_before": load_before[0],
        "load_after": os.getloadavg()[0],
        "plan_s": plan_s,
        "estimate_s": estimate,
        "low_s": low,
        "high_s": high,
        "run_s": run_s,
    }


def row(busy: int, m: dict) -> str:
    ratio = m["run_s"] / m["estimate_s"]
    inside = "yes" if m["low_s"] <= m["run_s"] <= m["high_s"] else "no"
    return (
        f"| {m['suite']} | {busy} | {m['load_before']:.1f} / {m['load_after']:.1f} | {m['plan_s']:.1f} | "
        f"{m['estimate_s']:.0f} ({m['low_s']:.0f}-{m['high_s']:.0f}) | {m['run_s']:.0f} | {ratio:.2f}x | {inside} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 2], help="busy-loop processes per pass")
    parser.add_argument("--suite", action="append", help="a suite, with selection options (default: the four)")
    parser.add_argument("--first-call", action="store_true", help="plan --budget --remeasure: nothing memoised")
    args = parser.parse_args()
    print(
        "| suite | busy loops | load (1 min) before / after | plan --budget s | estimate s (range) | run s "
        "| run / estimate | in range |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for busy in args.busy:
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            time.sleep(5 if busy else 0)  # let the load average see them
            for suite in args.suite or SUITES:
                print(row(busy, measure(suite, args.first_call)), flush=True)
        finally:
            for p in loops:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
