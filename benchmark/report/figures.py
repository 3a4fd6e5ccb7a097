"""The report's figures (matplotlib, PNG): convergence per dataset entry (test accuracy against
round, bytes communicated and training time; a line per setting, mean and min–max band over
seeds, diverged runs marked) and a split's label distribution per client.

Figures are drawn on `matplotlib.figure.Figure` with the Agg canvas, never through pyplot: no
global backend switch, no figure registry to leak. matplotlib is imported inside the functions
(it is slow to import and only `report` and `plan --figures` need it).
"""

from __future__ import annotations

import re
from pathlib import Path

from benchmark.run.job_status import DIVERGED

BAND_LABEL = "band: min–max over seeds"
DIVERGED_LABEL = "×: last finite round of a diverged run"
ACC_LABEL = "test accuracy (%)"
# (frame column, axis label, scale): bytes on a log axis, so compressed and full-precision methods both read
X_AXES = (
    ("round", "round", "linear"),
    ("bytes", "bytes communicated (down + up, cumulative)", "log"),
    ("wall_s", "training time (s, cumulative)", "linear"),
)
MAX_CLIENTS_SHOWN = 100
MAX_CLASSES_STACKED = 20  # more classes than distinguishable colours: a heat map instead of stacked bars
DPI = 110


def method_colours(methods) -> dict[str, tuple]:
    """A colour per method, in the order given (tab10, then tab20's lighter shades): build it once
    over a whole report so a method has the same colour in every figure."""
    from matplotlib import colormaps

    palette = list(colormaps["tab10"].colors) + list(colormaps["tab20"].colors[1::2])
    return {m: palette[i % len(palette)] for i, m in enumerate(dict.fromkeys(methods))}


def file_slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "entry"


def save_figure(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)  # a pyplot-free Figure renders PNG with the Agg canvas
    return path


def _seed_stats(runs, x: str):
    """Per evaluated round over the seeds that reached it: mean x, and mean / min / max accuracy."""
    stats = runs.groupby("round").agg(
        x=(x, "mean"),
        mean=("test_acc", "mean"),
        low=("test_acc", "min"),
        high=("test_acc", "max"),
        n=("test_acc", "size"),
    )
    return stats.dropna(subset=["x", "mean"])


def _line_label(method: str, setting: str, several: bool, runs) -> str:
    label = setting if several else method
    seeds, diverged = runs.job_id.nunique(), runs[runs.status == DIVERGED].job_id.nunique()
    if diverged:
        label += " (diverged)" if diverged == seeds else f" (diverged {diverged}/{seeds} seeds)"
    return label


def _plot_setting(ax, runs, x: str, colour, style: str, label: str) -> None:
    stats = _seed_stats(runs, x)
    if stats.empty:
        return
    ax.plot(stats.x, stats["mean"], color=colour, linestyle=style, linewidth=1.6, label=label)
    if (stats.n > 1).any():
        ax.fill_between(stats.x, stats.low, stats.high, color=colour, alpha=0.18, linewidth=0)
    for _, run in runs[runs.status == DIVERGED].groupby("job_id"):
        last = run.sort_values("round").iloc[-1]
        ax.plot([last[x]], [last.test_acc], marker="x", markersize=9, markeredgewidth=2, color=colour, linestyle="none")


def _bytes_ticks(ax, values) -> None:
    """Log-axis ticks in B / kB / MB; within less than two decades also the 2× and 5× minor ticks
    (else a short axis would carry one label or none)."""
    import math

    from matplotlib.ticker import EngFormatter, FuncFormatter, NullFormatter

    eng = EngFormatter(unit="B")
    ax.xaxis.set_major_formatter(eng)
    positive = values[values > 0]
    if len(positive) and math.log10(positive.max() / positive.min()) < 2:

        def minor(value, _):
            mantissa = value / 10 ** math.floor(math.log10(value))
            return eng(value) if round(mantissa) in (2, 5) else ""

        ax.xaxis.set_minor_formatter(FuncFormatter(minor))
    else:
        ax.xaxis.set_minor_formatter(NullFormatter())


