"""Where a small job's whole process goes: `fedbench run` of a suite, split into phases.

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/startup_phases.py SUITE [--repeats 3] [--only NAME]

Each repeat is a fresh `fedbench run SUITE --no-tracking --threads 1 -q` into a fresh results folder
(every job computed), one thread (OMP/MKL/OPENBLAS_NUM_THREADS=1), after one untimed run that fills what a
machine keeps (numba's compiled kernels, decoded datasets, F*). Inside the child, `-X importtime` gives
each heavy library's import (where it happened, nested in whatever imported it) and timers wrapped
around named functions (installed as their modules are imported, so every `from x import f` gets the
timed one) give the run's phases. Printed: the median over repeats of each, its share of the whole
process, the interpreter's own start (`python -c pass`) and `fedbench --version` (interleaved with the
runs), and when the first job's first round started after the launch (also as a ratio to `--version`;
`--tracked` runs with MLflow tracking, as `fedbench run` does by default). The phases nest (a batch's computation
contains the kernel's first call); imports happen inside whichever phase first needs them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
LIBRARIES = [
    "torch",
    "numba",
    "scipy.linalg",
    "scipy.stats",
    "pandas",
    "matplotlib",
    "pydantic",
    "mlflow",
    "rich",
    "click",
    "yaml",
]
# (module, attribute path, label): the run's phases
PHASES = [
    ("benchmark.suite.expand", "load_jobs", "suite read and expanded into jobs"),
    ("benchmark.run.executor_base", "Executor.check", "jobs checked (dataset loaded, fingerprinted)"),
    ("benchmark.engine.sources", "_load_source", "dataset loaded (first time in the process)"),
    ("benchmark.run.job_runner", "run_job", "jobs run and written (all of them)"),
    ("benchmark.run.environment", "environment", "jobs' environment recorded"),
    ("benchmark.run.job_runner", "job_summary", "jobs' summaries built"),
    ("benchmark.store.job_dir", "atomic_write_bytes", "JSON files written (config, metrics, summary, heartbeat)"),
    ("benchmark.store.job_dir", "atomic_torch_save", "final models written"),
    ("benchmark.protocols.fedac.replay", "run_group", "FedAc batch: F*, θ₀, computation"),
    ("benchmark.protocols.fedac.engine", "run_batch", "FedAc batch: computation"),
    ("benchmark.protocols.fedac.kernel", "local_round", "FedAc kernel calls (numba)"),
    ("benchmark.protocols.fedac.numpy_round", "local_round", "FedAc local steps in numpy (small cells)"),
    ("benchmark.engine.convex", "RegularisedLogistic.optimum", "F* (per-client loop: solved or read from the cache)"),
    ("benchmark.engine.convex", "BinaryArrays.of", "F* (FedAc engine: read from the cache, or solved)"),
    ("benchmark.commands.output", "print_results", "result tables printed"),
]
FIRST_ROUND = ("benchmark.engine.simulation", "Simulation.run_round")  # the first job's first round starts
# phases that never run inside one another: the whole process less their CPU is what runs before and between
# them (the interpreter's start and the imports, mostly)
OUTERMOST = (
    "suite read and expanded into jobs",
    "jobs checked (dataset loaded, fingerprinted)",
    "jobs run and written (all of them)",
    "result tables printed",
)

CHILD = r"""
import functools, importlib.abc, importlib.machinery, json, sys, time
T0 = time.perf_counter()
PHASES, FIRST_ROUND = json.loads(sys.argv[1])
spent, cpu, calls, first = {}, {}, {}, {}
started = {}  # wall clock (time.time) at the first call of FIRST_ROUND, to compare with the parent's launch

def stamped(f):
    def wrapper(*args, **kwargs):
        started.setdefault("first_round", time.time())
        return f(*args, **kwargs)
    return wrapper

def timed(label, f):
    def wrapper(*args, **kwargs):
        t, c = time.perf_counter(), time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            dt = time.perf_counter() - t
            spent[label] = spent.get(label, 0.0) + dt
            cpu[label] = cpu.get(label, 0.0) + time.process_time() - c
            first.setdefault(label, dt)
            calls[label] = calls.get(label, 0) + 1
    return wrapper

def patch(module):
    if module.__name__ == FIRST_ROUND[0]:
        owner, attr = FIRST_ROUND[1].split(".")
        cls = getattr(module, owner)
        setattr(cls, attr, stamped(getattr(cls, attr)))
    for name, path, label in PHASES:
        if name != module.__name__:
            continue
        owner, *rest = path.split(".")
        if rest:  # a method (or cached property) of a class
            cls = getattr(module, owner)
            attr = cls.__dict__[rest[0]]
            if isinstance(attr, functools.cached_property):
                new = functools.cached_property(timed(label, attr.func))
                new.__set_name__(cls, rest[0])
                setattr(cls, rest[0], new)
            elif isinstance(attr, classmethod):
                setattr(cls, rest[0], classmethod(timed(label, attr.__func__)))
            else:
                setattr(cls, rest[0], timed(label, attr))
        else:
            setattr(module, owner, timed(label, getattr(module, owner)))

