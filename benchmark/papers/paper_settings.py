"""What each paper states for a reference table, as job-config settings, per method.

`stated(table, paper, labels)` turns a reference table's `setting:` (plus the paper-wide text the
tables leave out) into `{"all": {path: value}, method label: {path: value}}`, with dotted
job-config paths (`local.batch_size`, `method.client.fedcm.alpha`). Every setting key must have
a rule here and every free-text value must be one this module knows how to read: anything else
is a GenerationError, never a default. `chosen(...)` lists what the suites pick where a paper is
silent, each with its reason. `fedbench plan --audit` compares both with the jobs.
"""

from __future__ import annotations

import math
import re

from benchmark.metrics import EMA_DECAY


class GenerationError(Exception):
    """A reference table carries something the generator cannot express."""


# reference dataset -> (fedbench dataset, model, augmentation, training examples, the paper's model names)
DATASET = {
    "cifar10": ("cifar10", "resnet18_gn", {"crop_padding": 4, "flip": True}, 50000),
    "cifar100": ("cifar100", "resnet18_gn", {"crop_padding": 4, "flip": True}, 50000),
    "tiny_imagenet": ("tiny_imagenet", "resnet18_gn", {"crop_padding": 4, "flip": True}, 100000),
    "femnist": ("femnist", "femnist_cnn", {}, None),
    "celeba": ("celeba", "celeba_cnn", {}, None),
    "shakespeare": ("shakespeare", "shakespeare_lstm", {}, None),
}
MODEL_TEXT = {
    "ResNet-18 (BatchNorm replaced by GroupNorm)": "resnet18_gn",
    "2-layer CNN": "femnist_cnn",
    "4-layer CNN": "celeba_cnn",
    "LSTM": "shakespeare_lstm",
}
SHAKESPEARE_USERS = 660  # LEAF Shakespeare after its sample split (the paper leaves N open)

# Free-text settings of the reference tables: text -> (value for every method, {method label: value}).
# `setting_name` conditions (FedCM's settings I / II) are read from the table.
TEXT_VALUES = {
    "0.998 (FedDyn 0.9995)": lambda t: (0.998, {"FedDyn": 0.9995}),
    "0.998 (FedDyn 0.999)": lambda t: (0.998, {"FedDyn": 0.999}),
    "1.0 (FedAdam 0.1)": lambda t: (1.0, {"FedAdam": 0.1}),
    "2 (FedCM in setting II: 5)": lambda t: (2, {"FedCM": 5} if t["setting"].get("setting_name") == "II" else {}),
    "50 for FedCM and FedAdam, 20 for others": lambda t: (20, {"FedCM": 50, "FedAdam": 50}),
    "0.1 for setting I Dirichlet-0.6, 0.05 otherwise": lambda t: (
        0.1 if (t["setting"].get("setting_name"), t["setting"].get("alpha")) == ("I", 0.6) else 0.05,
        {},
    ),
}


def _per_method(table: dict, key: str):
    value = table["setting"][key]
    if isinstance(value, (int, float)):
        return value, {}
    if value not in TEXT_VALUES:
        raise GenerationError(
            f"{table['id']}: setting {key}: {value!r} is free text the generator cannot read; "
            "add it to TEXT_VALUES in benchmark/papers/paper_settings.py"
        )
    return TEXT_VALUES[value](table)


