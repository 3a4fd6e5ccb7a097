"""The names a job answers to in `--only NAME` and `--set NAME:PATH=VALUE`: its id, method label
(with or without its `[grid]` suffix), dataset label, or `dataset/method`; exact, case-insensitive."""

from __future__ import annotations

from benchmark.errors import UserError
from benchmark.suggest import allowed_names


def label_names(method_label: str, dataset_label: str) -> set[str]:
    names = {method_label, method_label.split("[")[0], dataset_label, f"{dataset_label}/{method_label}"}
    return {n.lower() for n in names}


def matches_no_job(option: str, name: str, labels) -> UserError:
    return UserError(
        f"{option} {name!r} matches no job of this suite (a job id, method or dataset label); "
        + allowed_names(name, labels)
        + " (see `fedbench plan`)"
    )
