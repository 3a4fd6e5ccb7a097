"""The FedAc authors' 32,190 released runs (their three `out/*_summary.csv`, every row seed 1,
T = 4,096, batch 1) as one suite that replays each of them with their sample stream
(`split.samples: authors_numpy`), and the rows the replay record is matched against."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from benchmark.papers.fedac_authors import ALG, AUTHORS_BETA, AUTHORS_BETA_METHOD, summary_file

LAMBDAS = (1e-2, 1e-3, 1e-4)  # the λ of the released files
T, EVAL_STEPS = 4096, 512  # every released run's T and record_intvl
# the authors' alg number -> fedbench's method (FedAc-II with the β of their code)
METHODS = {-1: "fedac_vanilla", 0: "fedavg", 1: "fedac1", 2: AUTHORS_BETA_METHOD, 3: "mbsgd", 4: "mbacsgd"}
LABELS = {alg: AUTHORS_BETA if alg == 2 else ALG[alg] for alg in METHODS}  # the label fedbench gives each


@dataclass(frozen=True)
class Released:
    """One row of the authors' files: a run of their logistic.py."""

    runid: str
    lam: float
    alg: int
    eta: float
    workers: int
    steps: int
    final_loss: float  # F(w) on the whole training set after T steps; nan or inf: diverged

    @property
    def key(self) -> tuple[str, float, float, int, int]:
        """What identifies the job replaying it: (method label, λ, η, M, K)."""
        return LABELS[self.alg], self.lam, self.eta, self.workers, self.steps


def released_runs(reference: Path) -> list[Released]:
    """Every row of the three files, in file order (duplicated rows included: each is a run)."""
    runs = []
    for lam in LAMBDAS:
        with summary_file(reference, lam).open() as f:
            for row in csv.DictReader(f):
                if (int(row["T"]), int(row["local_batch"]), int(row["seed"])) != (T, 1, 1):
                    raise ValueError(
                        f"{row['runid']}: T, local_batch, seed = {row['T']}, {row['local_batch']}, "
                        f"{row['seed']}; the replay suite assumes 4096, 1, 1"
                    )
                runs.append(
                    Released(
                        row["runid"],
                        lam,
                        int(row["alg"]),
                        float(row["eta"]),
                        int(row["M"]),
                        int(row["K"]),
                        float(row["final_loss"]),
                    )
                )
    return runs


def replay_suite(reference: Path) -> dict | None:
    """The suite: a dataset entry per (λ, K, η) the files hold, every method and M as grids (the
    schema has no per-entry method list, so an entry runs all six methods at all 14 M: a superset
    of the released runs, each of which is one of its jobs); None without the files."""
    if not all(summary_file(reference, lam).is_file() for lam in LAMBDAS):
        return None
    runs = released_runs(reference)
    points = sorted({(r.lam, r.steps, r.eta) for r in runs}, key=lambda p: (-p[0], p[1], p[2]))
    return {
        "name": "fedac.authors_replay",
        "description": "the FedAc authors' released runs (a9a, lambda = 1e-2, 1e-3, 1e-4; seed 1, T = 4096) "
        "replayed with their w0 and sample stream, each to be matched with its released final loss",
        "defaults": {
            "seeds": [1],
            "participation": {"mode": "fixed", "rate": 1.0},
            "model": {"name": "binary_logistic", "init": "normal_numpy"},
            "local": {"batch_size": 1, "clip_norm": None},
            "suboptimality": True,
        },
        "datasets": [
            {
                "name": "a9a",
                "label": entry_label(lam, k),
                "split": {"kind": "shared", "samples": "authors_numpy"},
                "rounds": T // k,
                "eval_every": max(1, EVAL_STEPS // k),
                "local": {"steps": k, "epochs": None, "lr": eta, "weight_decay": lam},
            }
            for lam, k, eta in points
        ],
        "methods": list(METHODS.values()),
        "grid": {"num_clients": sorted({r.workers for r in runs})},
    }


def entry_label(lam: float, k: int) -> str:
    """Shared by the entries of every η at (λ, K): `--only` selects them together (a batch)."""
    return f"a9a lambda={lam:.0e} K={k}"