# Paper-wide statements the tables' `setting:` blocks leave out, with where they are written.
PAPER_TEXT = {
    "fedacg": (
        "002:139 (clients drawn per round), 002:224-225 (Appendix: local setup), 002:227 (baselines' "
        "hyper-parameters), 000 Appendix A",
        {
            "all": {
                "participation.mode": "fixed",
                "local.lr": 0.1,
                "local.weight_decay": 0.001,
                "method.server.global_lr": 1.0,
            },
            "FedAdam": {"method.server.global_lr": 0.01, "method.server.tau": 0.001},
            "FedDC": {"method.client.feddc.alpha": 0.01},
            "MOON": {"method.client.moon.mu": 1.0},
            "FedProx": {"method.client.prox.mu": 0.001},
            "FedNTD": {"method.client.ntd.beta": 0.3},
            "FedDecorr": {"method.client.decorr.beta": 0.01},
        },
    ),
    "fedagm": (
        "001:555-565 (5.1 implementation details)",
        {
            "all": {
                "participation.mode": "fixed",
                "local.lr": 0.1,
                "local.weight_decay": 0.001,
                "local.epochs": 5,
                "method.server.global_lr": 1.0,
            },
            "FedAdam": {"method.server.global_lr": 0.01},
        },
    ),
    "fedcm": (
        "004:249 (sampling), 004:640-646 (Appendix C: hyper-parameters)",
        {
            "all": {"participation.mode": "bernoulli", "local.lr": 0.1, "local.weight_decay": 0.001},
            # FedAdam's α = 0.1 is its first-moment weight (β1 = 1 − α); τ = 0.01; η_g multiplies η_l·K
            "FedAdam": {"method.server.per_step": True, "method.server.beta1": 0.9, "method.server.tau": 0.01},
        },
    ),
}


LEAF_SILENT = ("local.lr", "local.weight_decay", "local.epochs")


def fedcm_text_by_table(table: dict) -> dict:
    """FedCM Appendix C (004:644-646): FedDyn's α is 0.01, except CIFAR-100 setting II (0.001)."""
    s = table["setting"]
    alpha = 0.001 if (s["dataset"], s.get("setting_name")) == ("cifar100", "II") else 0.01
    return {"FedDyn": {"method.server.alpha": alpha, "method.client.dyn.alpha": alpha}}


# The metric each paper's `acc@R` means (reference conventions): FedCM reports the raw accuracy.
ACC_METRIC = {"fedacg": "acc", "fedagm": "acc", "fedcm": "acc_raw"}


def paper_of(table_id: str) -> str:
    return table_id.split(".")[0].removesuffix("_iclr")


def stated(table: dict, labels: dict[str, str]) -> dict[str, dict]:
    """{"all": {...}, label: {...}} for this table; `labels` maps row label -> suite method label."""
    s, tid = table["setting"], table["id"]
    paper = paper_of(tid)
    text = PAPER_TEXT[paper][1]
    out: dict[str, dict] = {k: dict(v) for k, v in text.items()}
    if paper == "fedcm":
        for label, values in fedcm_text_by_table(table).items():
            out.setdefault(label, {}).update(values)
    common = out["all"]
    if s["split"] == "leaf_natural":  # the papers' lr and weight decay are stated for CIFAR / Tiny-ImageNet only
        for path in LEAF_SILENT:
            common.pop(path, None)

    def put(path: str, key: str):
        base, by_method = _per_method(table, key)
        common[path] = base
        for label, value in by_method.items():
            out.setdefault(label, {})[path] = value

    for key, value in s.items():
        rule = SETTING_RULES.get(key)
        if rule is None:
            raise GenerationError(
                f"{tid}: setting {key!r} has no rule in benchmark/papers/paper_settings.py "
                "(SETTING_RULES); the generator must not drop it"
            )
        rule(table, value, common, put)
    return {k: v for k, v in out.items() if k == "all" or k in labels.values()}


def _dataset(t, v, common, put):
    common["dataset.name"], common["model.name"] = DATASET[v][0], DATASET[v][1]


def _model(t, v, common, put):
    if MODEL_TEXT.get(v) != DATASET[t["setting"]["dataset"]][1]:
        raise GenerationError(f"{t['id']}: model {v!r} is not the model fedbench runs for {t['setting']['dataset']}")


def _split(t, v, common, put):
    kinds = {"iid": "iid", "dirichlet": "dirichlet", "leaf_natural": "natural"}
    if v not in kinds:
        raise GenerationError(f"{t['id']}: split {v!r} has no fedbench split kind")
    common["dataset.split.kind"] = kinds[v]


