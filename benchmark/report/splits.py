"""`fedbench plan --splits`: per-client sizes and label histograms of each distinct split."""

from __future__ import annotations

import torch
from rich.markup import escape
from rich.table import Table

from benchmark.engine.setup import federated_data
from benchmark.suite.expand import Job


def label_skew(hist: torch.Tensor) -> float:
    """Mean total-variation distance between each client's label distribution and the global one."""
    p = hist / hist.sum(1, keepdim=True).clamp(min=1)
    g = hist.sum(0) / hist.sum()
    return float(0.5 * (p - g).abs().sum(1).mean())


def histogram_text(counts: torch.Tensor, top: int = 6) -> str:
    order = torch.argsort(counts, descending=True, stable=True)
    shown = [f"{int(c)}:{int(counts[c])}" for c in order[:top] if counts[c] > 0]
    rest = int((counts > 0).sum()) - len(shown)
    return " ".join(shown) + (f" (+{rest} classes)" if rest > 0 else "")


def split_tables(jobs: list[Job], max_clients: int) -> list[Table]:
    tables, seen = [], set()
    for job in jobs:
        c = job.config
        key = (c.dataset.model_dump_json(exclude={"label", "reference"}), c.num_clients)
        if key in seen:
            continue
        seen.add(key)
        data = federated_data(c)
        hist = torch.stack([data.class_counts(i) for i in range(data.num_clients)]).float()
        sizes = hist.sum(1)
        split = c.dataset.split
        title = (f"{job.dataset_label}: {split.kind}" + (f"(α={split.alpha})" if split.alpha else "")
                 + f", split seed {split.seed}, {data.num_clients} clients — sizes min {int(sizes.min())} / "
                 f"mean {float(sizes.mean()):.1f} / max {int(sizes.max())}, label skew (mean TV) {label_skew(hist):.3f}")
        table = Table(title=escape(title))
        for col in ("client", "size", "classes", "label histogram (class:count, most frequent first)"):
            table.add_column(col)
        for i in range(min(max_clients, data.num_clients)):
            table.add_row(str(i), str(int(sizes[i])), str(int((hist[i] > 0).sum())), histogram_text(hist[i]))
        if data.num_clients > max_clients:
            table.add_row("…", f"{data.num_clients - max_clients} more", "", "(--max-clients to show more)")
        tables.append(table)
    return tables
