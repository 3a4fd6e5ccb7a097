"""Import time of the commands that only read YAML or results (`--help`, `plan`, `status`).

    PYTHONPATH=$PWD python benchmarks/startup_imports.py --repeats 5 [OTHER_CHECKOUT ...]

Each command runs in a fresh interpreter under `python -X importtime`; its import time is the
sum of the top-level imports' cumulative times (what the interpreter spent importing, before
and during the command). Several checkouts (this one first) are run interleaved, command by
command, and compared by the median ratio to this one. Also prints which of torch, MLflow,
numba, pandas and matplotlib each command imported.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

COMMANDS = [
    ["--help"],
    ["plan", "suites/quickstart.yaml"],
    ["plan", "suites/table1.yaml", "--audit"],
    ["status", "suites/quickstart.yaml"],
]
HEAVY = ("torch", "mlflow", "numba", "pandas", "matplotlib")
TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")  # no indent: imported by the command itself


def import_profile(tree: Path, args: list[str]) -> tuple[float, list[str]]:
    """(seconds spent importing, heavy modules imported) of one `fedbench ARGS` in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "benchmark", *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    total, names = 0, set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
            if match := TOP_LEVEL.match(line):
                total += int(match.group(1))
    return total / 1e6, [m for m in HEAVY if m in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("others", nargs="*", type=Path, help="other checkouts to compare with this one")
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    trees = [Path(__file__).resolve().parents[1], *(p.resolve() for p in opts.others)]
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {opts.repeats} interleaved runs")
    for args in COMMANDS:
        times = {tree: [] for tree in trees}
        heavy = {}
        for _ in range(opts.repeats):
            for tree in trees:
                seconds, heavy[tree] = import_profile(tree, args)
                times[tree].append(seconds)
        print(f"fedbench {' '.join(args)}")
        for tree in trees:
            ratio = statistics.median(t / b for t, b in zip(times[tree], times[trees[0]]))
            print(
                f"  {str(tree):<28} {statistics.median(times[tree]):6.3f} s  {ratio:5.2f}x  imports {', '.join(heavy[tree]) or '-'}"
            )


if __name__ == "__main__":
    main()