def _ema(t, v, common, put):
    if v != EMA_DECAY:
        raise GenerationError(f"{t['id']}: EMA smoothing {v} differs from fedbench's {EMA_DECAY} (metrics.py)")


def _sampling(t, v, common, put):
    m = re.fullmatch(r"each client active independently with probability ([0-9.]+)", v)
    if not m or float(m.group(1)) != t["setting"]["participation"]:
        raise GenerationError(
            f"{t['id']}: client_sampling {v!r} is not 'each client active independently with "
            "probability <participation>'"
        )
    common["participation.mode"] = "bernoulli"


def _per_round(t, v, common, put):
    common["participation.per_round"] = v


def _samples_per_client(t, v, common, put):
    size = DATASET[t["setting"]["dataset"]][3]
    if size is None or size // t["setting"]["num_clients"] != v:
        raise GenerationError(f"{t['id']}: samples_per_client {v} ≠ training set / num_clients")


def _iterations(t, v, common, put):
    common["local.iterations"] = v


def _ignore(t, v, common, put):
    """Read elsewhere (setting_name conditions the free-text rules; the draft's count is a header note)."""


SETTING_RULES = {
    "dataset": _dataset,
    "model": _model,
    "split": _split,
    "alpha": lambda t, v, common, put: common.__setitem__("dataset.split.alpha", v),
    "num_clients": lambda t, v, common, put: v is not None and common.__setitem__("num_clients", v),
    "participation": lambda t, v, common, put: common.__setitem__("participation.rate", v),
    "clients_per_round": _per_round,
    "expected_clients_per_round": _per_round,
    "client_sampling": _sampling,
    "candidate_pool": lambda t, v, common, put: common.__setitem__("participation.pool.size", v),
    "pool_resample_every_rounds": lambda t, v, common, put: common.update(
        {"participation.pool.every": v, "participation.pool.mode": "resample"}
    ),
    "rounds": lambda t, v, common, put: common.__setitem__("rounds", v),
    "ema_smoothing": _ema,
    "samples_per_client": _samples_per_client,
    "local_iterations": _iterations,
    "local_epochs": lambda t, v, common, put: put("local.epochs", "local_epochs"),
    "batch_size": lambda t, v, common, put: put("local.batch_size", "batch_size"),
    "local_lr": lambda t, v, common, put: put("local.lr", "local_lr"),
    "weight_decay": lambda t, v, common, put: put("local.weight_decay", "weight_decay"),
    "lr_decay": lambda t, v, common, put: put("local.lr_decay", "lr_decay"),
    "global_lr": lambda t, v, common, put: put("method.server.global_lr", "global_lr"),
    "fedcm_alpha": lambda t, v, common, put: put("method.client.fedcm.alpha", "fedcm_alpha"),
    "setting_name": _ignore,
    "clients_per_round_iclr_draft": _ignore,
}


def derived_batch_size(table: dict, epochs: int, iterations: int) -> int:
    """FedAGM 001:562: "the batch size is set so that the total iteration for local updates is K":
    the smallest B with epochs·⌈n/B⌉ = K for n = training examples per client."""
    s = table["setting"]
    n = DATASET[s["dataset"]][3] // s["num_clients"]
    steps = iterations // epochs
    b = math.ceil(n / steps)
    if iterations % epochs or math.ceil(n / b) != steps:
        raise GenerationError(f"{table['id']}: no batch size gives {iterations} iterations in {epochs} epochs of {n}")
    return b


def iterations_of(dataset: str, num_clients: int, local: dict) -> int | None:
    """Local steps per round a job runs (balanced splits of a known training set), or None."""
    if local.get("steps"):
        return local["steps"]
    size = next((d[3] for d in DATASET.values() if d[0] == dataset), None)
    if size is None:
        return None
    return local["epochs"] * math.ceil((size // num_clients) / local["batch_size"])
