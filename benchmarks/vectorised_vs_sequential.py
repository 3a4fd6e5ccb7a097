"""Client-steps per second of `execution: vectorised` vs `sequential` for one round of M clients.

Both modes train the same round (same clients, batches and start point) in the same process,
interleaved; each repeat gives one ratio, and the median ratio is printed (with the median
rates). Absolute numbers depend on the machine. Runs on CUDA when available, else CPU; on CUDA
it also prints the peak memory of each mode. `--clock cpu` times process CPU seconds instead of
wall seconds: with one thread on a shared, busy machine that measures the work rather than the
neighbours (the load average is printed before and after).

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
from benchmark.models.registry import build_model
from benchmark.suite.schema import DatasetEntry, JobConfig, LocalTraining, ModelConfig, Participation

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


def compare(sims: dict[str, Simulation], repeats: int, clock=time.perf_counter) -> dict:
    """mode -> (median seconds per round, peak CUDA bytes, final parameters), and "ratio" -> the
    median over repeats of sequential / vectorised seconds.

    Modes alternate within each repeat, so load from other processes on a shared machine biases
    neither mode; a repeat's ratio compares two neighbouring runs.
    """
    times: dict[str, list[float]] = {mode: [] for mode in sims}
    peaks: dict[str, int | None] = {}
    finals: dict[str, torch.Tensor] = {}
    records: dict[str, ExecutionRecord] = {}
    for mode, sim in sims.items():  # warm-up (kernels, allocator), then the peak of one round
        train_round(sim)
        device = sim.setup.device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            train_round(sim)
        peaks[mode] = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    for _ in range(repeats):
        for mode, sim in sims.items():
            seconds, finals[mode], records[mode] = train_round(sim, clock)
            times[mode].append(seconds)
    out = {mode: (statistics.median(times[mode]), peaks[mode], finals[mode], records[mode]) for mode in sims}
    out["ratio"] = statistics.median(s / v for s, v in zip(times["sequential"], times["vectorised"]))
    return out


def steps_taken(records: dict[str, ExecutionRecord]) -> str:
    """Which local step each mode took (after training: one that declined counts as plain):
    "fused" (engine/low_rank_step.py) or "plain"."""
    return "/".join(records[mode].local_step[mode]["step"] for mode in ("sequential", "vectorised"))


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
    mem = args.device.startswith("cuda")
    head = (
        f"{'model':<20}{'params':>10}{'M':>4}{'seq steps/s':>13}{'vec steps/s':>13}{'ratio':>7}{'max|Δw|':>10}"
        f"{'step seq/vec':>15}"
    )
    print(head + (f"{'seq peak MiB':>14}{'vec peak MiB':>14}" if mem else ""))
    for name in models:
        for m in args.clients:
            registered, _, shape, classes = variant(name)
            sims = {
                mode: Simulation(
                    job(registered, m, args.steps, args.batch_size, args.method).model_copy(update={"execution": mode}),
                    random_data(m, args.steps * args.batch_size, shape, classes),
                    make_model(name),
                    args.device,
                )
                for mode in ("sequential", "vectorised")
            }
            result = compare(sims, args.repeats, CLOCKS[args.clock])
            (t_seq, p_seq, w_seq, r_seq), (t_vec, p_vec, w_vec, r_vec) = result["sequential"], result["vectorised"]
            rate = m * args.steps
            line = (
                f"{name:<20}{sims['sequential'].setup.spec.total:>10}{m:>4}{rate / t_seq:>13.0f}{rate / t_vec:>13.0f}"
                f"{result['ratio']:>7.2f}{(w_seq - w_vec).abs().max().item():>10.1e}{steps_taken({'sequential': r_seq, 'vectorised': r_vec}):>15}"
            )
            print(line + (f"{p_seq / 2**20:>14.0f}{p_vec / 2**20:>14.0f}" if mem else ""), flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
