"""How `fedbench check` shows its outcome (report/check.py): a terminal table, JSON for scripts
(docs/schemas/check.schema.json) and JUnit XML for CI systems. A check that could not compare
(exit 2) is an outcome too: its JSON and JUnit name the reason, so a pipeline always finds them."""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from xml.etree import ElementTree

from benchmark.errors import UserError
from benchmark.report.check import ALPHA, FLOOR, IMPROVED, REGRESSION, WITHIN, Row, higher_is_better, summary_line
from benchmark.store.job_dir import atomic_write_bytes

SCHEMA_VERSION = 1  # docs/schemas/check.schema.json; bump on any change a consumer would notice
FAILURE_TYPE = {REGRESSION: "regression", IMPROVED: "improvement", "missing": "missing-metric"}


@dataclass
class Outcome:
    """One check: its comparison rows, or the reason it compared nothing (`error`, exit 2)."""

    suite: str
    allow_improvements: bool
    baseline: Path | None = None
    rows: list[Row] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def exit_code(self) -> int:
        return 2 if self.error else int(any(r.failed(self.allow_improvements) for r in self.rows))

    @property
    def verdict(self) -> str:
        return ("passed", "failed", "error")[self.exit_code]

    def counts(self) -> dict[str, int]:
        failed = [r for r in self.rows if r.failed(self.allow_improvements)]
        return {
            "comparisons": len(self.rows),
            "failed": len(failed),
            "regressions": sum(r.verdict not in (WITHIN, IMPROVED) for r in self.rows),
            "improved": sum(r.verdict == IMPROVED for r in self.rows),
            "within_tolerance": sum(r.verdict == WITHIN for r in self.rows),
        }


def failure_type(row: Row) -> str:
    return FAILURE_TYPE.get(row.verdict, "job-not-finished")  # a status row: failed, diverged, ...


# ---------------------------------------------------------------- machine-readable output


def as_json(outcome: Outcome) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "suite": outcome.suite,
        "baseline": str(outcome.baseline) if outcome.baseline else None,
        "verdict": outcome.verdict,
        "passed": outcome.verdict == "passed",
        "exit_code": outcome.exit_code,
        "error": outcome.error,
        "test": {
            "name": "Welch t-test per (dataset, method) and metric",
            "sides": "one-sided" if outcome.allow_improvements else "two-sided",
            "alpha_per_side": ALPHA,
            "floor_accuracy_points": FLOOR["acc"],
            "floor_rounds": FLOOR["rounds"],
        },
        "allow_improvements": outcome.allow_improvements,
        "summary": outcome.error or summary_line(outcome.rows, outcome.allow_improvements),
        "counts": outcome.counts(),
        "seconds": round(outcome.seconds, 3),
        "rows": [row_json(r, r.failed(outcome.allow_improvements)) for r in outcome.rows],
    }


def row_json(row: Row, failed: bool) -> dict:
    return asdict(row) | {"failed": failed, "failure_type": failure_type(row) if failed else None}


def write_junit(path: Path, outcome: Outcome) -> None:
    """One test case per (dataset, method) x metric, its numbers as properties and a typed failure
    for each that fails the gate; a check that compared nothing is one case with an <error>."""
    counts = outcome.counts()
    totals = {
        "tests": str(max(len(outcome.rows), 1 if outcome.error else 0)),
        "failures": str(counts["failed"]),
        "errors": str(int(outcome.error is not None)),
        "skipped": "0",
        "time": f"{outcome.seconds:.3f}",
    }
    root = ElementTree.Element("testsuites", name="fedbench check", **totals)
    cases = ElementTree.SubElement(
        root,
        "testsuite",
        name=outcome.suite,
        timestamp=outcome.started.isoformat(timespec="seconds"),
        hostname=platform.node() or "unknown",
        **totals,
    )
    if outcome.error:
        case = ElementTree.SubElement(cases, "testcase", classname=f"{outcome.suite}.check", name="check", time="0")
        ElementTree.SubElement(case, "error", type="input", message=outcome.error).text = outcome.error
    for r in outcome.rows:
        case = ElementTree.SubElement(cases, "testcase", classname=f"{outcome.suite}.{r.group}", name=r.metric)
        properties = ElementTree.SubElement(case, "properties")
        for name in ("baseline", "now", "delta", "tolerance", "n_baseline", "n_now", "verdict"):
            value = getattr(r, name)
            ElementTree.SubElement(properties, "property", name=name, value="" if value is None else str(value))
        if r.failed(outcome.allow_improvements):
            text = (
                f"baseline {r.baseline:.4g} (n={r.n_baseline}), now {r.now:.4g} (n={r.n_now}), "
                f"delta {r.delta:+.4g}, tolerance ±{r.tolerance:.4g}"
                if r.delta is not None
                else f"{r.verdict} (n={r.n_now})"
            )
            if r.verdict == IMPROVED:
                text += " (the gate is two-sided: --allow-improvements passes improvements)"
            ElementTree.SubElement(
                case, "failure", type=failure_type(r), message=f"{r.group}: {r.metric} {r.verdict}"
            ).text = text
    try:
        atomic_write_bytes(path, ElementTree.tostring(root, encoding="utf-8", xml_declaration=True))
    except OSError as err:
        raise UserError(f"--junit-xml {path}: cannot write it ({err.strerror or err})") from None


def table(suite: str, rows: list[Row], allow_improvements: bool):
    """metric, baseline, now, Δ, tolerance, verdict: one row per (dataset, method) x metric."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(f"{suite}: now vs baseline (mean over seeds)"), title_justify="left")
    for col in ("dataset / method", "metric", "baseline", "now", "Δ", "tolerance", "verdict"):
        t.add_column(col, justify="left" if col in ("dataset / method", "metric", "verdict") else "right")
    style = {REGRESSION: "bold red", IMPROVED: "green" if allow_improvements else "bold red", WITHIN: ""}
    for r in rows:
        digits = 1 if not higher_is_better(r.metric) else 2
        cells = [f"{v:.{digits}f}" if v is not None else "—" for v in (r.baseline, r.now)]
        cells += [f"{r.delta:+.{digits}f}" if r.delta is not None else "—"]
        cells += [f"±{r.tolerance:.{digits}f}" if r.tolerance is not None else "—"]
        mark = style.get(r.verdict, "bold red")
        t.add_row(escape(r.group), r.metric, *cells, f"[{mark}]{r.verdict}[/]" if mark else r.verdict)
    return t
