"""`fedbench plan`: the expanded job table, or instead the audit, the budget, or the splits."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from benchmark.commands.output import err_console, out
from benchmark.errors import UserError


def plan_suite(select, splits: bool, max_clients: int, figures_dir, audit_only: bool, budget: bool, device: str):
    if figures_dir and not splits:
        raise UserError("--figures writes the split figures: use it with --splits")
    suite, jobs = select()
    if audit_only:
        from benchmark.papers.audit_tables import print_audit

        print_audit(suite, jobs, out, err_console)
        return
    if budget:
        from benchmark.report.budget import budget_table
        from benchmark.run.executor_base import torch_device

        out.print(budget_table(suite.name, jobs, torch_device(device)))
        return
    if splits:
        from benchmark.report.splits import split_tables

        for table in split_tables(jobs, max_clients):
            out.print(table)
        if figures_dir:
            from benchmark.report.splits import split_figures

            for path in split_figures(jobs, figures_dir):
                out.print(f"split figure: {path}", markup=False)
    out.print(job_table(suite, jobs))


def job_table(suite, jobs) -> Table:
    table = Table(title=escape(f"{suite.name}: {len(jobs)} jobs"))
    for col in ("id", "dataset", "split", "clients", "part.", "rounds", "method", "key hyper-parameters", "seed"):
        table.add_column(col, no_wrap=col in ("id", "method"))
    for j in jobs:
        c = j.config
        split = c.dataset.split.kind + (f"(α={c.dataset.split.alpha})" if c.dataset.split.alpha else "")
        # unset (None) parameters mean "the default": not key, left out
        hyper = [f"{k}={v}" for k, v in c.method.server.params.model_dump().items() if v is not None]
        hyper += [
            f"{t.name}.{k}={v}" for t in c.method.client for k, v in t.params.model_dump().items() if v is not None
        ]
        if c.method.uplink.name != "identity":
            hyper.append("uplink=" + c.method.uplink.name)
        local = f"lr={c.local.lr} B={c.local.batch_size} " + (
            f"E={c.local.epochs}" if c.local.epochs else f"K={c.local.steps}"
        )
        table.add_row(
            j.id,
            escape(j.dataset_label),
            split,
            str(c.num_clients),
            f"{c.participation.rate:g}",
            str(c.rounds),
            escape(" = ".join(v.method_label for v in j.views)),  # one job, every method that expands to it
            escape(" ".join(hyper + [local])),
            str(c.seed),
        )
    return table
