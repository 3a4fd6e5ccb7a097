"""Client-steps per second of `execution: vectorised` vs `sequential` for one round of M clients.

Both modes train the same round (same clients, batches and start point) in the same process,
interleaved; each repeat gives one ratio, and the median ratio is printed (with the median
rates). Absolute numbers depend on the machine. Runs on CUDA when available, else CPU. It prints
the peak memory of each mode: on CUDA the allocator's peak, on CPU how far one round raises the
process's peak RSS (each mode in a child forked before any training, so none inherits another's
heap). The vectorised mode takes the job's `vmap_chunk` (default: chosen from memory,
engine/vmap_chunk.py); `--vmap-chunk all` is one call for all M clients, the behaviour before
that choice, and `--vmap-chunk both` runs the two as separate modes. `--clock cpu` times process
CPU seconds instead of wall seconds: with one thread on a shared, busy machine that measures the
work rather than the neighbours (the load average is printed before and after).

    PYTHONPATH=$PWD python benchmarks/vectorised_vs_sequential.py [--models logistic tiny_cnn femnist_cnn]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from torch import nn

from benchmark.data.source import SourceData
from benchmark.engine.fed_data import FederatedData, default_preprocess
from benchmark.engine.simulation import Simulation
from benchmark.engine.trainers.base import ExecutionRecord
from benchmark.fl.method import resolve_method
from benchmark.job.config import JobConfig
from benchmark.job.settings import LocalTraining, ModelConfig, Participation
from benchmark.models.registry import build_model
from benchmark.suite.schema import DatasetEntry

IMAGE = (1, 28, 28)
NUM_CLASSES = 62


class TinyCNN(nn.Module):
    """Two small conv layers with GroupNorm and a linear head (~30k parameters)."""

    def __init__(self, num_classes: int = NUM_CLASSES):
        super().__init__()
        self.conv1, self.norm1 = nn.Conv2d(1, 8, 3, padding=1), nn.GroupNorm(2, 8)
        self.conv2, self.norm2 = nn.Conv2d(8, 16, 3, padding=1), nn.GroupNorm(2, 16)
        self.fc = nn.Linear(16 * 7 * 7, num_classes)

    def forward(self, x, features: bool = False):
        x = torch.max_pool2d(torch.relu(self.norm1(self.conv1(x))), 2)
        z = torch.max_pool2d(torch.relu(self.norm2(self.conv2(x))), 2).flatten(1)
        logits = self.fc(z)
        return (logits, z) if features else logits


# benchmark name -> registered model and its params
# benchmark name -> (registered model, its params, input shape, classes); others: FEMNIST-shaped
VARIANTS = {
    "femnist_cnn_gn": ("femnist_cnn", {"norm": "group"}, IMAGE, NUM_CLASSES),
    "logistic_synthetic": ("logistic", {}, (60,), 10),  # FedProx's Synthetic(α, β): 60 features, 10 classes
}


def variant(name: str) -> tuple[str, dict, tuple[int, ...], int]:
    return VARIANTS.get(name, (name, {}, IMAGE, NUM_CLASSES))


def make_model(name: str) -> nn.Module:
    if name == "tiny_cnn":
        torch.manual_seed(0)
        return TinyCNN()
    registered, params, shape, classes = variant(name)
    return build_model(registered, shape, classes, params, "default", seed=0)


def random_data(clients: int, per_client: int, shape=IMAGE, classes=NUM_CLASSES) -> FederatedData:
    """Random normalised float inputs (28x28 images by default); kind "vector" hands them to the model as they are."""
    gen = torch.Generator().manual_seed(0)
    n = clients * per_client
    src = SourceData(
        train_x=torch.randn(n, *shape, generator=gen),
        train_y=torch.randint(0, classes, (n,), generator=gen),
        test_x=torch.zeros(1, *shape),
        test_y=torch.zeros(1, dtype=torch.long),
        num_classes=classes,
        kind="vector",
    )
    return FederatedData(src, list(torch.arange(n).view(clients, per_client)), default_preprocess(src))


def job(model: str, clients: int, steps: int, batch: int, method: str) -> JobConfig:
    return JobConfig(
        dataset=DatasetEntry(name="random"),
        method=resolve_method(method, "method"),
        seed=0,
        rounds=1,
        eval_every=1,
        num_clients=clients,
        participation=Participation(rate=1.0),
        local=LocalTraining(steps=steps, batch_size=batch, lr=0.05),
        model=ModelConfig(name=model),
        metrics=[],
        precision="fp32",
        checkpoint_every=0,
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def train_round(sim: Simulation, clock=time.perf_counter) -> tuple[float, torch.Tensor, ExecutionRecord]:
    """(seconds for one round of all the simulation's clients by its trainer, their final parameters
    (M, P), the trainer's record)."""
    setup = sim.setup
    chosen, rnd = list(range(setup.data.num_clients)), sim.round_info(0)
    received = setup.method.server.broadcast(sim.progress.theta, sim.progress.server_state, rnd)  # e.g. SCAFFOLD's c
    sync(setup.device)
    start = clock()
    trained = sim.trainer.train(chosen, rnd, received, ExecutionRecord())
    sync(setup.device)
    return clock() - start, torch.stack([o.final for o in trained.outcomes]), trained.record


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))


