"""The report's files fed to the tools that consume them: every .tex compiled by pdflatex in a plain
article with only the packages its first line names, and checked to fit the text width."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmark.cli import main
from benchmark.store.layout import Store

# as a person writes it: a grid (a sensitivity table), many metric columns, a label LaTeX cannot take raw
SUITE = """\
name: outputs
defaults:
  rounds: 4
  eval_every: 1
  seeds: [0, 1]
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  metrics: [acc@2, acc@4, rounds_to@30, rounds_to@40]
datasets:
  - name: synthetic
    label: "synthetic (α = 1, β = 1; Müller's ☃ split)"
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods:
  - fedavg
  - fedprox
  - fedavgm
  - preset: fedacg
    grid: {server.lam: [0.8, 0.9]}
"""
OVERFULL = re.compile(r"Overfull \\hbox \((\d+\.?\d*)pt too wide\)")


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, Path]:
    """(the suite file, the results folder) of a real run of SUITE."""
    root = tmp_path_factory.mktemp("outputs")
    suite = root / "suite.yaml"
    suite.write_text(SUITE)
    assert (
        main(["run", str(suite), "--results-dir", str(root / "results"), "--no-tracking", "-q", "--threads", "1"]) == 0
    )
    return suite, root / "results"


def report(ran, *options: str) -> Path:
    suite, results = ran
    assert main(["report", str(suite), "--results-dir", str(results), "--no-tracking", *options]) == 0
    return results / "outputs" / "report"


def compile_tex(table: Path, work: Path) -> str:
    """pdflatex's log of `table` \\input in a plain article with the packages its first line names."""
    first = table.read_text().splitlines()[0]
    packages = re.findall(r"\\usepackage\{[^}]+\}", first)
    assert first.startswith("% needs") and packages, first
    document = work / f"{table.stem}-doc.tex"
    document.write_text(
        "\\documentclass{article}\n"
        + "\n".join(packages)
        + f"\n\\begin{{document}}\n\\input{{{table}}}\n\\end{{document}}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (work / f"{table.stem}-doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    return log


def assert_compiles_and_fits(tables: list[Path], work: Path) -> None:
    assert tables
    for table in tables:
        text = table.read_text()
        assert text.isascii(), f"{table.name}: a raw non-ASCII character: pdflatex would stop on it"
        log = compile_tex(table, work)
        overfull = [float(pt) for pt in OVERFULL.findall(log)]
        assert all(pt <= 1.0 for pt in overfull), f"{table.name} overfull by {overfull} pt"


needs_pdflatex = pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex not installed (apt-get install texlive-latex-base texlive-latex-recommended; .ci/run does)",
)


@needs_pdflatex
@pytest.mark.parametrize("options", [(), ("--wide",), ("--columns", "acc@2,acc@4,rounds_to@30,bytes_to@30,wall_s")])
def test_every_tex_compiles_in_a_plain_article_and_fits_the_text_width(ran, tmp_path, options):
    out = report(ran, *options)
    assert_compiles_and_fits(sorted((out / "tables").glob("*.tex")), tmp_path)


def test_tex_shows_the_headline_columns_by_default_and_every_column_split_with_wide(ran):
    default = (report(ran) / "tables" / "synthetic_1_1_M_ller_s_split.tex").read_text()
    # the caption's Unicode escaped: Greek as math, an accent as an accent command, the rest by name
    assert r"$\alpha$ = 1, $\beta$ = 1; M\"{u}ller's [snowman] split" in default
    left_out = next(line for line in default.splitlines() if line.startswith("% not shown: "))
    assert "wall_s" in left_out and "acc@4," not in left_out and "acc@4" in default.split(r"\toprule")[1]
    assert default.count(r"\begin{tabular}{") == 1
    wide = (report(ran, "--wide") / "tables" / "synthetic_1_1_M_ller_s_split.tex").read_text()
    assert "% not shown" not in wide and "time (s)" in wide
    parts = wide.count(r"\begin{tabular}{")
    assert parts > 1 and wide.count(r"\toprule") == parts  # split: every part a table of its own rows
    picked = (report(ran, "--columns", "wall_s") / "tables" / "synthetic_1_1_M_ller_s_split.tex").read_text()
    assert "time (s)" in picked and "acc@4 (EMA" not in picked.split("\\begin{table}")[1]


