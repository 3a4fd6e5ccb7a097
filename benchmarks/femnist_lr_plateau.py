"""How long plain SGD keeps LEAF's FEMNIST CNN (GroupNorm) on the class-prior plateau, per lr.

The FedACG paper states no local lr / batch size for its FEMNIST table; this measures the choice
(see the `chosen` reason in suites/papers/fedacg.leaf.yaml). A plain PyTorch loop, no fedbench
engine: SGD, weight decay 1e-3, clip 10, batch 10, on the pooled training data; prints the mean
loss over each 50 steps next to the label entropy (the plateau value).

    FEDBENCH_DATA=/path/to/data python benchmarks/femnist_lr_plateau.py --lr 0.1 0.03 0.01

Recorded (femnist-leaf-sample: 105 writers, 14,708 examples; label entropy 3.353; 2 shared CPU
cores; loss = mean over the 50 steps ending at the step):
    step          100    200    300    400    500    550    600
    lr 0.1      3.489  3.496  3.356  3.350  3.277  2.908  2.670
    lr 0.03     3.462  3.464  3.075  2.361  1.819  1.693  1.525
    lr 0.01     3.447  3.387  2.537  2.014  1.702  1.632  1.468
lr 0.1 leaves the plateau only after ~500 steps, 0.01 after ~250: the FEMNIST suite runs lr 0.01.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import torch

from benchmark.data.source import load_dataset
from benchmark.models.registry import build_model


def label_entropy(y: torch.Tensor, classes: int) -> float:
    p = torch.bincount(y, minlength=classes).double() / len(y)
    p = p[p > 0]
    return float(-(p * p.log()).sum())


def run(x: torch.Tensor, y: torch.Tensor, lr: float, steps: int, batch: int, every: int = 50) -> list[float]:
    torch.manual_seed(0)
    model = build_model("femnist_cnn", (1, 28, 28), 62, {"norm": "group"}, "default", 0)
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=1e-3)
    gen = torch.Generator().manual_seed(0)
    losses, means = [], []
    for step in range(1, steps + 1):
        idx = torch.randint(len(y), (batch,), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        losses.append(loss.item())
        if step % every == 0:
            means.append(sum(losses[-every:]) / every)
            print(f"lr {lr:g} step {step}: mean loss {means[-1]:.3f}", flush=True)
    return means


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(os.environ.get("FEDBENCH_DATA", ".")))
    ap.add_argument("--lr", type=float, nargs="+", default=[0.1, 0.03, 0.01])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=10)
    args = ap.parse_args()
    src = load_dataset("femnist", {}, args.root)
    x, y = src.train_x.float().view(-1, 1, 28, 28), src.train_y
    h = label_entropy(y, 62)
    print(
        f"{len(y)} examples; label entropy {h:.3f} (the class-prior plateau); torch threads {torch.get_num_threads()}"
    )
    for lr in args.lr:
        means = run(x, y, lr, args.steps, args.batch)
        left = next((50 * (i + 1) for i, m in enumerate(means) if m < h - 0.3), None)
        print(
            f"lr {lr:g}: first 50-step mean below entropy − 0.3 at step {left or f'> {args.steps}'}"
            + ("" if not math.isfinite(means[-1]) else f"; last mean {means[-1]:.3f}")
        )


if __name__ == "__main__":
    main()
