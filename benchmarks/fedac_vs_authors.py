"""A FedAc cell, whole process: fedbench `run` against the FedAc authors' own code, interleaved.

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/fedac_vs_authors.py --authors /tmp/fedac-authors \
        [--methods fedac1 mbsgd ...] [--clients 64 1024] [--steps 64] [--repeats 3] [--floor]

`--authors` is a checkout of github.com/hongliny/FedAc-NeurIPS20 (never copied into this repository;
e.g. `git clone` it, or `git archive HEAD | tar -x -C /tmp/fedac-authors`). A cell is one (method, M, K)
with T = 4,096 parallel steps, λ = 1e-3, batch 1, F evaluated every 512 steps, over the paper's 13 η
(1e-3 .. 10). Each arm is one fresh process doing the whole cell:

- authors: their `logistic.py` imported from `--authors` and the cell's training lines as their
  `a9a_1e-03.py` writes them (`model = logistic.LogiBinaryLibSVM('a9a', 0.001)`, then
  `model.train(alg, eta, M, K, 4096, 1, 1, 512)` per η), in a scratch folder holding what their code
  expects: `./libsvm_datasets/a9a` (a9a from FEDBENCH_DATA, unpacked once if it is gzipped) and `./out/`.
- fedbench: `fedbench run` of a one-cell suite written as YAML (the same cell, seed 1 as theirs),
  `--no-tracking --threads 1 -q`, into a fresh results folder each time (every job computed).

Both arms at one thread (OMP/MKL/OPENBLAS_NUM_THREADS=1) and with Python's bytecode cache on, as an
installed package has it (PYTHONDONTWRITEBYTECODE is dropped from their environment: with it every run
compiles fedbench's modules again, 0.05-0.15 CPU-s); a cell's repeats run together, its arms'
order alternating (authors first, then fedbench first, ...). One fedbench run
before timing fills what a machine keeps (numba's compiled kernels, the decoded a9a): every later run
on the machine starts from that. Printed: per cell the median whole-process wall seconds and CPU seconds
(user + system of the reaped process) of each arm, and the medians of the per-repeat ratios authors /
fedbench (above 1: fedbench is faster), with the CPU model and load. Each arm's runs are checked: 13
finished jobs / 13 loss curves written.

`--floor` adds, per repeat, the least CPU any whole process computing the cell with fedbench's engine can
take: a fresh interpreter importing numpy (`python -c "import numpy"`) plus the engine's computation of the
13 jobs as `fedac_cell_compute.py` times it in another fresh process (data loaded and F* read before its
clock) -- no YAML, no validation, no files. authors / floor bounds the ratio fedbench's `run` could reach.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark.errors import UserError
from benchmark.protocols.fedac.authors_rerun import scratch_folder

REPO = Path(__file__).resolve().parents[1]
LRS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]  # the paper's grid
T, LAMBDA, RECORD, SEED = 4096, 0.001, 512, 1
# fedbench method (as a suite names it) -> the authors' `alg` code (logistic.py's `train`)
ALG = {"fedavg": 0, "fedac1": 1, "fedac2": 2, "mbsgd": 3, "mbacsgd": 4}
# FedAc-II as their code computes it (β = 2α²/(α − 1)): fedbench's FedAc-II with the authors' β
METHOD_YAML = {
    "fedac2": "{preset: fedac2, label: FedAc-II (authors' beta), client: {fedac: {beta_rule: authors_code}}}"
}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def suite_yaml(method: str, clients: int, steps: int, root: Path) -> str:
    rounds = T // steps
    return f"""\
name: fedac-cell
defaults:
  seeds: [{SEED}]
  participation: {{mode: fixed, rate: 1.0}}
  model: {{name: binary_logistic, init: normal}}
  local: {{batch_size: 1, weight_decay: {LAMBDA}, clip_norm: null}}
  suboptimality: true
