"""Evaluation of a test set: fedbench's `evaluate` (flat parameters through functional_call, accuracy and loss
in one pass) against a plain PyTorch loop (the module itself, eval mode, inference mode, same batches), and
the last round's per-user evaluation (`evaluate_by_group`: the same pass, hits counted per user) against
the pooled `evaluate`.

Random inputs of the test sets' shapes (the time does not depend on the values): the Shakespeare LSTM
(sequences of 80 symbol ids) and the FEMNIST CNN (28x28 images); the test examples belong to `--users`
users in contiguous blocks, as the LEAF loaders stack them. The three arms take turns within each repeat
(the order rotating); the median ratios fedbench / plain and by-user / pooled are printed (below 1.0:
the first is faster).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/eval_speed.py [--samples 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from benchmark.engine.fed_data import as_is
from benchmark.engine.local import evaluate, evaluate_by_group, make_forward
from benchmark.engine.memory_format import channels_last_pays
from benchmark.fl.flat import ParamSpec, flat_params
from benchmark.models.registry import build_model

# model -> (input maker(n, generator), classes)
INPUTS = {
    "shakespeare_lstm": (lambda n, g: torch.randint(0, 80, (n, 80), generator=g), 80),
    "femnist_cnn": (lambda n, g: torch.randn(n, 1, 28, 28, generator=g), 62),
}


def plain_evaluate(model, x, y, batch_size: int) -> tuple[float, float]:
    model.eval()
    correct, loss = 0, 0.0
    with torch.inference_mode():
        for i in range(0, len(y), batch_size):
            logits = model(x[i : i + batch_size])
            correct += int((logits.argmax(1) == y[i : i + batch_size]).sum())
            loss += float(F.cross_entropy(logits, y[i : i + batch_size], reduction="sum"))
    return 100.0 * correct / len(y), loss / len(y)


def measure(name: str, samples: int, repeats: int, batch_size: int, users: int) -> dict:
    make, classes = INPUTS[name]
    gen = torch.Generator().manual_seed(0)
    x, y = make(samples, gen), torch.randint(0, classes, (samples,), generator=gen)
    owner = torch.randint(0, users, (samples,), generator=gen).sort().values  # each user's examples together
    model = build_model(name, tuple(x.shape[1:]), classes, {}, "default", seed=0)
    spec = ParamSpec.of(model)
    channels_last = channels_last_pays(model, torch.device("cpu"))  # as TrainingSetup decides
    forward, theta = make_forward(model, spec, channels_last=channels_last), flat_params(model)
    arms = {
        "fedbench": lambda: evaluate(forward, theta, x, y, as_is),
        "by-user": lambda: evaluate_by_group(forward, theta, x, y, as_is, owner)[:2],
        "plain": lambda: plain_evaluate(model, x, y, batch_size),
    }
    results = {k: arm() for k, arm in arms.items()}  # warm-up, and all must agree
    (acc_f, loss_f), (acc_p, loss_p) = results["fedbench"], results["plain"]
    assert abs(acc_f - acc_p) < 1e-9 and abs(loss_f - loss_p) < 1e-4 * max(1.0, abs(loss_p)), results
    assert results["by-user"] == results["fedbench"], results  # the same pass, the same kernels
    times: dict[str, list[float]] = {k: [] for k in arms}
    for r in range(repeats):
        for k in list(arms)[r % 3 :] + list(arms)[: r % 3]:
            start = time.perf_counter()
            arms[k]()
            times[k].append(time.perf_counter() - start)
    return {
        "fedbench_s": statistics.median(times["fedbench"]),
        "plain_s": statistics.median(times["plain"]),
        "by_user_s": statistics.median(times["by-user"]),
        "ratio": statistics.median(f / p for f, p in zip(times["fedbench"], times["plain"])),
        "by_user_ratio": statistics.median(u / f for u, f in zip(times["by-user"], times["fedbench"])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=list(INPUTS), choices=list(INPUTS))
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=2048, help="the plain loop's batch (fedbench chooses its own)")
    ap.add_argument("--users", type=int, default=100, help="users the test examples belong to (by-user arm)")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}")
    for name in args.models:
        m = measure(name, args.samples, args.repeats, args.batch_size, args.users)
        print(
            f"{name:<18} {args.samples} samples: fedbench {m['fedbench_s']:.3f} s, plain {m['plain_s']:.3f} s, "
            f"ratio {m['ratio']:.2f}x; by {args.users} users {m['by_user_s']:.3f} s, "
            f"by-user / pooled {m['by_user_ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
