"""The per-client accuracy figure of an entry whose jobs recorded it (natural users: LEAF, synthetic):
per method, at the setting its table shows, the empirical distribution function of the users' test
accuracy at the last round, every finished seed's users pooled (so a user counts once per seed).
Read across at 0.1 / 0.5 / 0.9 for the pooled percentiles (the table's client acc p10 / p50 / p90
average each seed's). PNG, PDF and SVG at the report's figure width, no baked-in title (figure_output.py),
a method in the style it has in every other figure.
"""

from __future__ import annotations

from pathlib import Path

from benchmark.store.job_dir import JobDir
from benchmark.store.job_status import FINISHED
from benchmark.store.layout import Store

CAPTION = (
    "{entry}: per-client test accuracy at the last round, raw — the share of users (y) whose accuracy is at most "
    "x, per method at the setting its table shows, the users of every finished seed pooled ({seeds}); dotted "
    "lines at 0.1, 0.5 and 0.9: where the pooled users' 10th, 50th and 90th percentiles are read (the table "
    "averages each seed's)"
)


def client_accuracies(runs, store: Store) -> dict[str, list[list[float]]]:
    """method -> per finished job of it in `runs` (a jobs_frame) its users' accuracies; methods
    without any client_acc.json are left out."""
    out: dict[str, list[list[float]]] = {}
    for job in runs[runs.status == FINISHED].itertuples():
        if (recorded := JobDir.for_reading(store, job.job_id).read_client_accuracy()) is not None:
            out.setdefault(job.method, []).append(list(recorded.accuracy.values()))
    return out


def _label(method: str, per_job: list[list[float]]) -> str:
    users = {len(v) for v in per_job}
    count = f"{users.pop()} users" if len(users) == 1 else f"{sum(map(len, per_job))} user values"
    return f"{method} ({count} × {len(per_job)} seeds)" if len(per_job) > 1 else f"{method} ({count})"


def client_accuracy_figure(accuracies: dict[str, list[list[float]]], styles: dict[str, dict], width: float):
    """One panel `width` inches wide: a step line per method (the empirical distribution function of its
    users' accuracies over its seeds)."""
    from benchmark.report.figure_output import paper_style

    with paper_style():
        return _client_accuracy_figure(accuracies, styles, width)


def _client_accuracy_figure(accuracies, styles, width):
    import numpy as np
    from matplotlib.figure import Figure

    from benchmark.report.figure_output import legend_columns, legend_height, legend_widest

    widest = legend_widest([_label(method, per_job) for method, per_job in accuracies.items()], width)
    fig = Figure(
        figsize=(width, min(width * 0.55, 3.0) + 0.4 + legend_height(len(accuracies), widest)), layout="constrained"
    )
    ax = fig.subplots()
    for method, per_job in accuracies.items():
        x = np.sort(np.concatenate([np.asarray(v, dtype=float) for v in per_job]))
        share = np.arange(len(x) + 1) / len(x)  # from 0 below the lowest accuracy up to 1 at the highest
        ax.step(np.r_[x[0], x], share, where="post", label=_label(method, per_job), **styles[method])
    for q in (0.1, 0.5, 0.9):
        ax.axhline(q, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("client test accuracy at the last round, raw (%)")
    ax.set_ylabel("share of clients with at most this accuracy")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    fig.legend(loc="outside lower center", ncol=legend_columns(len(handles), widest), frameon=False)
    return fig


def write_client_figure(runs, store: Store, out: Path, styles: dict[str, dict], width: float) -> Path | None:
    """The figure of one entry's shown jobs (`runs`) at `out` (PNG, and PDF and SVG beside it), `width`
    inches wide; None where no job recorded per-client accuracy."""
    from benchmark.report.figure_output import save_figure

    accuracies = client_accuracies(runs, store)
    if not accuracies:
        return None
    return save_figure(client_accuracy_figure(accuracies, styles, width), out)