def test_tex_footnotes_only_the_rows_whose_jobs_did_not_finish(tmp_path):
    from benchmark.report.entry_tables import Cell, Column, EntryTable, Row
    from benchmark.report.latex_table import table_tex

    column = Column("M=4", "M=4", False, "subopt")
    rows = [Row(m, m, "", "", "", [], [], {"M=4": Cell("1.00e-03 (0.2)", 1e-3)}) for m in ("FedAc-I", "FedAvg")]
    protocol = table_tex(EntryTable("K=1", "k1", "K = 1: best F − F* over η", [column], rows, kind="fedac"))
    assert r"\footnotesize" not in protocol and r"over $\eta$" in protocol  # no line of empty notes
    rows[1].status, rows[1].n = "finished 1, diverged@3 1", "1/2"
    main_table = table_tex(EntryTable("e", "e", "e", [column], rows))
    assert main_table.count("$^{a}$") == 2 and r"{\footnotesize $^{a}$ finished 1, diverged@3 1}" in main_table


@needs_pdflatex
def test_fedac_tex_compiles(tmp_path):
    from engine.test_fedac_batched import shared_suite
    from fedtest import write_suite
    from report.test_fedac_report import fake_results

    from benchmark.suite.expand import load_jobs

    path = write_suite(tmp_path, shared_suite(["fedac1", "mbsgd"], clients=4).model_dump())
    fake_results(tmp_path / "results", load_jobs(path)[1], [4e-3, 1e-3, 2e-3, 9e-3, 8e-3, "diverged"])
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]) == 0
    tables = sorted((tmp_path / "results" / "fedac-batched" / "report" / "tables").glob("*.tex"))
    assert_compiles_and_fits(tables, tmp_path)
    assert r"$\eta$" in tables[0].read_text()


def font_subtypes(pdf: bytes) -> set[str]:
    """The /Subtype of every font dictionary in a PDF (matplotlib writes them uncompressed)."""
    return set(re.findall(rb"/Type /Font /Subtype /(\w+)", pdf))


def test_figures_are_png_pdf_and_svg_with_truetype_fonts_at_the_width_asked(ran):
    from matplotlib.image import imread

    from benchmark.report.figure_output import DPI

    for width, side_by_side in (("7", True), ("3.25", False)):
        figures = report(ran, "--figure-width", width) / "figures"
        pngs = sorted(figures.glob("*.png"))
        assert {p.name.split("-")[0] for p in pngs} == {"convergence", "clients", "sensitivity"}
        for png in pngs:
            assert abs(imread(png).shape[1] - float(width) * DPI) <= 1  # drawn at the width it is printed
            pdf = png.with_suffix(".pdf").read_bytes()
            assert font_subtypes(pdf) == {b"Type0", b"CIDFontType2"} and b"/FontFile2" in pdf  # TrueType, embedded
            assert b"Type3" not in pdf
            svg = png.with_suffix(".svg").read_text()
            assert svg.startswith("<?xml") and "<text" not in svg  # text as paths: no font needed to view it
        convergence = imread(next(figures.glob("convergence-*.png")))
        wider_than_tall = convergence.shape[1] > convergence.shape[0]
        assert wider_than_tall == side_by_side  # one column: the three panels one under the other


def test_figure_width_out_of_range_exits_2(ran, capsys):
    suite, results = ran
    code = main(["report", str(suite), "--results-dir", str(results), "--no-tracking", "--figure-width", "40"])
    assert code == 2 and "--figure-width" in capsys.readouterr().err


TIED_SUITE = """\
name: tied
defaults:
  rounds: 4
  seeds: [0, 1, 2]
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  metrics: [acc@2]
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods: [fedavg, fedprox, fedacg]
"""