class Hook(importlib.abc.MetaPathFinder):
    names = {p[0] for p in PHASES} | {FIRST_ROUND[0]}
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            patch(module)  # before the importer binds its names
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Hook())
from benchmark.cli import main
code = main(sys.argv[2:])
print("PHASES " + json.dumps({"total": time.perf_counter() - T0, "spent": spent, "cpu": cpu, "calls": calls, "first": first, "started": started}))
sys.exit(code)
"""


def run_child(suite: Path, work: Path, extra: list[str], tracked: bool = False) -> dict:
    results = work / "results"
    subprocess.run(["rm", "-rf", str(results), str(work / "mlflow.db"), str(work / "mlruns")], check=True)
    env = {
        **os.environ,
        **ONE_THREAD,
        "MLFLOW_TRACKING_URI": "sqlite:///mlflow.db",  # in the work folder, new in each repeat
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    args = ["run", str(suite), "--results-dir", str(results), "--threads", "1", "-q", *extra]
    if not tracked:
        args.append("--no-tracking")
    t0, launched, cpu0 = time.perf_counter(), time.time(), children_cpu()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CHILD, json.dumps([PHASES, FIRST_ROUND]), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    whole, whole_cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"fedbench run failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("PHASES ")]
    found = json.loads(line.removeprefix("PHASES "))
    found["whole"], found["whole_cpu"] = whole, whole_cpu
    if "first_round" in found["started"]:
        found["first_round"] = found["started"]["first_round"] - launched
    found["imports"] = imports(done.stderr)
    return found


def imports(importtime: str) -> dict[str, float]:
    """Seconds each library's import took (cumulative: with what it imported), wherever it happened."""
    out = {}
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if name.strip() in LIBRARIES and cumulative.strip().isdigit():
            out[name.strip()] = out.get(name.strip(), 0.0) + int(cumulative) / 1e6
    return out


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def whole_process(*command: str) -> tuple[float, float]:
    """(wall s, CPU s) of one process."""
    t0, cpu0 = time.perf_counter(), children_cpu()
    subprocess.run([sys.executable, *command], check=True, capture_output=True)
    return time.perf_counter() - t0, children_cpu() - cpu0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="passed to `fedbench run --only`")
    ap.add_argument("--tracked", action="store_true", help="with MLflow tracking (a new store in each repeat)")
    args = ap.parse_args(argv)
    extra = ["--only", args.only] if args.only else []
    with tempfile.TemporaryDirectory(prefix="startup-phases-") as tmp:
        work = Path(tmp)
        run_child(args.suite.resolve(), work, extra, args.tracked)  # untimed: the machine's caches
        runs, bare, version = [], [], []
        for _ in range(args.repeats):  # interleaved, so that each ratio sees the same load
            bare.append(whole_process("-c", "pass"))
            version.append(whole_process("-m", "benchmark", "--version"))
            runs.append(run_child(args.suite.resolve(), work, extra, args.tracked))
    med = statistics.median
    whole, whole_cpu = med(r["whole"] for r in runs), med(r["whole_cpu"] for r in runs)
    print(
        f"{args.suite.name}: whole process {whole:.2f} s wall, {whole_cpu:.2f} CPU s (medians of {args.repeats}); "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(f"  {'phase':<52} {'wall s':>7} {'share':>6} {'CPU s':>6}")
    for label, times in (("python -c pass", bare), ("fedbench --version", version)):
        wall, cpu = med(w for w, _ in times), med(c for _, c in times)
        print(f"  {label:<52} {wall:7.3f} {wall / whole:6.1%} {cpu:6.3f}")
    if all("first_round" in r for r in runs):  # -X importtime's own cost is in it (a few %)
        ratios = [r["first_round"] / v for r, (v, _) in zip(runs, version)]
        s = med(r["first_round"] for r in runs)
        label = "the first job's first round starts (after launch)"
        print(f"  {label:<52} {s:7.2f} {s / whole:6.1%}", end="")
        print(f"  ({med(ratios):.1f}x fedbench --version, median of the per-repeat ratios)")
    for lib in LIBRARIES:  # importtime measures wall time only
        if all(lib in r["imports"] for r in runs):
            s = med(r["imports"][lib] for r in runs)
            print(f"  {'import ' + lib:<52} {s:7.3f} {s / whole:6.1%}")
    for _, _, label in PHASES:
        if all(label in r["spent"] for r in runs):
            s, c, n = med(r["spent"][label] for r in runs), med(r["cpu"][label] for r in runs), runs[-1]["calls"][label]
            also = f"  ({n} calls, the first {med(r['first'][label] for r in runs):.3f} s)" if n > 1 else ""
            print(f"  {label:<52} {s:7.3f} {s / whole:6.1%} {c:6.3f}{also}")
    rest = med(r["whole_cpu"] - sum(r["cpu"].get(label, 0.0) for label in OUTERMOST) for r in runs)
    print(f"  {'outside those phases (interpreter, imports)':<52} {'':>7} {'':>6} {rest:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
