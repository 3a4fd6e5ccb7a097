"""`fedbench plan --splits`: per-client sizes and label histograms of each distinct split."""

from __future__ import annotations

from pathlib import Path

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


def label_counts(data) -> torch.Tensor:
    """Clients × classes sample counts of a FederatedData."""
    return torch.stack([data.class_counts(i) for i in range(data.num_clients)]).float()


def distinct_splits(jobs: list[Job]):
    """(data, clients × classes counts, title) for each distinct split of `jobs`, loading each once."""
    seen = set()
    for job in jobs:
        c = job.config
        key = (c.dataset.model_dump_json(exclude={"label", "reference"}), c.num_clients)
        if key in seen:
            continue
        seen.add(key)
        data = federated_data(c)
        hist = label_counts(data)
        sizes = hist.sum(1)
        split = c.dataset.split
        title = (
            f"{job.dataset_label}: {split.kind}"
            + (f"(α={split.alpha})" if split.alpha else "")
            + f", split seed {split.seed}, {data.num_clients} clients — sizes min {int(sizes.min())} / "
            f"mean {float(sizes.mean()):.1f} / max {int(sizes.max())}, label skew (mean TV) {label_skew(hist):.3f}"
        )
        yield data, hist, title


def split_tables(jobs: list[Job], max_clients: int) -> list[Table]:
    tables = []
    for data, hist, title in distinct_splits(jobs):
        sizes = hist.sum(1)
        table = Table(title=escape(title))
        for col in ("client", "size", "classes", "label histogram (class:count, most frequent first)"):
            table.add_column(col)
        for i in range(min(max_clients, data.num_clients)):
            table.add_row(str(i), str(int(sizes[i])), str(int((hist[i] > 0).sum())), histogram_text(hist[i]))
        if data.num_clients > max_clients:
            table.add_row("…", f"{data.num_clients - max_clients} more", "", "(--max-clients to show more)")
        tables.append(table)
    return tables


def split_figures(jobs: list[Job], out_dir: Path) -> list[Path]:
    """A PNG of the label distribution per client for each distinct split, numbered in suite order."""
    from benchmark.report.figure_output import save_figure
    from benchmark.report.figures import file_slug, label_distribution_figure

    return [
        save_figure(
            label_distribution_figure(hist.numpy(), title.replace(" — ", "\n")),
            Path(out_dir) / f"split-{n}-{file_slug(title.split(':')[0])}.png",
        )
        for n, (_, hist, title) in enumerate(distinct_splits(jobs), 1)
    ]