datasets:
  - name: a9a
    root: {root}
    split: {{kind: shared}}
    rounds: {rounds}
    eval_every: {max(RECORD // steps, 1)}
    local: {{steps: {steps}, epochs: null}}
methods: [{METHOD_YAML.get(method, method)}]
grid:
  num_clients: [{clients}]
  local.lr: {LRS}
"""


def authors_script(authors: Path, method: str, clients: int, steps: int) -> str:
    lines = [f"model.train({ALG[method]}, {lr:g}, {clients}, {steps}, {T}, 1, {SEED}, {RECORD})" for lr in LRS]
    return "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(authors)!r})",
            "import logistic",
            f"model = logistic.LogiBinaryLibSVM('a9a', {LAMBDA})",
            *lines,
        ]
    )


def arm_environment(**extra: str) -> dict:
    env = {**os.environ, **ONE_THREAD, **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process; a failure stops the benchmark with its output."""
    t0, cpu0 = time.perf_counter(), children_cpu()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd[:4])} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
    return wall, cpu


def run_authors(args, scratch: Path, method: str, clients: int) -> tuple[float, float, int]:
    out = scratch / "out"
    shutil.rmtree(out)
    out.mkdir()
    env = arm_environment()
    wall, cpu = timed(
        [args.authors_python, "-c", authors_script(args.authors, method, clients, args.steps)], scratch, env
    )
    curves = list(out.glob("*/out/*.csv"))
    if len(curves) != len(LRS):
        raise SystemExit(f"the authors' run wrote {len(curves)} loss curves, expected {len(LRS)}")
    finite = sum(math.isfinite(float(c.read_text().split()[-1].split(",")[-1])) for c in curves)
    return wall, cpu, finite


def run_fedbench(args, work: Path, method: str, clients: int) -> tuple[float, float, int]:
    suite = work / "suite.yaml"
    suite.write_text(suite_yaml(method, clients, args.steps, args.data.resolve()))
    results = work / "results"
    shutil.rmtree(results, ignore_errors=True)
    env = fedbench_environment()
    cmd = [sys.executable, "-m", "benchmark", "run", str(suite), "--results-dir", str(results)]
    wall, cpu = timed(cmd + ["--no-tracking", "--threads", "1", "-q"], work, env)
    statuses = [json.loads(p.read_text())["status"] for p in results.glob("jobs/*/summary.json")]
    if len(statuses) != len(LRS):
        raise SystemExit(f"fedbench wrote {len(statuses)} job summaries, expected {len(LRS)}")
    return wall, cpu, statuses.count("finished")


