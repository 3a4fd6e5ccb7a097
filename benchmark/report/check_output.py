"""How `fedbench check` shows its comparison (report/check.py): a terminal table, JSON for
scripts and JUnit XML for CI systems, each with every (dataset, method) x metric."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from xml.etree import ElementTree

from benchmark.errors import UserError
from benchmark.report.check import ALPHA, FLOOR, IMPROVED, REGRESSION, WITHIN, Row, higher_is_better, summary_line
from benchmark.run.results import atomic_write_bytes

# ---------------------------------------------------------------- machine-readable output


def as_json(suite: str, baseline: Path, rows: list[Row], strict: bool) -> dict:
    return {
        "suite": suite,
        "baseline": str(baseline),
        "test": f"one-sided Welch t-test per metric, alpha {ALPHA}, floors {FLOOR}",
        "strict": strict,
        "passed": not any(r.failed(strict) for r in rows),
        "summary": summary_line(rows, strict),
        "rows": [asdict(r) | {"failed": r.failed(strict)} for r in rows],
    }


def write_junit(path: Path, suite: str, rows: list[Row], strict: bool) -> None:
    """One test case per (dataset, method) x metric, a failure for each that fails the gate."""
    failures = sum(r.failed(strict) for r in rows)
    root = ElementTree.Element("testsuites", name="fedbench check", tests=str(len(rows)), failures=str(failures))
    cases = ElementTree.SubElement(root, "testsuite", name=suite, tests=str(len(rows)), failures=str(failures))
    for r in rows:
        case = ElementTree.SubElement(cases, "testcase", classname=f"{suite}.{r.group}", name=r.metric)
        if r.failed(strict):
            text = (
                f"baseline {r.baseline:.4g} (n={r.n_baseline}), now {r.now:.4g} (n={r.n_now}), "
                f"delta {r.delta:+.4g}, tolerance {r.tolerance:.4g}"
                if r.delta is not None
                else f"{r.verdict} (n={r.n_now})"
            )
            ElementTree.SubElement(case, "failure", message=f"{r.group}: {r.metric} {r.verdict}").text = text
    try:
        atomic_write_bytes(path, ElementTree.tostring(root, encoding="utf-8", xml_declaration=True))
    except OSError as err:
        raise UserError(f"--junit-xml {path}: cannot write it ({err.strerror or err})") from None


def table(suite: str, rows: list[Row], strict: bool):
    """metric, baseline, now, Δ, tolerance, verdict: one row per (dataset, method) x metric."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(f"{suite}: now vs baseline (mean over seeds)"), title_justify="left")
    for col in ("dataset / method", "metric", "baseline", "now", "Δ", "tolerance", "verdict"):
        t.add_column(col, justify="left" if col in ("dataset / method", "metric", "verdict") else "right")
    style = {REGRESSION: "bold red", IMPROVED: "red" if strict else "green", WITHIN: ""}
    for r in rows:
        digits = 1 if not higher_is_better(r.metric) else 2
        cells = [f"{v:.{digits}f}" if v is not None else "—" for v in (r.baseline, r.now)]
        cells += [f"{r.delta:+.{digits}f}" if r.delta is not None else "—"]
        cells += [f"±{r.tolerance:.{digits}f}" if r.tolerance is not None else "—"]
        mark = style.get(r.verdict, "bold red")
        t.add_row(escape(r.group), r.metric, *cells, f"[{mark}]{r.verdict}[/]" if mark else r.verdict)
    return t
