"""Time one FedACG Table-1 round on this machine's device and extrapolate the whole job.

The job is taken from suites/table1.yaml as it is (ResNet-18 GN, 5 local epochs of B = 50, crop
and flip augmentation, its participation and client count); the images are random ones of the
dataset's shape and size (the time of a step does not depend on the pixels), so no dataset is
needed. One warm-up round (allocator, cuDNN autotuning, torch.compile) is not counted; then
`--rounds` rounds are timed, training and evaluation apart, and the job's length is extrapolated.

    PYTHONPATH=$PWD python benchmarks/gpu_table1.py                         # GPU: the full round
    PYTHONPATH=$PWD python benchmarks/gpu_table1.py --local-steps 2 --clients 1   # CPU: a tiny one
    ... --only large_dir0.3.cifar100/FedACG --compile

With --local-steps / --clients the round is cut down and the training time is scaled to the
job's full round (steps x clients); evaluation is always the full test set.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

from benchmark.cli_options import load_selected
from benchmark.data.partition import partition
from benchmark.data.source import SourceData
from benchmark.engine.augment import image_preprocessor
from benchmark.engine.fed_data import FederatedData
from benchmark.engine.simulation import Simulation
from benchmark.models.registry import build_model

# dataset -> (train images, test images, classes, side): the shapes Table 1 trains on
SHAPES = {
    "cifar10": (50_000, 10_000, 10, 32),
    "cifar100": (50_000, 10_000, 100, 32),
    "tiny_imagenet": (100_000, 10_000, 200, 64),
}
REPO = Path(__file__).resolve().parents[1]


def random_source(name: str) -> SourceData:
    train, test, classes, side = SHAPES[name]
    gen = torch.Generator().manual_seed(0)
    images = lambda n: torch.randint(0, 256, (n, 3, side, side), dtype=torch.uint8, generator=gen)  # noqa: E731
    labels = lambda n: torch.randint(0, classes, (n,), generator=gen)  # noqa: E731
    return SourceData(
        images(train),
        labels(train),
        images(test),
        labels(test),
        classes,
        "image",
        mean=(0.5, 0.5, 0.5),
        std=(0.25, 0.25, 0.25),
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", type=Path, default=REPO / "suites" / "table1.yaml")
    ap.add_argument("--only", default="moderate_dir0.3.cifar10/FedAvg", help="which job (fedbench run --only syntax)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds (after one warm-up round)")
    ap.add_argument("--local-steps", type=int, default=None, help="cut each client's round to K steps (CPU)")
    ap.add_argument("--clients", type=int, default=None, help="train only this many of the round's clients (CPU)")
    ap.add_argument("--compile", action="store_true", help="compile: true (CUDA: CUDA graphs)")
    args = ap.parse_args()

    _, jobs = load_selected(args.suite, only=(args.only,))
    job = jobs[0].config.model_copy(update={"compile": args.compile})
    src = random_source(job.dataset.name)
    clients = partition(src, job.num_clients, job.dataset.split)
    data = FederatedData(src, clients, image_preprocessor(src, job), "random")
    model = build_model(job.model.name, src.input_shape, src.num_classes, job.model.params, job.model.init, job.seed)
    per_client = [job.local.epochs * math.ceil(len(c) / job.local.batch_size) for c in clients]
    full_steps = sum(per_client) / len(per_client) * max(1, round(job.participation.rate * job.num_clients))
    measured_steps = full_steps
    if args.local_steps or args.clients:  # a cut-down round: fewer steps, fewer clients
        local = (
            job.local.model_copy(update={"steps": args.local_steps, "epochs": None}) if args.local_steps else job.local
        )
        rate = (args.clients / job.num_clients) if args.clients else job.participation.rate
        job = job.model_copy(
            update={"local": local, "participation": job.participation.model_copy(update={"rate": rate})}
        )
        per = args.local_steps or sum(per_client) / len(per_client)
        measured_steps = per * max(1, round(rate * job.num_clients))

    sim = Simulation(job, data, model, args.device)  # the trainers read the (cut-down) job's settings
    train, evals = [], []
    for t in range(args.rounds + 1):
        sync(sim.setup.device)
        t0 = time.perf_counter()
        sim.run_round(t)
        sync(sim.setup.device)
        t1 = time.perf_counter()
        sim.evaluate()
        sync(sim.setup.device)
        if t:  # round 0 warms up
            train.append(t1 - t0)
            evals.append(time.perf_counter() - t1)
    train_s = sorted(train)[len(train) // 2] * full_steps / measured_steps
    eval_s = sorted(evals)[len(evals) // 2]
    evaluated = sum(job.evaluates(r) for r in range(1, job.rounds + 1))
    total_h = (job.rounds * train_s + evaluated * eval_s) / 3600
    name = (
        torch.cuda.get_device_name(sim.setup.device)
        if sim.setup.device.type == "cuda"
        else f"CPU, {torch.get_num_threads()} threads"
    )
    print(f"device: {name}; torch {torch.__version__}; job {jobs[0].id} ({args.only}), compile={args.compile}")
    print(
        f"measured {measured_steps:.0f} local steps per round (full round: {full_steps:.0f}), median of {args.rounds}"
    )
    print(f"one round: train {train_s:.2f} s (scaled to the full round), evaluate {eval_s:.2f} s")
    print(f"extrapolated job: {job.rounds} rounds, {evaluated} evaluations: {total_h:.2f} h")


if __name__ == "__main__":
    main()
