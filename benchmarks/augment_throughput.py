"""Images/s of the batched augmentation (benchmark/engine/augment.py) vs a naive per-sample loop.

Both run in the same process on the same data: uint8 -> [0, 1] -> crop with padding -> flip
(-> rotation) -> normalise. The loop is what a Dataset.__getitem__ with tensor transforms does
per image; the ratio is the speed-up of doing one tensor program per batch.

    PYTHONPATH=$PWD python benchmarks/augment_throughput.py [--batch 512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from benchmark.engine import augment as aug
from benchmark.job.settings import AugmentConfig

MEAN, STD = torch.tensor((0.4914, 0.4822, 0.4465)), torch.tensor((0.2470, 0.2435, 0.2616))


def batched(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    return aug.normalise(aug.augment(x.float().div_(255), cfg, gen), MEAN, STD)


def per_sample(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    p, (_, _, h, w) = cfg.crop_padding, x.shape
    mean, std = MEAN.to(x.device).view(-1, 1, 1), STD.to(x.device).view(-1, 1, 1)
    out = []
    for img in x:
        img = F.pad(img.float().div(255), (p, p, p, p))
        top, left = (int(v) for v in torch.randint(0, 2 * p + 1, (2,), generator=gen, device=gen.device))
        img = img[:, top : top + h, left : left + w]
        if float(torch.rand(1, generator=gen, device=gen.device)) < 0.5:
            img = img.flip(-1)
        if cfg.rotate_degrees > 0:
            angle = (2 * float(torch.rand(1, generator=gen, device=gen.device)) - 1) * math.radians(cfg.rotate_degrees)
            img = aug.rotate(img[None], torch.tensor([angle], device=x.device))[0]
        out.append((img - mean) / std)
    return torch.stack(out)


def images_per_second(fn: Callable, x: torch.Tensor, cfg: AugmentConfig, repeats: int) -> float:
    gen = torch.Generator(device=x.device).manual_seed(0)
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    fn(x, cfg, gen)  # warm-up
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x, cfg, gen)
        sync()
        times.append(time.perf_counter() - start)
    return len(x) / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--size", type=int, default=32, help="square image side (CIFAR 32, Tiny-ImageNet 64)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU intra-op threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    configs = {
        "crop4+flip": AugmentConfig(crop_padding=4, flip=True),
        "crop4+flip+rot10": AugmentConfig(crop_padding=4, flip=True, rotate_degrees=10),
    }
    print(
        f"batch {args.batch} of 3x{args.size}x{args.size} uint8, torch {torch.__version__}, "
        f"{torch.get_num_threads()} CPU threads"
    )
    for device in devices:
        x = torch.randint(0, 256, (args.batch, 3, args.size, args.size), dtype=torch.uint8, device=device)
        for name, cfg in configs.items():
            fast = images_per_second(batched, x, cfg, args.repeats)
            slow = images_per_second(per_sample, x, cfg, args.repeats)
            print(
                f"{device:4s} {name:17s} batched {fast:12,.0f} img/s   per-sample loop {slow:10,.0f} img/s"
                f"   ratio {fast / slow:6.1f}x"
            )


if __name__ == "__main__":
    main()