def legend_columns(entries: int, widest: int = 6) -> int:
    """Rows as even as possible, at most `widest` entries each: 5 entries in one row, not 4 + a stray one
    (matplotlib fills a legend column by column)."""
    rows = -(-entries // widest)
    return max(1, -(-entries // max(rows, 1)))


def convergence_figure(rounds, title: str, colours: dict[str, tuple]):
    """One entry's figure: three panels (accuracy against round, bytes, training time); a line
    per setting (the method's name when it has one setting in the entry), coloured by method,
    dashed/dotted for a method's further settings. `rounds` has rounds_frame's columns."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(15, 4.8), layout="constrained")
    axes = fig.subplots(1, len(X_AXES), sharey=True)
    settings_of = rounds.groupby("method", sort=False).setting.unique()
    for setting, runs in rounds.groupby("setting", sort=False):
        method = runs.method.iloc[0]
        position = list(settings_of[method]).index(setting)
        style = ("-", "--", ":", "-.")[position % 4]
        label = _line_label(method, setting, len(settings_of[method]) > 1, runs)
        for ax, (x, _, _) in zip(axes, X_AXES):
            _plot_setting(ax, runs, x, colours[method], style, label)
    for ax, (x, xlabel, scale) in zip(axes, X_AXES):
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        if not ax.lines:
            ax.text(0.5, 0.5, f"no {x} recorded", transform=ax.transAxes, ha="center", va="center", color="grey")
            continue
        ax.set_xscale(scale)
        if x == "round":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if x == "bytes":
            _bytes_ticks(ax, rounds.bytes)
    axes[0].set_ylabel(ACC_LABEL)
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Patch(color="grey", alpha=0.3, label=BAND_LABEL))
    if (rounds.status == DIVERGED).any():
        handles.append(
            Line2D([], [], marker="x", markeredgewidth=2, color="grey", linestyle="none", label=DIVERGED_LABEL)
        )
    fig.legend(handles=handles, loc="outside lower center", ncol=legend_columns(len(handles)), frameon=False)
    fig.suptitle(f"{title}\nlines: mean over the seeds that reached each evaluated round")
    return fig


def write_convergence_figures(frame, out_dir) -> list[tuple[str, Path]]:
    """A PNG per dataset entry of `frame` (rounds_frame's columns) under `out_dir`, as (entry, path);
    a method has the same colour in all of them, entries without rounds get no file, and an optional
    `entry_index` column keeps apart two entries that share a label."""
    out_dir = Path(out_dir)
    frame = frame.dropna(subset=["test_acc"])
    colours = method_colours(frame.method)
    keys = ["entry_index", "entry"] if "entry_index" in frame else ["entry"]  # two entries may share a label
    written: list[tuple[str, Path]] = []
    for key, rounds in frame.groupby(keys, sort=False):
        entry = key[-1] if isinstance(key, tuple) else key
        path, n = out_dir / f"convergence-{file_slug(entry)}.png", 1
        while path in (p for _, p in written):
            n += 1
            path = out_dir / f"convergence-{file_slug(entry)}-{n}.png"
        written.append((entry, save_figure(convergence_figure(rounds, f"{entry}: test accuracy", colours), path)))
    return written


def _shown_clients(sizes, limit: int):
    """Client indices, largest first; more than `limit`: `limit` of them evenly spaced over that
    order, so the sample spans small and large clients alike."""
    import numpy as np

    order = np.argsort(-sizes, kind="stable")
    if len(order) <= limit:
        return order
    return order[np.linspace(0, len(order) - 1, limit).round().astype(int)]


def label_distribution_figure(hist, title: str, max_clients: int = MAX_CLIENTS_SHOWN):
    """Client sizes (top) and each client's class proportions (bottom: stacked bars, or a heat map
    for more than MAX_CLASSES_STACKED classes), clients sorted by size; `hist` is clients × classes counts."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    hist = np.asarray(hist, dtype=float)
    sizes = hist.sum(1)
    shown = _shown_clients(sizes, max_clients)
    props = hist[shown] / np.maximum(sizes[shown], 1)[:, None]
    positions = np.arange(len(shown))
    fig = Figure(figsize=(min(16, 5 + 0.12 * len(shown)), 6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(1, 2.2))
    top.bar(positions, sizes[shown], width=0.85, color="grey")
    top.set_ylabel("samples")
    num_classes = hist.shape[1]
    if num_classes <= MAX_CLASSES_STACKED:
        palette = colormaps["tab20" if num_classes > 10 else "tab10"].colors
        base = np.zeros(len(shown))
        for c in range(num_classes):
            bottom.bar(positions, props[:, c], bottom=base, width=0.85, color=palette[c], label=str(c))
            base += props[:, c]
        bottom.set_ylim(0, 1)
        bottom.set_ylabel("class proportion")
        bottom.legend(
            title="class",
            loc="upper left",
            bbox_to_anchor=(1.01, 1),
            ncol=1 if num_classes <= 10 else 2,
            fontsize="small",
        )
    else:
        # colour range to the 99th percentile: a few tiny clients with one or two labels would wash out the rest
        top_share = float(np.quantile(props, 0.99)) or 1.0
        image = bottom.imshow(
            props.T,
            aspect="auto",
            interpolation="nearest",
            cmap="viridis",
            origin="lower",
            vmin=0,
            vmax=top_share,
            extent=(-0.5, len(shown) - 0.5, -0.5, num_classes - 0.5),
        )
        fig.colorbar(
            image,
            ax=bottom,
            location="bottom",
            shrink=0.5,
            aspect=40,
            extend="max" if props.max() > top_share else "neither",
            label="share of the client's samples (colour saturates at the 99th percentile)",
        )
        bottom.set_ylabel("class")
    sample = (
        ""
        if len(shown) == len(sizes)
        else (f"; {len(shown)} of {len(sizes)} clients shown, evenly spaced in size order")
    )
    bottom.set_xlabel(f"client, largest first (label = client index){sample}")
    ticks = positions if len(shown) <= 40 else positions[:: max(1, len(shown) // 20)]
    bottom.set_xticks(ticks, [str(shown[i]) for i in ticks], rotation=90 if len(shown) > 20 else 0, fontsize="small")
    fig.suptitle(title)
    return fig


def report_figures(suite, jobs, results_dir) -> list:
    """The convergence figures of `fedbench report` in results/<suite>/report/figures/, as the
    report's Figure entries (the FedAc-protocol jobs have their own figure)."""
    from benchmark.report.fedac_figure import is_fedac_protocol
    from benchmark.report.frames import rounds_frame
    from benchmark.report.report_files import Figure

    jobs = [j for j in jobs if not is_fedac_protocol(j)]
    frame = rounds_frame(suite, jobs, results_dir)
    frame["entry_index"] = frame.job_id.map({j.id: j.dataset_index for j in jobs})
    out_dir = Path(results_dir) / suite.name / "report" / "figures"
    return [
        Figure(
            f"{entry}: test accuracy against round, bytes communicated and training time "
            f"(line: mean over seeds; band: min–max over seeds; ×: a diverged run's last finite round)",
            path,
        )
        for entry, path in write_convergence_figures(frame, out_dir)
    ]