def fedbench_environment() -> dict:
    """An arm's environment with this checkout's fedbench first on the path."""
    return arm_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def run_floor(work: Path, method: str, clients: int) -> float:
    """CPU seconds of an interpreter importing numpy plus the engine's CPU for the cell (no wall time: the two
    are timed in separate processes)."""
    env = fedbench_environment()
    _, interpreter = timed([sys.executable, "-c", "import numpy"], work, env)
    compute = [sys.executable, str(REPO / "benchmarks" / "fedac_cell_compute.py"), "--repeats", "1"]
    done = subprocess.run(
        [*compute, "--methods", method, "--clients", str(clients)], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"fedac_cell_compute.py failed:\n{done.stderr[-3000:]}")
    engine_s = json.loads(done.stdout.strip().splitlines()[-1])[method]["engine_s"]
    return interpreter + engine_s


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", type=Path, required=True, help="a checkout of hongliny/FedAc-NeurIPS20")
    ap.add_argument("--data", type=Path, default=os.environ.get("FEDBENCH_DATA"), help="holds a9a[.gz], a9a.t[.gz]")
    ap.add_argument("--methods", nargs="+", default=list(ALG), choices=list(ALG))
    ap.add_argument("--clients", nargs="+", type=int, default=[64, 1024])
    ap.add_argument("--steps", type=int, default=64, help="K; T = 4096 parallel steps, so K divides 4096")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--authors-python", default=sys.executable, help="needs numpy, pandas, scipy, scikit-learn")
    ap.add_argument("--floor", action="store_true", help="also time the floor: numpy's import + the engine's CPU")
    args = ap.parse_args(argv)
    if not (args.authors / "logistic.py").is_file():
        print(
            f"error: --authors {args.authors}: no logistic.py there (a checkout of FedAc-NeurIPS20?)", file=sys.stderr
        )
        return 2
    if args.data is None:
        print("error: set FEDBENCH_DATA or pass --data (the folder holding a9a)", file=sys.stderr)
        return 2
    if T % args.steps:
        print(f"error: --steps {args.steps} does not divide T = {T}", file=sys.stderr)
        return 2
    args.authors = args.authors.resolve()
    cells = [(m, c) for c in args.clients for m in args.methods]
    with tempfile.TemporaryDirectory(prefix="fedac-vs-authors-") as tmp:
        try:
            scratch = scratch_folder(Path(tmp) / "authors", args.data)
        except UserError as err:
            raise SystemExit(f"error: {err}") from None
        work = Path(tmp) / "fedbench"
        work.mkdir()
        print(f"CPU: {cpu_model()}; one thread per arm; K = {args.steps}, T = {T}, {len(LRS)} η a cell; load {load()}")
        run_fedbench(args, work, cells[0][0], cells[0][1])  # untimed: numba's kernel cache, the decoded a9a
        times = {(cell, arm): [] for cell in cells for arm in ("authors", "fedbench", "floor")}
        for cell in cells:  # a cell's repeats together: a run cut short still has whole cells
            for rep in range(args.repeats):
                arms = ["authors", "fedbench"] if rep % 2 == 0 else ["fedbench", "authors"]
                for arm in arms:
                    runner = run_authors if arm == "authors" else run_fedbench
                    times[cell, arm].append(runner(args, scratch if arm == "authors" else work, *cell))
                if args.floor:
                    times[cell, "floor"].append(run_floor(work, *cell))
                a, f = times[cell, "authors"][-1], times[cell, "fedbench"][-1]
                floor = f", floor {times[cell, 'floor'][-1]:.2f} CPU-s" if args.floor else ""
                print(
                    f"{cell[0]} M={cell[1]} repeat {rep + 1}: authors {a[0]:.2f} s ({a[1]:.2f} CPU-s), "
                    f"fedbench {f[0]:.2f} s ({f[1]:.2f} CPU-s){floor}; load {load()}",
                    flush=True,
                )
    print(f"\nload after: {load()}")
    header = (
        f"{'method':<8} {'M':>5} {'authors s':>10} {'fedbench s':>11} {'ratio':>7} {'CPU s a / f':>14} {'CPU ratio':>9}"
        f" {'finite η a / f':>15}" + (f" {'floor CPU s':>11} {'a / floor':>9}" if args.floor else "")
    )
    print(header)
    for cell in cells:
        a, f = times[cell, "authors"], times[cell, "fedbench"]
        wall_ratio = statistics.median(x[0] / y[0] for x, y in zip(a, f))
        cpu_ratio = statistics.median(x[1] / y[1] for x, y in zip(a, f))
        med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
        cpus, finite = f"{med(a, 1):.2f} / {med(f, 1):.2f}", f"{a[-1][2]} / {f[-1][2]}"
        floor = ""
        if fl := times[cell, "floor"]:
            floor = f" {statistics.median(fl):>11.2f} {statistics.median(x[1] / y for x, y in zip(a, fl)):>8.2f}x"
        print(
            f"{cell[0]:<8} {cell[1]:>5} {med(a, 0):>10.2f} {med(f, 0):>11.2f} {wall_ratio:>6.2f}x {cpus:>14} {cpu_ratio:>8.2f}x"
            f" {finite:>15}{floor}"
        )
    print(
        "ratio: median over repeats of authors / fedbench (above 1: fedbench faster); finite η: runs whose final F is"
    )
    print("finite (fedbench stops a diverged run at its first non-finite round, the authors' code runs it to the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