def test_bold_only_where_the_paired_test_separates_the_best_and_ties_marked(tmp_path):
    from report.test_report_files import _summary

    from benchmark.report.entry_tables import LEGEND
    from benchmark.store.job_dir import JobDir, atomic_write_json
    from benchmark.suite.expand import load_jobs

    path = tmp_path / "tied.yaml"
    path.write_text(TIED_SUITE)
    # final EMA: FedACG's mean (60.5) leads FedProx's (60) but their per-seed differences (-1, 3, -0.5)
    # do not exclude 0: tied; FedAvg (+9, +7, +9.5 behind) is separated. acc@2: FedProx 5 ahead at every seed.
    values = {"FedAvg": ([50, 54, 52], [40, 41, 42]), "FedProx": ([60, 58, 62], [45, 46, 47])}
    values["FedACG"] = ([59, 61, 61.5], [30, 31, 32])
    for job in load_jobs(path)[1]:
        final, acc2 = (v[job.config.seed] for v in values[job.method_label])
        atomic_write_json(JobDir(Store(tmp_path / "results"), job.id).summary, _summary(final, acc2))
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking", "--wide"]) == 0
    out = tmp_path / "results" / "tied" / "report"
    md = (out / "report.md").read_text()
    assert "| **46.00 ± 1.00** |" in md and "| 60.50 ± 1.32 ≈ |" in md and "| 60.00 ± 2.00 ≈ |" in md
    assert "52.00 ± 2.00 |" in md and "**52.00" not in md and "52.00 ± 2.00 ≈" not in md
    assert "**60.50" not in md and LEGEND in md
    tex = (out / "tables" / "synthetic.tex").read_text()
    assert r"\textbf{46.00 $\pm$ 1.00}" in tex and r"60.50 $\pm$ 1.32 $\approx$" in tex
    assert r"Bold: ahead of every other row by a paired test" in tex
    html = (out / "report.html").read_text()
    assert html.count('class="best"') == 1 and "60.50 ± 1.32 ≈" in html  # acc@2's


def test_runs_csv_holds_every_value_a_table_shows(ran):
    import pandas as pd

    out = report(ran)
    runs = pd.read_csv(out / "runs.csv").set_index("job_id")
    checked = set()
    for csv in (out / "tables").glob("*.csv"):
        for _, row in pd.read_csv(csv).iterrows():
            jobs = runs.loc[row["jobs"].split()]
            for key in (c.removesuffix(".mean") for c in row.index if c.endswith(".mean")):
                # a KeyError: a column runs.csv lacks; rounds_to@X holds ">R" where a job never reached X
                values = pd.to_numeric(jobs[jobs.status == "finished"][key], errors="coerce").dropna()
                assert len(values) == row[f"{key}.n"], (csv.name, row["method"], key)
                if len(values):
                    assert values.mean() == pytest.approx(row[f"{key}.mean"]), (csv.name, row["method"], key)
                    checked.add(key)
    assert {"acc_raw@2", "bytes_to@30", "final_ema_acc-vs-baseline", "client_p50", "acc@4"} <= checked


BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


@pytest.mark.skipif(BROWSER is None, reason="no headless browser (Debian: apt install chromium)")
def test_html_fits_a_1024_px_window_its_wide_tables_scrolling_in_their_own_box(ran, tmp_path):
    html = (report(ran) / "report.html").read_text()
    assert html.count('<div class="scroll"><table') == 3  # main, sensitivity, every job
    # the page's own width as the browser lays it out, written into the DOM by a probe added to a copy
    probe = tmp_path / "probe.html"
    script = "<script>document.body.dataset.pageWidth = document.documentElement.scrollWidth;</script>"
    probe.write_text(html.replace("</body>", script + "</body>"))
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1024,1400", "--dump-dom"]
    dom = subprocess.run([*command, probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    widths = re.findall(r'data-page-width="(\d+)"', dom)
    assert widths and int(widths[0]) <= 1024, widths
    assert 'class="scroll"' in dom and "FedACG" in dom
