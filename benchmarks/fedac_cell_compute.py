"""The FedAc engine's computation on one small cell, in process: CPU seconds of `run_batch` per method.

    FEDBENCH_DATA=/path/to/data python benchmarks/fedac_cell_compute.py [--trees OLD NEW] [--clients 64]
        [--methods fedavg fedac1 ...] [--repeats 7]

The cell of benchmarks/fedac_vs_authors.py (a9a, 13 η, K = 64, T = 4,096, batch 1, F every 512 steps):
its 13 jobs read from the same suite YAML, then the engine's computation of the batch timed (replay.run_group:
F's objective and the sparse rows built, as once a process, and `engine.run_batch`; the data loaded and
fingerprinted and F* solved before the clock starts), in CPU seconds of this process, one thread. Also timed:
one round of K local steps (µs a step) and one evaluation (F on all training rows for the 13 models, and
the test loss and accuracy; ms). With `--trees`, each tree's code runs in its own process (PYTHONPATH),
the trees alternating repeat by repeat; medians are printed, and the ratio first / later tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
METHODS = ["fedavg", "fedac1", "fedac2", "mbsgd", "mbacsgd"]


def cpu() -> float:
    return time.process_time()


def measure(method: str, clients: int, repeats: int) -> dict:
    """{engine_s, step_us, eval_ms}: minima over `repeats` in this process (the cell is deterministic)."""
    import numpy as np

    from benchmark.engine.convex import BinaryArrays
    from benchmark.engine.sources import data_fingerprint, load_arrays
    from benchmark.protocols.fedac import engine
    from benchmark.protocols.fedac.replay import run_group
    from benchmark.suite.expand import expand
    from benchmark.suite.load import load_suite
    from benchmarks.fedac_vs_authors import suite_yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cell.yaml"
        path.write_text(suite_yaml(method, clients, 64, Path(os.environ["FEDBENCH_DATA"])))
        configs = [job.config for job in expand(load_suite(path))]
    first = configs[0]
    src = load_arrays(first)
    data_fingerprint(first)  # a run has it before the engine starts (the job's records)
    x, y = np.asarray(src.train_x), np.asarray(src.train_y)
    objective = BinaryArrays.of(x, y, first.local.weight_decay)  # F* solved or read once, before any timing
    run_group([c.model_copy(update={"rounds": 1}) for c in configs])  # one-off imports and builds
    engine_s = []
    for _ in range(repeats):
        engine.PER_DATASET.__init__()  # what a process builds once per dataset (F's rows, sparse rows) counted
        start = cpu()
        run_group(configs)
        engine_s.append(cpu() - start)
    # one evaluation: the 13 models as the engine evaluates them (F on the training rows, test loss, accuracy)
    ws = np.random.default_rng(0).standard_normal((len(configs), x.shape[1])).astype(np.float32) * 0.1
    test_x, test_y = np.asarray(src.test_x, dtype=np.float32), 2.0 * np.asarray(src.test_y, dtype=np.float32) - 1
    eval_s = []
    for _ in range(repeats * 3):
        start = cpu()
        objective.suboptimalities(ws)
        scores = test_x @ ws.T
        engine.softplus(-test_y[:, None] * scores).mean(0)
        ((scores > 0) == (test_y[:, None] > 0)).astype(np.float32).mean(0)
        eval_s.append(cpu() - start)
    return {"engine_s": min(engine_s), "eval_ms": 1e3 * min(eval_s), "step_us": step_us(engine, configs, x, y)}


def step_us(engine, configs, x, y) -> float | None:
    """µs a local step of all M workers and 13 jobs (numpy_round.local_round), None for one-step rounds."""
    import numpy as np

    from benchmark.engine.fed_data import shared_rows

    first = configs[0]
    batch = engine.Batch.of(configs, [engine.Outcome() for _ in configs])
    if batch.one_step:
        return None
    m, k = first.num_clients, first.local.steps
    sparse = engine.SparseRows.of(x.reshape(len(x), -1).astype(np.float32))
    local = engine.LocalSteps(batch.linear, sparse, 2.0 * y.astype(np.float32) - 1, m, k, in_numpy=True)
    state = np.broadcast_to(engine.initial_model(first, x.shape[1]), (len(configs), 2, x.shape[1])).copy()
    idx = shared_rows(first.seed, 0, m, k, 1, len(x))
    times = []
    for _ in range(20):
        start = cpu()
        local.round(state, idx, with_loss=False)
        times.append(cpu() - start)
    return 1e6 * min(times) / k


def one_tree(args) -> None:
    print(json.dumps({m: measure(m, args.clients, args.repeats) for m in args.methods}))


def interleaved(args) -> None:
    runs: dict[str, list[dict]] = {tree: [] for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            env = {**os.environ, **ONE_THREAD, "PYTHONPATH": f"{tree}:{Path(__file__).resolve().parents[1]}"}
            cmd = [sys.executable, __file__, "--clients", str(args.clients), "--repeats", str(args.repeats)]
            out = subprocess.run([*cmd, "--methods", *args.methods], env=env, capture_output=True, text=True)
            if out.returncode:
                sys.exit(f"{tree}: {out.stderr[-2000:]}")
            runs[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = args.trees[0]
    print(f"M = {args.clients}, medians of {args.rounds} processes (each the minimum of {args.repeats} runs)")
    for m in args.methods:
        cells = []
        for tree in args.trees:
            engine_s = statistics.median(r[m]["engine_s"] for r in runs[tree])
            eval_ms = statistics.median(r[m]["eval_ms"] for r in runs[tree])
            step = runs[tree][0][m]["step_us"] and statistics.median(r[m]["step_us"] for r in runs[tree])
            ratio = statistics.median(a[m]["engine_s"] / b[m]["engine_s"] for a, b in zip(runs[base], runs[tree]))
            steps = f", step {step:.1f} µs" if step else ""
            cells.append(f"{Path(tree).name}: engine {engine_s:.3f} CPU-s{steps}, eval {eval_ms:.2f} ms, x{ratio:.2f}")
        print(f"{m:8s} " + " | ".join(cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", nargs="+", help="source trees to compare, each in its own processes")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    p.add_argument("--repeats", type=int, default=3, help="runs within a process (their minimum is kept)")
    p.add_argument("--rounds", type=int, default=5, help="processes per tree, alternating (--trees)")
    args = p.parse_args()
    os.environ.update(ONE_THREAD)  # before numpy is imported (measure)
    if args.trees:
        interleaved(args)
    else:
        one_tree(args)


if __name__ == "__main__":
    main()
