"""Report figures: convergence (mean and band over seeds, diverged runs marked, one colour per
method) and the split's label distribution, checked on their matplotlib objects and PNGs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.report.figure_output import legend_columns
from benchmark.report.figures import (
    BAND_LABEL,
    DASHES,
    MARKERS,
    PALETTE,
    convergence_figure,
    curve_metric,
    label_distribution_figure,
    method_styles,
    write_convergence_figures,
)


def runs(entry, method, seed, accs, status="finished", setting=None):
    """Rounds-frame rows of one job: evaluated every round, 100 bytes and 2 s per round."""
    return [
        {
            "entry": entry,
            "method": method,
            "setting": setting or method,
            "seed": seed,
            "job_id": f"{method}-{setting}-{seed}",
            "status": status,
            "round": r,
            "test_acc": acc,
            "ema_acc": acc,
            "bytes": 100.0 * r,
            "wall_s": 2.0 * r,
        }
        for r, acc in enumerate(accs, 1)
    ]


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        runs("A", "FedAvg", 0, [10, 20, 30])
        + runs("A", "FedAvg", 1, [20, 40, 50])
        + runs("A", "FedACG", 0, [30, 60, 70])
        + runs("A", "FedACG", 1, [40], status="diverged")
        + runs("B", "FedACG", 0, [5, 6, 7])
    )


def lines_by_label(ax) -> dict:
    return {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}


def test_mean_over_seeds_with_min_max_band_on_three_axes(frame):
    fig = convergence_figure(frame[frame.entry == "A"], method_styles(frame.method))
    by_round, by_bytes, by_time = fig.axes[:3]
    lines = lines_by_label(by_round)
    assert set(lines) == {"FedAvg", "FedACG (diverged 1/2 seeds)"}
    assert list(lines["FedAvg"].get_ydata()) == [15, 30, 40]  # hand means of (10, 20), (20, 40), (30, 50)
    assert list(lines["FedACG (diverged 1/2 seeds)"].get_ydata()) == [35, 60, 70]  # round 1 over both seeds
    band = by_round.collections[0].get_paths()[0].vertices  # FedAvg's band: min 10,20,30 / max 20,40,50
    assert {10, 20, 30, 40, 50} <= set(band[:, 1])
    assert list(lines_by_label(by_bytes)["FedAvg"].get_xdata()) == [100, 200, 300]
    assert by_bytes.get_xscale() == "log" and by_round.get_xscale() == by_time.get_xscale() == "linear"
    assert list(lines_by_label(by_time)["FedAvg"].get_xdata()) == [2, 4, 6]
    crosses = [line for line in by_round.lines if line.get_marker() == "x" and len(line.get_xdata())]
    assert [(list(c.get_xdata()), list(c.get_ydata())) for c in crosses] == [([1], [40])]  # diverged run's last round
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert BAND_LABEL in legend and any("diverged run" in t for t in legend)
    assert [a.get_xlabel() for a in fig.axes[:3]] == [  # side by side: two lines under a ~2 in panel
        "round",
        "bytes communicated\n(down + up, cumulative)",
        "training time\n(s, cumulative)",
    ]


def test_legend_rows_are_even_and_at_most_six_wide():
    assert [legend_columns(n) for n in (1, 4, 5, 6, 7, 12, 13)] == [1, 4, 5, 6, 4, 6, 5]


def test_a_method_with_several_settings_gets_a_line_per_setting():
    frame = pd.DataFrame(
        runs("A", "FedACG", 0, [1, 2], setting="FedACG[lam=0.8]")
        + runs("A", "FedACG", 0, [3, 4], setting="FedACG[lam=0.5]")
        + runs("A", "FedAvg", 0, [5, 6])
    )
    fig = convergence_figure(frame, method_styles(frame.method))
    lines = lines_by_label(fig.axes[0])
    assert set(lines) == {"FedACG[lam=0.8]", "FedACG[lam=0.5]", "FedAvg"}
    assert lines["FedACG[lam=0.8]"].get_color() == lines["FedACG[lam=0.5]"].get_color() != lines["FedAvg"].get_color()
    assert lines["FedACG[lam=0.8]"].get_linestyle() != lines["FedACG[lam=0.5]"].get_linestyle()
    assert not fig.axes[0].collections  # one seed: no band


def test_one_png_per_entry_with_the_same_colour_per_method(frame, tmp_path):
    from matplotlib.image import imread

    paths = [path for _, _, path in write_convergence_figures(frame, tmp_path / "figs")]
    assert [p.name for p in paths] == ["convergence-A.png", "convergence-B.png"]
    for path in paths:
        pixels = imread(path)
        assert pixels.shape[1] > 1000 and pixels[..., :3].std() > 0.05  # a drawn figure, not a blank canvas
        assert path.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"  # the vector copy for a paper
    assert method_styles(["FedAvg", "FedACG", "FedAvg"]) == method_styles(["FedAvg", "FedACG"])


def test_each_method_differs_from_the_last_in_colour_dash_and_marker_and_none_look_alike_in_greyscale():
    styles = list(method_styles([f"M{i}" for i in range(80)]).values())
    for before, after in zip(styles, styles[1:]):
        assert all(before[k] != after[k] for k in ("color", "linestyle", "marker"))
    assert len({(s["linestyle"], s["marker"]) for s in styles}) == 77 == len(DASHES) * len(MARKERS)  # no colour
    assert len({(s["color"], s["linestyle"], s["marker"]) for s in styles}) == 80
    assert {s["color"] for s in styles} == set(PALETTE) and PALETTE[0] == "#0072B2"  # Okabe-Ito, blue first


def test_the_curve_is_the_tables_metric_and_the_axis_says_which(frame):
    assert curve_metric(["acc@30", "rounds_to@60"]) == "ema_acc" and curve_metric(["acc_raw@30"]) == "test_acc"
    frame = frame[frame.entry == "B"].assign(ema_acc=[1.0, 2.0, 3.0])
    ema, raw = (convergence_figure(frame, method_styles(frame.method), y) for y in ("ema_acc", "test_acc"))
    assert list(lines_by_label(ema.axes[0])["FedACG"].get_ydata()) == [1, 2, 3]
    assert list(lines_by_label(raw.axes[0])["FedACG"].get_ydata()) == [5, 6, 7]
    assert "EMA" in ema.axes[0].get_ylabel() and "raw" in raw.axes[0].get_ylabel()
    assert not ema._suptitle and not ema.texts  # no baked-in title: the report prints the caption


def test_label_distribution_sorts_clients_by_size_and_stacks_proportions():
    hist = np.array([[1, 1, 0], [6, 0, 2], [0, 0, 4]])  # sizes 2, 8, 4
    fig = label_distribution_figure(hist, "toy")
    sizes, props = fig.axes[:2]
    assert [bar.get_height() for bar in sizes.patches] == [8, 4, 2]
    class0 = [bar.get_height() for bar in props.patches[:3]]
    assert class0 == [0.75, 0.0, 0.5]  # client 1: 6/8, client 2: 0/4, client 0: 1/2
    assert [t.get_text() for t in props.get_xticklabels()] == ["1", "2", "0"]


def test_many_clients_are_sampled_and_many_classes_drawn_as_a_heat_map():
    hist = np.random.default_rng(0).integers(0, 5, size=(500, 62))
    fig = label_distribution_figure(hist, "femnist-like")
    assert len(fig.axes[0].patches) == 100
    assert "100 of 500 clients shown" in fig.axes[1].get_xlabel()
    assert fig.axes[1].images and fig.axes[1].images[0].get_array().shape == (62, 100)


def split_suite() -> dict:
    suite = tiny_suite(methods=["fedavg"])
    base = {
        "name": "synthetic",
        "params": {"iid": True, "num_users": 4, "dim": 5, "num_classes": 4, "max_samples": 400},
    }
    suite["datasets"] = [{**base, "split": {"kind": "dirichlet", "alpha": a}} for a in (0.05, 100.0)]
    return suite


def test_plan_splits_figures_writes_a_png_per_split(tmp_path, capsys):
    suite = write_suite(tmp_path, split_suite())
    assert main(["plan", str(suite), "--splits", "--figures", str(tmp_path / "figs")]) == 0
    printed = re.findall(r"split figure: (\S+)", capsys.readouterr().out)
    assert [p.split("/")[-1] for p in printed] == ["split-1-synthetic.png", "split-2-synthetic.png"]
    assert all((tmp_path / "figs" / p.split("/")[-1]).stat().st_size > 10_000 for p in printed)
    assert main(["plan", str(suite), "--figures", str(tmp_path / "figs")]) == 2
    assert "use it with --splits" in capsys.readouterr().err


def test_report_writes_a_convergence_figure_per_entry_into_the_html(tmp_path, capsys):
    raw = tiny_suite(methods=["fedavg", "fedacg"])
    raw["datasets"].append({**raw["datasets"][0], "split": {"kind": "dirichlet", "alpha": 0.5}})  # same label
    suite, results = write_suite(tmp_path, raw), tmp_path / "results"
    assert main(["run", str(suite), "--results-dir", str(results), "--no-tracking", "-q"]) == 0
    capsys.readouterr()
    assert main(["report", str(suite), "--results-dir", str(results), "--no-tracking"]) == 0
    printed = re.findall(r"figure: (\S+)", capsys.readouterr().out)
    figures = results / "tiny" / "report" / "figures"
    # and the natural split's per-client accuracy (the Dirichlet entry's clients are not the data's users)
    assert printed == [
        str(figures / "convergence-synthetic.png"),
        str(figures / "convergence-synthetic-2.png"),
        str(figures / "clients-synthetic.png"),
    ]
    assert (figures / "clients-synthetic.pdf").read_bytes()[:5] == b"%PDF-"
    html = (results / "tiny" / "report" / "report.html").read_text()
    assert html.count("<figcaption>synthetic: per-client test accuracy at the last round") == 1
    assert (
        html.count("<figcaption>synthetic: test accuracy, EMA-0.9 smoothed (%) against round, bytes communicated") == 2
    )