def peak_rss_growth(sim: Simulation) -> int | None:
    """How far one round of `sim` raises the peak RSS, in a forked child (Linux; else None)."""
    if not os.path.exists("/proc/self/clear_refs"):
        return None
    read_end, write_end = os.pipe()
    if (pid := os.fork()) == 0:  # the child: reset the peak, train, report, exit
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")  # the peak RSS (VmHWM) starts again from the current RSS
            start = _status_bytes("VmRSS")
            train_round(sim)
            os.write(write_end, str(_status_bytes("VmHWM") - start).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    return int(text) if text else None


def compare(sims: dict[str, Simulation], repeats: int, clock=time.perf_counter) -> dict:
    """mode -> (median seconds per round, peak bytes, final parameters, record), and "ratio <mode>"
    -> the median over repeats of sequential / that mode's seconds, for every mode but sequential.

    Modes alternate within each repeat, so load from other processes on a shared machine biases
    neither mode; a repeat's ratio compares two neighbouring runs.
    """
    times: dict[str, list[float]] = {mode: [] for mode in sims}
    peaks: dict[str, int | None] = {}
    finals: dict[str, torch.Tensor] = {}
    records: dict[str, ExecutionRecord] = {}
    for mode, sim in sims.items():  # CPU: each mode's peak before any training in this process
        if sim.setup.device.type == "cpu":
            peaks[mode] = peak_rss_growth(sim)
    for mode, sim in sims.items():  # warm-up (kernels, allocator), then the peak of one round
        train_round(sim)
        device = sim.setup.device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            train_round(sim)
            peaks[mode] = torch.cuda.max_memory_allocated(device)
    for _ in range(repeats):
        for mode, sim in sims.items():
            seconds, finals[mode], records[mode] = train_round(sim, clock)
            times[mode].append(seconds)
    out = {mode: (statistics.median(times[mode]), peaks[mode], finals[mode], records[mode]) for mode in sims}
    for mode in sims:
        if mode != "sequential":
            out[f"ratio {mode}"] = statistics.median(s / v for s, v in zip(times["sequential"], times[mode]))
    return out


def step_taken(record: ExecutionRecord) -> str:
    """The local step a mode took (after training: one that declined counts as plain): "fused"
    (engine/low_rank_step.py) or "plain"."""
    return next(iter(record.local_step.values()))["step"]


def vectorised_modes(choice: str, clients: int) -> dict[str, int | None]:
    """mode name -> its vmap_chunk for `--vmap-chunk` `choice` (auto | all | both | a number)."""
    named = {"auto": {"vec auto": None}, "all": {"vec all": clients}}
    named["both"] = named["all"] | named["auto"]
    if choice in named:
        return named[choice]
    if not choice.isdigit() or int(choice) < 1:
        raise SystemExit(f"--vmap-chunk {choice!r}: give auto, all, both or a number of clients (>= 1)")
    return {f"vec {choice}": int(choice)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", default=None, help=f"logistic, tiny_cnn, femnist_cnn, {', '.join(VARIANTS)}"
    )
    parser.add_argument("--clients", nargs="+", type=int, default=[5, 10, 20], help="M: clients per round")
    parser.add_argument("--steps", type=int, default=10, help="K: local steps per client")
    parser.add_argument("--batch-size", type=int, default=20)
    parser.add_argument("--method", default="fedprox")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="cpu: process CPU seconds (1 thread)")
    parser.add_argument(
        "--vmap-chunk", default="auto", help="auto (chosen from memory), all (one call), both, or a number of clients"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    models = args.models or (
        ["logistic", "tiny_cnn", "femnist_cnn"] if args.device.startswith("cuda") else ["logistic", "tiny_cnn"]
    )

    print(
        f"device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"method {args.method}, K={args.steps}, B={args.batch_size}, median of {args.repeats} interleaved, "
        f"{args.clock} clock, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'model':<20}{'params':>10}{'M':>4}{'mode':>12}{'steps/s':>9}{'ratio':>7}{'max|Δw|':>10}{'step':>7}"
        f"{'peak MiB':>10}  chunk"
    )
    for name in models:
        for m in args.clients:
            registered, _, shape, classes = variant(name)
            config = job(registered, m, args.steps, args.batch_size, args.method)
            modes = {"sequential": ("sequential", None)} | {
                mode: ("vectorised", chunk) for mode, chunk in vectorised_modes(args.vmap_chunk, m).items()
            }
            sims = {
                mode: Simulation(
                    config.model_copy(update={"execution": execution, "vmap_chunk": chunk}),
                    random_data(m, args.steps * args.batch_size, shape, classes),
                    make_model(name),
                    args.device,
                )
                for mode, (execution, chunk) in modes.items()
            }
            result = compare(sims, args.repeats, CLOCKS[args.clock])
            seq_w = result["sequential"][2]
            for mode, sim in sims.items():
                seconds, peak, w, record = result[mode]
                ratio = result.get(f"ratio {mode}", 1.0)
                chunk = record.vmap_chunk["chunk"] if record.vmap_chunk else "-"
                print(
                    f"{name:<20}{sim.setup.spec.total:>10}{m:>4}{mode:>12}{m * args.steps / seconds:>9.1f}{ratio:>7.2f}"
                    f"{(w - seq_w).abs().max().item():>10.1e}{step_taken(record):>7}"
                    f"{'-' if peak is None else f'{peak / 2**20:.0f}':>10}  {chunk}",
                    flush=True,
                )
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
