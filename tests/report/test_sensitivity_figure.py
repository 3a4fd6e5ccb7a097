"""The grid's sensitivity plot: a panel per grid parameter, a line per method through the settings
that differ from its chosen one in that parameter only, lost settings marked."""

from __future__ import annotations

import numpy as np
import pandas as pd
from PIL import Image

from benchmark.report.sensitivity_figure import _panels, held_fixed, sensitivity_figure


def _data():
    rows = [
        ("FedAvg", "FedAvg lr=0.01", {"local.lr": 0.01}, 70.0, 1.0),
        ("FedAvg", "FedAvg lr=0.1", {"local.lr": 0.1}, 80.0, 2.0),
        ("FedAvg", "FedAvg lr=1.0", {"local.lr": 1.0}, float("nan"), 0.0),  # every seed diverged
        ("FedACG", "FedACG[lam=0.8] lr=0.1", {"server.lam": 0.8, "local.lr": 0.1}, 82.0, 0.5),
        ("FedACG", "FedACG[lam=0.9] lr=0.1", {"server.lam": 0.9, "local.lr": 0.1}, 84.0, 0.5),
        ("FedACG", "FedACG[lam=0.9] lr=0.01", {"server.lam": 0.9, "local.lr": 0.01}, 75.0, 0.5),
        ("FedACG", "FedACG[lam=0.8] lr=0.01", {"server.lam": 0.8, "local.lr": 0.01}, 74.0, 0.5),
    ]
    return pd.DataFrame(rows, columns=["method", "setting", "params", "mean", "std"])


def test_panels_hold_the_settings_beside_the_chosen_one():
    chosen = {"FedAvg": "FedAvg lr=0.1", "FedACG": "FedACG[lam=0.9] lr=0.1"}
    panels = _panels(_data(), chosen)
    assert list(panels) == ["local.lr", "server.lam"]
    fedavg, fedacg = panels["local.lr"]
    assert fedavg[0] == "FedAvg" and [x for x, _, _ in fedavg[1]] == [0.01, 0.1, 1.0]
    assert fedacg == ("FedACG", [(0.01, 75.0, 0.5), (0.1, 84.0, 0.5)])  # lam fixed at the chosen 0.9
    assert panels["server.lam"] == [("FedACG", [(0.8, 82.0, 0.5), (0.9, 84.0, 0.5)])]  # lr fixed at 0.1


def test_the_png_is_drawn(tmp_path):
    chosen = {"FedAvg": "FedAvg lr=0.1", "FedACG": "FedACG[lam=0.9] lr=0.1"}
    assert held_fixed(_data(), chosen, "local.lr") == {"FedAvg": {}, "FedACG": {"server.lam": 0.9}}
    assert held_fixed(_data(), chosen, "server.lam") == {"FedACG": {"local.lr": 0.1}}
    path = sensitivity_figure(_data(), chosen, "final acc", tmp_path / "s.png")
    assert path.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    pixels = np.asarray(Image.open(path).convert("L"), dtype=float)
    assert pixels.shape[1] > 2 * pixels.shape[0] and pixels.std() > 20  # two panels side by side, not blank
    one_setting = _data()[_data().method == "FedAvg"].iloc[:1]
    assert sensitivity_figure(one_setting, {}, "final acc", tmp_path / "none.png") is None
