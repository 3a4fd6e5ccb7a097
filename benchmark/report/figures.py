"""The report's figures (matplotlib; each written as PNG and PDF): convergence per dataset entry
(test accuracy — EMA-smoothed where the entry's table is, else raw — against round, bytes
communicated and training time; a line per method at its selected setting, mean and min–max band
over seeds, diverged runs marked) and a split's label distribution per client.

Report figures carry no baked-in title: report.md / report.html print their caption, and a paper
supplies its own. Every line is distinguishable in colour, in greyscale and by colour-blind readers: a
method's colour, dash and marker all differ from the previous method's (method_styles), and a method's
further settings shift the dash. Sizes and fonts: figure_output.py.

Figures are drawn on `matplotlib.figure.Figure` with the Agg canvas, never through pyplot: no
global backend switch, no figure registry to leak. matplotlib is imported inside the functions
(it is slow to import and only `report` and `plan --figures` need it).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from benchmark.report.figure_output import (
    PAGE_WIDTH,
    legend_columns,
    legend_height,
    legend_widest,
    paper_style,
    save_figure,
)
from benchmark.round_values import ROUND_VALUES
from benchmark.store.job_status import DIVERGED, FINISHED
from benchmark.store.layout import Store, SuiteView

BAND_LABEL = "band: min–max over seeds"
DIVERGED_LABEL = "×: last finite round of a diverged run"
# rounds_frame column -> axis label: the curve shows the metric the entry's table headlines
# solid, dashed, dotted, dash-dot, long dash, dash-dot-dot, short dash: clear at 0.75 pt and print size
DASHES = ("-", (0, (4, 1.5)), (0, (1, 1.2)), (0, (5, 1.5, 1, 1.5)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (2, 2)))
# (frame column, axis label, scale): bytes on a log axis, so compressed and full-precision methods both read
X_AXES = (
    ("round", "round", "linear"),
    ("bytes", "bytes communicated (down + up, cumulative)", "log"),
    ("wall_s", "training time (s, cumulative)", "linear"),
)
MAX_CLIENTS_SHOWN = 100
MAX_CLASSES_STACKED = 20  # more classes than distinguishable colours: a heat map instead of stacked bars


@dataclass
class Figure:
    """A figure of the report: its caption and its PNG (a PDF beside it where save_figure wrote one)."""

    title: str
    path: Path

    @property
    def pdf(self) -> Path | None:
        """The vector copy beside the PNG (figure_output.save_figure), where there is one."""
        pdf = self.path.with_suffix(".pdf")
        return pdf if pdf.exists() else None

    @property
    def svg(self) -> Path | None:
        svg = self.path.with_suffix(".svg")
        return svg if svg.exists() else None

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.path.read_bytes()).decode()


MAX_WIDTH, WIDTH_STEP, MIN_WIDTH = 2.0, 0.25, 0.75  # line widths in points, first method widest
# Okabe & Ito's colour-blind-safe palette, yellow (faint on white) last
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
MARK_SPACING = 0.12  # markers this far apart along a line (a share of the axes' diagonal)


def method_styles(methods) -> dict[str, dict]:
    """Per method (in the order given) its line style {"color", "linestyle", "linewidth", "marker",
    "markevery"}: colour, dash and marker all change from one method to the next (8 colours, 7 dashes,
    11 markers: no two of the first 616 methods alike), so methods stay apart in greyscale and for
    colour-blind readers; markers sparse and offset per method, and each later line a little thinner, so
    two methods with the same numbers (FedProx with a tiny μ and FedAvg) both show instead of one
    hiding the other. Build it once over a whole report so a method looks the same in every figure."""
    return {
        m: {
            "color": PALETTE[i % len(PALETTE)],
            "linestyle": DASHES[i % len(DASHES)],
            "linewidth": max(MIN_WIDTH, MAX_WIDTH - WIDTH_STEP * i),
            "marker": MARKERS[i % len(MARKERS)],
            "markevery": (MARK_SPACING * (i % 5) / 5, MARK_SPACING),
        }
        for i, m in enumerate(dict.fromkeys(methods))
    }


def file_slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "entry"


def unique_name(stem: str, taken: set[str], suffix: str = "") -> str:
    """`stem`, else `stem-2`, `stem-3`, ...: the first not in `taken` (two entries may share a label)."""
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    return name + suffix


def _seed_stats(runs, x: str, y: str):
    """Per evaluated round over the seeds that reached it: mean x, and mean / min / max of y."""
    stats = runs.groupby("round").agg(
        x=(x, "mean"),
        mean=(y, "mean"),
        low=(y, "min"),
        high=(y, "max"),
        n=(y, "size"),
    )
    return stats.dropna(subset=["x", "mean"])


def _line_label(setting: str, runs) -> str:
    """The setting's label (the method, its grid point and any non-suite settings), and what diverged."""
    label = setting
    seeds, diverged = runs.job_id.nunique(), runs[runs.status == DIVERGED].job_id.nunique()
    if diverged:
        label += " (diverged)" if diverged == seeds else f" (diverged {diverged}/{seeds} seeds)"
    return label


