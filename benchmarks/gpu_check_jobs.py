"""The jobs, data and plain-loop arm that benchmarks/gpu_check.py runs, and the CUDA-only branches it reaches.

Jobs are built as fedbench builds them (JobConfig, resolved presets, registered models) on random data of the
papers' shapes: the time of a step does not depend on the pixels, and parity compares two devices on one input.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from vectorised_vs_sequential import job
from vectorised_vs_sequential import random_data as vectorised_random_data

from benchmark.engine.fed_data import FederatedData
from benchmark.engine.simulation import Simulation
from benchmark.fl.method import resolve_method
from benchmark.fl.pairing import model_problems
from benchmark.fl.presets import preset, preset_names
from benchmark.job.config import JobConfig
from benchmark.job.settings import Participation
from benchmark.models.registry import build_model, model_traits

REPO = Path(__file__).resolve().parents[1]

# model -> (input shape, classes): FEMNIST and CIFAR-10
SHAPES = {"femnist_cnn": ((1, 28, 28), 62), "resnet18_gn": ((3, 32, 32), 10)}

# The branches of benchmark/ that only a CUDA device takes: name -> (file, a line of the branch). gpu_check
# records which of them its run reached; tests/benchmarks/test_gpu_check.py fails when one moves or goes, so
# this list is kept in step with the code.
CUDA_BRANCHES = {
    "device": ("benchmark/run/executor_base.py", 'if device.type == "cuda":'),
    "compile": ("benchmark/engine/local.py", 'mode="reduce-overhead" if device.type == "cuda" else None'),
    "auto": ("benchmark/engine/trainers/auto.py", "torch.cuda.synchronize"),
    "ray": ("benchmark/run/ray_executor.py", 'return ("cuda" if self.options.gpus_per_job > 0 else "cpu")'),
}
QUICK_PRESETS = ["fedavg", "fedacg", "scaffold", "fedmlb+acg", "fedpaq+acg"]


def cuda_branches_present() -> dict[str, bool]:
    return {name: line in (REPO / path).read_text() for name, (path, line) in CUDA_BRANCHES.items()}


def engine_presets(quick: bool) -> list[str]:
    """Every preset the round engine trains (the FedAc family runs on its own CPU kernel), and the papers'
    composed variants."""
    if quick:
        return QUICK_PRESETS
    return [name for name in preset_names() if preset(name)["server"]["rule"] != "fedac"] + ["fedmlb+acg", "fedpaq+acg"]


def femnist_job(
    method: str,
    model: str,
    execution: str,
    clients: int = 4,
    rate: float = 0.5,
    rounds: int = 2,
    steps: int = 2,
    batch: int = 8,
) -> JobConfig | str:
    """A tiny job (2 of 4 clients a round, 2 steps of 8, 2 rounds by default), or why `method` cannot train `model`."""
    resolved = resolve_method(method, "method")
    problems = model_problems(resolved, model, model_traits(model), "method")
    if problems:
        return "; ".join(why for _, why in problems)
    update = {"rounds": rounds, "eval_every": rounds, "participation": Participation(rate=rate), "execution": execution}
    return job(model, clients, steps, batch, method).model_copy(update=update)


def random_data(model: str, clients: int, per_client: int = 32) -> FederatedData:
    """Normalised random inputs of the model's dataset shape, `per_client` samples per client."""
    shape, classes = SHAPES[model]
    return vectorised_random_data(clients, per_client, shape, classes)


def simulation(job: JobConfig, data: FederatedData, device: torch.device) -> Simulation:
    src = data.src
    model = build_model(job.model.name, src.input_shape, src.num_classes, job.model.params, job.model.init, job.seed)
    return Simulation(job, data, model, str(device))


