"""fedbench's batched FedAc engine vs a plain numpy loop of the same algorithm, on a9a.

The loop is what a researcher writes by hand: one vectorised update over all M workers per
step (no Python per worker), float32, FedAc-I for one learning rate. fedbench runs the
paper's whole 13-level lr grid as one batch (benchmark/protocols/fedac/engine.py) through the real job
path, results files included; its time per job is the batch's time / 13, or a whole Figure-1 cell's (5 methods x 13 lr, two batches) / 65.

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/fedac_speed.py [--grid]

Prints seconds per job and the ratio loop / fedbench at (M, K) = (64, 64) and (1024, 64),
T = 4096, one thread each, interleaved (A, B, A, B) with medians; the peak RSS of the
largest cell (M = 8192, K = 256); with --grid, the time of a representative subset of Figure 1's cells and
the extrapolation to the whole grid (stated as such).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmark.engine.setup import load_source
from benchmark.fl.fedac import coefficients
from benchmark.papers.fedac_suites import LR_GRID, T, protocol_suite
from benchmark.run.executor import run_jobs
from benchmark.run.progress import QUIET, LogProgress
from benchmark.run.tracking import NullTracker
from benchmark.store.layout import Store
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

LAM = 1e-3
EVAL_STEPS = 512


def numpy_fedac(x: np.ndarray, y: np.ndarray, m: int, k: int, eta: float, seed: int = 0) -> float:
    """FedAc-I (Algorithm 1), all M workers as (M, d) arrays; returns the last F(w̄_ag)."""
    rng = np.random.default_rng(seed)
    n, d = x.shape
    c = coefficients("I", eta, LAM, k)
    w = np.tile(rng.standard_normal(d).astype(np.float32), (m, 1))
    ag = w.copy()
    loss = float("nan")
    for r in range(T // k):
        idx = rng.integers(n, size=(m, k))
        for j in range(k):
            xb, yb = x[idx[:, j]], y[idx[:, j]]
            md = w / c.beta + (1 - 1 / c.beta) * ag
            z = np.einsum("md,md->m", md, xb)
            g = (-yb / (1 + np.exp(yb * z)))[:, None] * xb + LAM * md
            ag = md - eta * g
            w = (1 - 1 / c.alpha) * w + md / c.alpha - c.gamma * g
        w = np.tile(w.mean(0), (m, 1))
        ag = np.tile(ag.mean(0), (m, 1))
        if ((r + 1) * k) % EVAL_STEPS == 0:  # the paper's evaluation: F on the whole training set
            v = ag[0]
            loss = float(np.logaddexp(0, -y * (x @ v)).mean() + 0.5 * LAM * v @ v)
    return loss


def fedbench_jobs(m: int, k: int, methods: list[str]):
    suite = Suite(**protocol_suite(f"speed-{m}-{k}", LAM, [m], [k], methods, "fedac speed"))
    return expand(suite), suite.name


def time_fedbench(m: int, k: int, methods: list[str]) -> tuple[float, int]:
    """(seconds to run and write the cell's jobs through run_jobs, number of jobs)."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs, name = fedbench_jobs(m, k, methods)
        start = time.perf_counter()
        run_jobs(jobs, name, Store(Path(tmp)), tracker=NullTracker(), progress=LogProgress(jobs, QUIET))
        return time.perf_counter() - start, len(jobs)


def speed(args) -> None:
    src = load_source(expand(Suite(**protocol_suite("probe", LAM, [4], [1], ["fedavg"], "")))[0].config)
    x = src.train_x.numpy().astype(np.float32)
    y = (2.0 * src.train_y.numpy() - 1.0).astype(np.float32)
    time_fedbench(4, 4, ["fedac1"])  # warm: data, F* cache
    print(f"T = {T}, 1 thread, medians of {args.repeats} interleaved runs; loop = FedAc-I, one lr per run;")
    print("fedbench = FedAc-I's 13 lr values as one batch, or the whole Figure-1 cell (5 methods x 13 lr)")
    print(f"{'M':>6} {'K':>4} {'loop s/job':>11} {'FedAc-I s/job':>14} {'ratio':>6} {'cell s/job':>11} {'ratio':>6}")
    for m, k in ((64, 64), (1024, 64)):
        loop, alone, cell = [], [], []
        for _ in range(args.repeats):  # interleaved
            start = time.perf_counter()
            numpy_fedac(x, y, m, k, 0.1)
            loop.append(time.perf_counter() - start)
            seconds, count = time_fedbench(m, k, ["fedac1"])
            alone.append(seconds / count)
            seconds, count = time_fedbench(m, k, FIG1_METHODS)
            cell.append(seconds / count)
        a, b, c = (statistics.median(v) for v in (loop, alone, cell))
        print(f"{m:>6} {k:>4} {a:>11.3f} {b:>14.3f} {a / b:>5.1f}x {c:>11.3f} {a / c:>5.1f}x")


def cell_memory(m: int, k: int, rounds: int) -> None:
    """Run the (M, K) cell of Figure 1 (5 methods x 13 lr, both batches) for `rounds` rounds."""
    from benchmark.protocols.fedac.replay import run_group
    from benchmark.run.protocol_batches import ProtocolBatches

    jobs = expand(Suite(**protocol_suite("memory", LAM, [m], [k], FIG1_METHODS, "")))
    for group in ProtocolBatches(jobs).batches.values():
        run_group([j.config.model_copy(update={"rounds": rounds}) for j in group])


def peak_memory() -> None:
    m, k, rounds = 8192, 256, 2
    code = (
        "import resource, torch; torch.set_num_threads(1);"
        f"from benchmarks.fedac_speed import cell_memory; cell_memory({m}, {k}, {rounds});"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    print(
        f"peak RSS of the Figure-1 cell M = {m}, K = {k} (65 jobs in two batches; {rounds} rounds, as a "
        f"round's arrays are the whole footprint): {int(out.stdout.split()[-1]) / 1024:.0f} MiB, whole process"
    )


# A representative subset of Figure 1: every method, small/middle/large M, small/large K.
SUBSET_M, SUBSET_K = (16, 256, 2048), (1, 16, 256)
FIG1_M, FIG1_K = tuple(2**e for e in range(2, 14)), tuple(2**e for e in range(0, 9))
FIG1_METHODS = ["fedac1", "fedac2", "fedavg", "mbsgd", "mbacsgd"]


def log_interpolate(x: float, xs: list[float], ys: list[float]) -> float:
    """y at x on the log-log polyline through (xs, ys), extended beyond with the end slopes."""
    lx, lxs, lys = np.log(x), np.log(xs), np.log(ys)
    if lx > lxs[-1]:
        return float(np.exp(lys[-1] + (lx - lxs[-1]) * (lys[-1] - lys[-2]) / (lxs[-1] - lxs[-2])))
    if lx < lxs[0]:
        return float(np.exp(lys[0] + (lx - lxs[0]) * (lys[1] - lys[0]) / (lxs[1] - lxs[0])))
    return float(np.exp(np.interp(lx, lxs, lys)))


def grid(args) -> None:
    """Time the subset's cells; estimate every Figure-1 cell by log-log interpolation in M (and
    extrapolation past the largest measured M) and in K, and sum."""
    cost: dict[tuple[int, int], float] = {}
    for m in SUBSET_M:
        for k in SUBSET_K:
            seconds, count = time_fedbench(m, k, FIG1_METHODS)
            cost[m, k] = seconds
            print(f"  M={m:>5} K={k:>3}: {count} jobs in {seconds:7.1f} s")
    total = 0.0
    for k in FIG1_K:
        by_m = [log_interpolate(k, list(SUBSET_K), [cost[m, kk] for kk in SUBSET_K]) for m in SUBSET_M]
        total += sum(log_interpolate(m, list(SUBSET_M), by_m) for m in FIG1_M)
    jobs = len(FIG1_M) * len(FIG1_K) * len(FIG1_METHODS) * len(LR_GRID)
    print(
        f"extrapolated Figure 1 ({jobs} jobs): {total / 3600:.2f} h on this machine, one process, 1 thread "
        f"(an estimate from the {len(cost)} measured cells above, not a run)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", action="store_true", help="also time a subset of Figure 1 and extrapolate")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"threads: torch {torch.get_num_threads()}; peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB"
    )
    speed(args)
    if not args.no_memory:
        peak_memory()
    if args.grid:
        grid(args)


if __name__ == "__main__":
    main()
