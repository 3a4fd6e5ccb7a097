"""report.html as a person sees it: rendered by headless Chromium from disk (skipped when no browser
is installed; Debian: apt install chromium), the screenshot is not blank and the page needs no other file."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image
from test_report_files import _hand_made

from benchmark.report.figures import Figure
from benchmark.report.report_files import write_report
from benchmark.store.layout import Store

BROWSER = next(
    (b for b in ("chromium", "chromium-browser", "google-chrome", "headless_shell") if shutil.which(b)), None
)


def _png(path, seed=0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(np.random.default_rng(seed).normal(size=20).cumsum())
    fig.savefig(path)
    plt.close(fig)
    return path


def test_html_is_self_contained(tmp_path):
    _, suite, jobs = _hand_made(tmp_path)
    figure = Figure("a curve", _png(tmp_path / "curve.png"))
    write_report(suite, jobs, {}, Store(tmp_path / "results"), [figure])
    html = (tmp_path / "results" / "tiny" / "report" / "report.html").read_text()
    assert 'src="data:image/png;base64,' in html and "a curve" in html
    assert not re.search(r"<(link|script)\b", html) and not re.search(r'src="(?!data:)', html)


@pytest.mark.skipif(BROWSER is None, reason="no headless browser (Debian: apt install chromium)")
def test_html_renders_in_a_headless_browser(tmp_path):
    _, suite, jobs = _hand_made(tmp_path)
    write_report(suite, jobs, {}, Store(tmp_path / "results"), [Figure("a curve", _png(tmp_path / "curve.png"))])
    page = (tmp_path / "results" / "tiny" / "report" / "report.html").resolve()
    shot = tmp_path / "shot.png"
    base = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1300,1600"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<table") == 3 and "56.00 ± 1.41" in dom  # main, sensitivity, every job
    subprocess.run([*base, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (1600, 1300)
    ink = pixels < 200  # text, rules and the figure
    assert ink.mean() > 0.01 and pixels.std() > 20
    assert ink[:400].mean() > 0.01  # the page starts with content, not an empty top
