"""Peak resident memory of per-client state: host-memory store vs memory-mapped store.

Writes a model-sized state (e.g. SCAFFOLD's c_i) for N clients, reads every client back once,
and reports, for each store in a fresh subprocess (so one cannot hide the other's allocations):
private memory still held afterwards (RssAnon: what the state really costs in RAM) and peak RSS
growth (which for memmap also counts file pages the kernel may drop at any time).

    python benchmarks/client_state_memory.py --clients 200 --params 2000000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile


def rss_anon_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(kind: str, clients: int, params: int) -> dict:
    import time

    import torch

    from benchmark.fl.state import make_client_store

    torch.set_num_threads(1)
    before, anon_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rss_anon_mib()
    with tempfile.TemporaryDirectory() as tmp:
        store = make_client_store(kind, clients, tmp)
        start = time.perf_counter()
        for c in range(clients):
            store.put(c, {"scaffold.c": torch.full((params,), float(c))})
        for c in range(clients):
            assert float(store.get(c, "cpu")["scaffold.c"][0]) == c
        seconds = time.perf_counter() - start
        peak, anon = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rss_anon_mib()
    return {
        "kind": kind,
        "peak_rss_growth_mib": (peak - before) / 1024,
        "private_mib": anon - anon_before,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--params", type=int, default=2_000_000, help="floats per client (ResNet-18: 11.2M)")
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kind:  # child process: measure one store
        print(json.dumps(measure(args.kind, args.clients, args.params)))
        return
    state_mib = args.clients * args.params * 4 / 2**20
    print(f"{args.clients} clients x {args.params:,} float32 = {state_mib:,.0f} MiB of client state")
    results = {}
    for kind in ("memory", "memmap"):
        out = subprocess.run(
            [sys.executable, __file__, "--kind", kind, "--clients", str(args.clients), "--params", str(args.params)],
            capture_output=True,
            text=True,
            check=True,
        )
        results[kind] = json.loads(out.stdout)
        r = results[kind]
        print(
            f"{kind:7s} private memory held {r['private_mib']:9,.0f} MiB   peak RSS growth "
            f"{r['peak_rss_growth_mib']:9,.0f} MiB   write+read {r['seconds']:6.2f} s"
        )
    ratio = results["memory"]["private_mib"] / max(results["memmap"]["private_mib"], 1)
    print(f"private memory, memory / memmap: {ratio:.0f}x")


if __name__ == "__main__":
    main()
