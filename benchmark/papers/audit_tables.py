"""`fedbench plan --audit`: the audit's rows as one table per reference table, and exit 1 on a mismatch."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchmark.errors import UserError
from benchmark.papers.audit import audit


def print_audit(suite, jobs, out: Console, err_console: Console) -> None:
    rows = audit(suite, jobs)
    if not rows:
        raise UserError(f"{suite.name}: no dataset entry has reference.stated / reference.chosen to audit")
    for source in dict.fromkeys(r.source for r in rows):
        table = Table(title=f"{suite.name}: {source} — paper vs suite")
        for col in ("method", "setting", "status", "paper / suite", "runs", "", "where stated / why chosen"):
            table.add_column(col, overflow="fold")
        for r in (r for r in rows if r.source == source):
            mark = "ok" if r.ok else "[bold red]MISMATCH[/]"
            table.add_row(r.method, r.setting, r.status, str(r.paper), r.runs, mark, escape(r.reason))
        out.print(table)
    kinds = ", ".join(f"{sum(r.status == k for r in rows)} {k}" for k in dict.fromkeys(r.status for r in rows))
    bad = [r for r in rows if not r.ok]
    if bad:
        by_setting: dict[str, list[str]] = {}
        for r in bad:
            by_setting.setdefault(r.setting, []).append(f"{r.paper} -> {r.runs}")
        named = "; ".join(f"{k} ({', '.join(dict.fromkeys(v))})" for k, v in by_setting.items())
        err_console.print(escape(f"{len(bad)} mismatch(es) between the paper/suite and the jobs: {named}"))
        raise SystemExit(1)
    out.print(f"{len(rows)} settings checked ({kinds}): the jobs run every stated and decided value")
