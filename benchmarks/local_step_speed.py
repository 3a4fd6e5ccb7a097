"""fedbench's local step vs a plain PyTorch loop doing the same steps, per step.

Three arms train one client for K steps from the same start on the same batches (FedAvg, the
Table-1 local settings: clip 10, weight decay 1e-3):
  fedbench      engine/local.py's train_client (flat parameters, in-place update; the fused
                low-rank step of engine/low_rank_step.py and channels-last convolutions
                (engine/memory_format.py) where the simulation would take them)
  plain         nn.Module parameters (NCHW, PyTorch's default), loss.backward(), clip_grad_norm_,
                torch.optim.SGD(weight_decay)
  out-of-place  the flat step as it was before issue 9 (clip, decay and step each a new tensor)
Runs are interleaved (arm order rotates) and the ratios are medians over the repeats.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/local_step_speed.py [--models femnist_cnn resnet18_gn]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from benchmark.engine import low_rank_step
from benchmark.engine.fed_data import Batch
from benchmark.engine.local import clip_by_norm, make_forward, train_client
from benchmark.engine.memory_format import channels_last_pays
from benchmark.fl.base import ClientContext, RoundInfo
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.job.settings import LocalTraining
from benchmark.models.registry import build_model

# model -> (input shape, classes, batch size, steps per timed run): the papers' settings
SETTINGS = {
    "femnist_cnn": ((1, 28, 28), 62, 10, 40),
    "resnet18_gn": ((3, 32, 32), 10, 50, 2),
}


def fedbench_arm(model, batches, local: LocalTraining):
    spec = ParamSpec.of(model)
    channels_last = channels_last_pays(model, torch.device("cpu"))  # as TrainingSetup decides
    forward, start = make_forward(model, spec, channels_last=channels_last), flat_params(model)
    low_rank = low_rank_step.choose("sequential", model, spec, [])  # as the sequential trainer does (engine/trainers/)
    low_rank = low_rank if isinstance(low_rank, low_rank_step.FusedStep) else None

    def run():
        rnd = RoundInfo(round=0, schedule=local.lr_schedule, num_clients=1, spec=spec)
        ctx = ClientContext(
            client_id=0,
            rnd=rnd,
            received={"model": start},
            num_samples=1,
            forward=forward,
            state={},
            class_counts=torch.ones(1),
        )
        return train_client(ctx, [], batches, local, low_rank)[0]

    return run


def out_of_place_arm(model, batches, local: LocalTraining):
    spec = ParamSpec.of(model)
    forward, start = make_forward(model, spec), flat_params(model)

    def run():
        w = start.clone()
        for b in batches:
            w.requires_grad_(True)
            (grad,) = torch.autograd.grad(F.cross_entropy(forward(w, b.x), b.y), w)
            with torch.no_grad():
                w = w.detach() - local.lr * (clip_by_norm(grad, local.clip_norm) + local.weight_decay * w)
        return w

    return run


def plain_arm(model, batches, local: LocalTraining):
    start = {k: v.clone() for k, v in model.state_dict().items()}

    def run():
        model.load_state_dict(start)
        opt = torch.optim.SGD(model.parameters(), lr=local.lr, weight_decay=local.weight_decay)
        for b in batches:
            opt.zero_grad()
            F.cross_entropy(model(b.x), b.y).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), local.clip_norm)
            opt.step()
        return flat_params(model)

    return run


def measure(name: str, repeats: int) -> dict[str, float]:
    shape, classes, batch, steps = SETTINGS[name]
    gen = torch.Generator().manual_seed(0)
    batches = [
        Batch(torch.randn(batch, *shape, generator=gen), torch.randint(0, classes, (batch,), generator=gen), 0)
        for _ in range(steps)
    ]
    local = LocalTraining(steps=steps, batch_size=batch, lr=0.05, weight_decay=1e-3, clip_norm=10.0)
    models = [
        build_model(name, shape, classes, {}, "default", seed=0) for _ in range(3)
    ]  # the plain arm writes its own
    arms = {
        a.__name__.removesuffix("_arm"): a(m, batches, local)
        for a, m in zip((fedbench_arm, plain_arm, out_of_place_arm), models)
    }
    finals = {k: run() for k, run in arms.items()}  # warm-up, and the three must do the same steps
    for k in ("plain", "out_of_place"):
        drift = (finals["fedbench"] - finals[k]).abs().max().item()  # float rounding, grown over the steps
        assert drift < 1e-2, f"{name}: fedbench ends {drift:.2e} away from {k}"
    times: dict[str, list[float]] = {k: [] for k in arms}
    order = list(arms)
    for r in range(repeats):
        for k in order[r % 3 :] + order[: r % 3]:
            t0 = time.perf_counter()
            arms[k]()
            times[k].append((time.perf_counter() - t0) / steps)
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(times[a], times[b]))  # noqa: E731
    return {
        "params": ParamSpec.of(models[0]).total,
        "ms_fedbench": 1e3 * statistics.median(times["fedbench"]),
        "ms_plain": 1e3 * statistics.median(times["plain"]),
        "vs_plain": ratio("fedbench", "plain"),
        "vs_out_of_place": ratio("fedbench", "out_of_place"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(
        f"{'model':<12} {'params':>10} {'fedbench ms/step':>17} {'plain ms/step':>14} {'fedbench/plain':>15} "
        f"{'fedbench/out-of-place':>22}"
    )
    for name in args.models:
        m = measure(name, args.repeats)
        print(
            f"{name:<12} {m['params']:>10,} {m['ms_fedbench']:>17.2f} {m['ms_plain']:>14.2f} {m['vs_plain']:>14.2f}x "
            f"{m['vs_out_of_place']:>21.2f}x"
        )


if __name__ == "__main__":
    main()