def _plot_setting(ax, runs, x: str, y: str, style: dict, label: str) -> None:
    stats = _seed_stats(runs, x, y)
    if stats.empty:
        return
    ax.plot(stats.x, stats["mean"], label=label, **style)
    if (stats.n > 1).any():
        ax.fill_between(stats.x, stats.low, stats.high, color=style["color"], alpha=0.18, linewidth=0)
    for _, run in runs[runs.status == DIVERGED].groupby("job_id"):
        last = run.sort_values("round").iloc[-1]
        ax.plot([last[x]], [last[y]], marker="x", markersize=7, markeredgewidth=1.5, color=style["color"], ls="none")


def _bytes_ticks(ax, values) -> None:
    """Log-axis ticks in B / kB / MB; within less than 1.5 decades also the 5× minor ticks, within one
    also the 2× (else a short axis would carry one label or none; more would overlap at print size)."""
    import math

    from matplotlib.ticker import EngFormatter, FuncFormatter, NullFormatter

    eng = EngFormatter(unit="B")
    ax.xaxis.set_major_formatter(eng)
    positive = values[values > 0]
    decades = math.log10(positive.max() / positive.min()) if len(positive) else math.inf
    if decades < 1.5:
        labelled = (2, 5) if decades < 1 else (5,)

        def minor(value, _):
            mantissa = value / 10 ** math.floor(math.log10(value))
            return eng(value) if round(mantissa) in labelled else ""

        ax.xaxis.set_minor_formatter(FuncFormatter(minor))
    else:
        ax.xaxis.set_minor_formatter(NullFormatter())


def convergence_figure(rounds, styles: dict[str, dict], y: str = "ema_acc", width: float = PAGE_WIDTH):
    """One entry's figure, `width` inches wide: three panels (accuracy `y` — ema_acc or test_acc — against
    round, bytes, training time), side by side at a page's width, one under the other in a column; a line
    per setting (the method's name when it has one setting in the entry) in its method's style
    (`method_styles`), a method's further settings with the next dashes; the legend below the panels.
    `rounds` has rounds_frame's columns."""
    with paper_style():
        return _convergence_figure(rounds, styles, y, width)


def _convergence_figure(rounds, styles, y, width):
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    settings_of = rounds.groupby("method", sort=False).setting.unique()
    labels = [_line_label(s, runs) for s, runs in rounds.groupby("setting", sort=False)] + [BAND_LABEL]
    diverged = int((rounds.status == DIVERGED).any())
    entries = len(labels) + diverged
    side_by_side = width >= 5
    widest = legend_widest(labels + [DIVERGED_LABEL] * diverged, width)
    panel = width / 3 * 0.8 if side_by_side else width * 0.55
    fig = Figure(
        figsize=(width, panel * (1 if side_by_side else 3) + 0.45 + legend_height(entries, widest)),
        layout="constrained",
    )
    axes = fig.subplots(1, 3, sharey=True) if side_by_side else fig.subplots(3, 1)
    for setting, runs in rounds.groupby("setting", sort=False):
        method = runs.method.iloc[0]
        shift = list(settings_of[method]).index(setting)
        base = styles[method]
        style = {**base, "linestyle": DASHES[(DASHES.index(base["linestyle"]) + shift) % len(DASHES)]}
        label = _line_label(setting, runs)
        for ax, (x, _, _) in zip(axes, X_AXES):
            _plot_setting(ax, runs, x, y, style, label)
    for ax, (x, xlabel, scale) in zip(axes, X_AXES):
        ax.set_xlabel(xlabel.replace(" (", "\n(", 1) if side_by_side else xlabel)  # a panel is ~2 in wide
        ax.grid(True, alpha=0.3)
        if not ax.lines:
            ax.text(0.5, 0.5, f"no {x} recorded", transform=ax.transAxes, ha="center", va="center", color="grey")
            continue
        ax.set_xscale(scale)
        if x == "round":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if x == "bytes":
            _bytes_ticks(ax, rounds.bytes)
    for ax in axes if not side_by_side else axes[:1]:
        ax.set_ylabel(ROUND_VALUES.get(y).label.replace(", ", ",\n", 1))  # two lines: a panel is under 2.5 in tall
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Patch(color="grey", alpha=0.3, label=BAND_LABEL))
    if (rounds.status == DIVERGED).any():
        handles.append(
            Line2D([], [], marker="x", markeredgewidth=1.5, color="grey", linestyle="none", label=DIVERGED_LABEL)
        )
    fig.legend(handles=handles, loc="outside lower center", ncol=legend_columns(len(handles), widest), frameon=False)
    return fig


