"""The sensitivity plot of a grid: the selection metric (final EMA accuracy; convex suites: final
F − F*) against each grid parameter, a line per method, mean ± std over the finished seeds as
error bars; settings without a finished seed (diverged, failed, not run) are marked × at the
bottom of the panel. One panel per grid
parameter; a method whose settings differ in several parameters is plotted against each, the
others fixed at its chosen values, and the panel says at which (`held_fixed`). No baked-in title
(the report prints the caption); the legend sits below the panels; PNG, PDF and SVG at the report's
figure width, panels wrapped onto rows where they would be narrower than 2.2 in (figure_output.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.store.job_status import FINISHED

LOST_LABEL = "no finished seed"


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def sensitivity_points(entry_jobs: pd.DataFrame, points: dict[str, dict], metric: str) -> pd.DataFrame:
    """Per (method, setting): its grid parameters, the metric's mean and std over finished seeds."""
    rows = []
    for (method, setting), jobs in entry_jobs.groupby(["method", "setting"], sort=False):
        values = jobs[jobs.status == FINISHED][metric].astype(float).dropna()
        rows.append(
            {
                "method": method,
                "setting": setting,
                "params": points[jobs.job_id.iloc[0]],
                "mean": values.mean() if len(values) else None,
                "std": values.std() if len(values) > 1 else 0.0,
            }
        )
    return pd.DataFrame(rows)


def held_fixed(data: pd.DataFrame, chosen: dict[str, str], key: str) -> dict[str, dict]:
    """method -> its other grid parameters and their chosen values, in the panel of `key`."""
    fixed = {}
    for method, rows in data.groupby("method", sort=False):
        best = rows[rows.setting == chosen.get(method)].params
        params = best.iloc[0] if len(best) else rows.params.iloc[0]
        if key in params:
            fixed[method] = {k: v for k, v in params.items() if k != key}
    return fixed


def _fixed_text(fixed: dict[str, dict]) -> str:
    parts = [f"{m}: " + ", ".join(f"{k}={v}" for k, v in p.items()) for m, p in fixed.items() if p]
    return "others at the chosen setting: " + "; ".join(parts) if parts else ""


def _panels(data: pd.DataFrame, chosen: dict[str, str]) -> dict[str, list[tuple[str, list]]]:
    """parameter -> [(method, [(x, mean, std)])] over the settings of the method that differ only in it
    from the method's chosen setting."""
    panels: dict[str, list] = {}
    for method, rows in data.groupby("method", sort=False):
        if len(rows) < 2:
            continue
        best = rows[rows.setting == chosen.get(method)].params
        best = best.iloc[0] if len(best) else rows.params.iloc[0]
        for key in [k for k in best if rows.params.map(lambda p, k=k: p.get(k)).nunique() > 1]:
            same = rows[
                rows.params.map(lambda p, key=key, best=best: all(p.get(k) == v for k, v in best.items() if k != key))
            ]
            line = sorted(
                ((r.params[key], r.mean, r.std) for r in same.itertuples()),
                key=lambda t: str(t[0]) if not _numeric([t[0]]) else t[0],
            )
            panels.setdefault(key, []).append((method, line))
    return panels


def sensitivity_figure(
    data: pd.DataFrame,
    chosen: dict[str, str],
    ylabel: str,
    path: Path,
    styles: dict[str, dict] | None = None,
    log_y: bool = False,
    width: float | None = None,
) -> Path | None:
    """Write the PNG, PDF and SVG, `width` inches wide (default: a page's text width), or nothing and
    None when no method has two settings differing in one parameter; `styles`: figures.method_styles
    over the report, so a method looks the same in every figure."""
    from benchmark.report.figure_output import PAGE_WIDTH, paper_style, save_figure
    from benchmark.report.figures import method_styles

    panels = _panels(data, chosen)
    if not panels:
        return None
    with paper_style():
        fig = _figure(panels, data, chosen, styles or method_styles(data.method), ylabel, log_y, width or PAGE_WIDTH)
    return save_figure(fig, path)


def _figure(panels, data, chosen, styles: dict[str, dict], ylabel: str, log_y: bool, width: float):
    from matplotlib.figure import Figure

    from benchmark.report.figure_output import legend_columns, legend_height, legend_widest, panel_grid

    colours = {m: s["color"] for m, s in styles.items()}
    rows, cols = panel_grid(len(panels), width)
    methods = {method for lines in panels.values() for method, _ in lines}
    widest = legend_widest([f"{m}: {LOST_LABEL}" for m in methods], width)
    height = rows * min(2.6, width / cols * 0.75) + legend_height(2 * len(methods), widest)
    fig = Figure(figsize=(width, height), layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False).flat
    axes = [next(grid) for _ in panels]
    for ax in grid:
        ax.axis("off")
    for ax, (key, lines) in zip(axes, panels.items()):
        xs = [x for _, line in lines for x, _, _ in line]
        numeric = _numeric(xs)
        position = {x: i for i, x in enumerate(dict.fromkeys(sorted(map(str, xs))))} if not numeric else None
        for method, line in lines:
            x = [v if numeric else position[str(v)] for v, _, _ in line]
            kept = [(xi, m, s) for xi, (_, m, s) in zip(x, line) if pd.notna(m)]
            if kept:
                ax.errorbar(
                    *zip(*[(xi, m) for xi, m, _ in kept]),
                    yerr=[s for _, _, s in kept],
                    marker=styles[method]["marker"],
                    linestyle=styles[method]["linestyle"],
                    capsize=3,
                    color=colours[method],
                    label=method,
                )
            lost = [xi for xi, (_, m, _) in zip(x, line) if pd.isna(m)]
            if lost:
                ax.plot(
                    lost,
                    [0.04] * len(lost),
                    "x",
                    color=colours[method],
                    markersize=7,
                    clip_on=False,
                    transform=ax.get_xaxis_transform(),
                    label=f"{method}: {LOST_LABEL}",
                )  # y: axes bottom
        if numeric and min(xs) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(list(position.values()), list(position.keys()), rotation=30, ha="right")
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(key)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.set_title(_fixed_text(held_fixed(data, chosen, key)), fontsize=7, wrap=True)
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend(
        handles=list(handles.values()),
        loc="outside lower center",
        ncol=legend_columns(len(handles), widest),
        frameon=False,
    )
    return fig