def update_after(job: JobConfig, data: FederatedData, device: torch.device, nudge: bool = False) -> torch.Tensor:
    """θ_R − θ_0 after the job's rounds on `device`, on the CPU. `nudge`: θ_0 moved up by one ulp in every
    coordinate first (what another rounding of the same sums does to one operation's result)."""
    sim = simulation(job, data, device)
    if nudge:
        theta = sim.progress.theta
        theta.copy_(torch.nextafter(theta, torch.full_like(theta, math.inf)))
    theta0 = sim.progress.theta.clone()
    for t in range(job.rounds):
        sim.run_round(t)
    return (sim.progress.theta - theta0).cpu()


def table1_job(device: torch.device, quick: bool) -> tuple[JobConfig, FederatedData, int]:
    """FedACG Table 1's FedAvg job on CIFAR-10 (ResNet-18 GN, crop + flip) on random images, and its local
    steps per client; --quick cuts a round to one client and 2 steps (both arms then do the same cut round)."""
    from gpu_table1 import random_source

    from benchmark.cli_options import load_selected
    from benchmark.data.partition import partition
    from benchmark.engine.augment import image_preprocessor

    _, (selected,) = load_selected(REPO / "suites" / "table1.yaml", only=("moderate_dir0.3.cifar10/FedAvg",))
    job = selected.config
    src = random_source(job.dataset.name)
    clients = partition(src, job.num_clients, job.dataset.split)
    data = FederatedData(src, clients, image_preprocessor(src, job), "random")
    if quick:
        job = job.model_copy(
            update={
                "local": job.local.model_copy(update={"steps": 2, "epochs": None}),
                "participation": job.participation.model_copy(update={"rate": 1 / job.num_clients}),
            }
        )
        return job, data, 2
    mean_size = sum(len(c) for c in clients) / len(clients)
    return job, data, job.local.epochs * math.ceil(mean_size / job.local.batch_size)


def plain_round(job: JobConfig, data: FederatedData, device: torch.device, steps: int):
    """The same work as one fedbench round, written as a plain PyTorch loop: each of the round's clients
    copies the global model, takes `steps` SGD steps (weight decay, gradient clipping) on batches of its own
    data with random crop and flip on the device, and the server averages the client models."""
    src = data.src
    model = build_model(job.model.name, src.input_shape, src.num_classes, job.model.params, job.model.init, job.seed)
    model = model.to(device)
    global_state = {k: v.clone() for k, v in model.state_dict().items()}
    images = src.train_x.to(device)
    labels = src.train_y.to(device)
    mean = torch.tensor(src.mean, device=device).view(1, -1, 1, 1)
    std = torch.tensor(src.std, device=device).view(1, -1, 1, 1)
    per_round = max(1, round(job.participation.rate * job.num_clients))
    members = [c.to(device) for c in data.clients[:per_round]]
    local, pad = job.local, job.dataset.augment.crop_padding

    def crop_flip(x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        padded = F.pad(x, (pad, pad, pad, pad))
        oy = torch.randint(0, 2 * pad + 1, (b,), device=device)
        ox = torch.randint(0, 2 * pad + 1, (b,), device=device)
        rows = (oy[:, None] + torch.arange(h, device=device))[:, :, None]
        cols = (ox[:, None] + torch.arange(w, device=device))[:, None, :]
        x = padded[torch.arange(b, device=device)[:, None, None], :, rows, cols].permute(0, 3, 1, 2)
        flip = torch.rand(b, device=device) < 0.5
        return torch.where(flip[:, None, None, None], x.flip(-1), x)

    def run() -> None:
        finals = []
        for member in members:
            model.load_state_dict(global_state)
            opt = torch.optim.SGD(model.parameters(), lr=local.lr, weight_decay=local.weight_decay)
            for _ in range(steps):
                idx = member[torch.randint(0, len(member), (local.batch_size,), device=device)]
                x = (crop_flip(images[idx].float().div_(255)) - mean) / std
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(x), labels[idx]).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), local.clip_norm)
                opt.step()
            finals.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        for k in global_state:
            global_state[k] = torch.stack([f[k].float() for f in finals]).mean(0).to(global_state[k].dtype)

    return run