def write_convergence_figures(
    frame, out_dir, metrics: dict | None = None, width: float = PAGE_WIDTH
) -> list[tuple[str, str, Path]]:
    """A PNG (and PDF) per dataset entry of `frame` (rounds_frame's columns) under `out_dir`, as
    (entry, y column, path); a method looks the same in all of them, entries without rounds get no
    file, and an optional `entry_index` column keeps apart two entries that share a label. `metrics`
    maps an entry (its index where the frame has `entry_index`, else its label) to the y column,
    ema_acc by default; `width`: the figures' width in inches."""
    metrics = metrics or {}
    out_dir = Path(out_dir)
    styles = method_styles(frame.method)
    keys = ["entry_index", "entry"] if "entry_index" in frame else ["entry"]  # two entries may share a label
    written: list[tuple[str, str, Path]] = []
    for key, rounds in frame.groupby(keys, sort=False):
        entry = key[-1] if isinstance(key, tuple) else key
        y = metrics.get(key[0] if isinstance(key, tuple) else key, "ema_acc")
        rounds = rounds.dropna(subset=[y])
        if rounds.empty:
            continue
        path = out_dir / unique_name(f"convergence-{file_slug(entry)}", {p.stem for _, _, p in written}, ".png")
        written.append((entry, y, save_figure(convergence_figure(rounds, styles, y, width), path)))
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


def curve_metric(metrics: list[str]) -> str:
    """The rounds_frame column a convergence figure plots: the raw accuracy when the entry's table
    reports only raw accuracies (acc_raw@R), else the EMA-smoothed one its acc@R columns report."""
    from benchmark.metrics import parse_metric

    kinds = {parse_metric(m)[0] for m in metrics}
    return "test_acc" if "acc_raw" in kinds and "acc" not in kinds else "ema_acc"


def report_figures(suite, jobs, store: Store, width: float = PAGE_WIDTH) -> list:
    """The convergence figures of `fedbench report` in results/<suite>/report/figures/, as the
    report's Figure entries: per entry each method at the setting its table shows (the grid's other
    settings are in the sensitivity figure), then per entry whose jobs recorded per-client accuracy
    its distribution (client_figure.py). A protocol's jobs have their section's figure instead. `width`: the
    figures' width in inches (figure_output.py)."""
    from benchmark.report.entry_tables import best_settings
    from benchmark.report.frames import jobs_frame, rounds_frame
    from benchmark.report.protocol_sections import unclaimed

    jobs = unclaimed(jobs)
    runs = jobs_frame(jobs, store)
    shown = set()
    for index, entry_runs in runs.groupby("entry_index"):
        convex = any(j.config.suboptimality for j in jobs if j.dataset_index == index)
        chosen = set(best_settings(entry_runs, convex).values())
        shown |= set(entry_runs[entry_runs.setting.isin(chosen)].job_id)
    frame = rounds_frame([j for j in jobs if j.id in shown], store)
    frame["entry_index"] = frame.job_id.map({j.id: j.dataset_index for j in jobs})
    metrics = {j.dataset_index: curve_metric(j.config.metrics) for j in jobs}
    out_dir = store.suite(suite.name).figures
    several = runs.groupby(["entry_index", "method"]).setting.nunique().max() > 1 if len(runs) else False
    convergence = [
        Figure(
            f"{entry}: {ROUND_VALUES.get(y).label} against round, bytes communicated (log scale) and training time; "
            "line: mean over the seeds that reached each evaluated round, band: min–max over seeds, "
            "×: a diverged run's last finite round"
            + (
                "; each method at the setting its table shows (every setting: the sensitivity figure)"
                if several
                else ""
            ),
            path,
        )
        for entry, y, path in write_convergence_figures(frame, out_dir, metrics, width)
    ]
    return convergence + client_figures(runs[runs.job_id.isin(shown)], store, out_dir, width)


def client_figures(runs, store: Store, out_dir: Path, width: float = PAGE_WIDTH) -> list[Figure]:
    """Per entry of `runs` (a jobs_frame of the jobs the tables show) whose jobs recorded per-client
    accuracy, its distribution figure, methods styled as in the convergence figures."""
    from benchmark.report.client_figure import CAPTION, write_client_figure

    styles, figures, names = method_styles(runs.method), [], set()
    for _, entry_runs in runs.groupby("entry_index"):
        entry = entry_runs.entry.iloc[0]
        name = unique_name(f"clients-{file_slug(entry)}", names)
        names.add(name)
        path = write_client_figure(entry_runs, store, out_dir / f"{name}.png", styles, width)
        if path is not None:
            seeds = entry_runs[entry_runs.status == FINISHED].seed.nunique()
            figures.append(Figure(CAPTION.format(entry=entry, seeds=f"{seeds} seed{'s' * (seeds != 1)}"), path))
    return figures


def protocol_figures(view: SuiteView) -> list[Figure]:
    """Each protocol section's figure (report/protocol_sections.py), where it was drawn."""
    from benchmark.report.protocol_sections import every_section, figure_path

    return [Figure(s.figure_caption, figure_path(s, view)) for s in every_section()]
