"""`fedbench plan`: the expanded job table, or instead the audit, the budget, or the splits."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from benchmark.commands.output import err_console, out
from benchmark.errors import UserError


def plan_suite(
    select,
    splits: bool,
    max_clients: int,
    figures_dir,
    audit_only: bool,
    budget: bool,
    device: str,
    every_job=False,
    threads: int | None = None,
    remeasure: bool = False,
):
    if figures_dir and not splits:
        raise UserError("--figures writes the split figures: use it with --splits")
    suite, jobs = select()
    if audit_only:
        from benchmark.papers.audit_tables import print_audit

        print_audit(suite, jobs, out, err_console)
        return
    if budget:
        from benchmark.plan.budget import budget_table
        from benchmark.run.executor_base import torch_device
        from benchmark.run.threads import request

        request(threads)  # timed at the count the run will train at (run/threads.py)
        for part in budget_table(suite.name, jobs, torch_device(device), every_job, remeasure):
            out.print(part, markup=False, highlight=False) if isinstance(part, str) else out.print(part)
        return
    if splits:
        from benchmark.plan.splits import split_tables

        for table in split_tables(jobs, max_clients):
            out.print(table)
        if figures_dir:
            from benchmark.plan.splits import split_figures

            for path in split_figures(jobs, figures_dir):
                out.print(f"split figure: {path}", markup=False)
    from benchmark.report.status import LISTED_UP_TO

    if len(jobs) > LISTED_UP_TO and not every_job:
        out.print(group_table(suite, jobs))
    else:
        out.print(job_table(suite, jobs))
    out.print(workload_line(jobs), markup=False, highlight=False)


def group_table(suite, jobs) -> Table:
    """A row per dataset and method: 10^5 rows take minutes to render and nobody reads them."""
    groups: dict[tuple[str, str], list] = {}
    for j in jobs:
        groups.setdefault((j.dataset_label, j.method_label.split("[")[0]), []).append(j)
    title = f"{suite.name}: {len(jobs)} jobs, a row per dataset and method (--jobs lists each job)"
    table = Table(title=escape(title))
    for col in ("dataset", "method", "jobs", "seeds", "rounds", "clients", "varied settings"):
        table.add_column(col, justify="left" if col in ("dataset", "method", "varied settings") else "right")
    for (dataset, method), members in groups.items():
        varied: dict[str, set] = {}
        for j in members:
            for key, value in j.grid_point.items():
                varied.setdefault(key, set()).add(repr(value))
        table.add_row(
            escape(dataset),
            escape(method),
            str(len(members)),
            str(len({j.config.seed for j in members})),
            _span(j.config.rounds for j in members),
            _span(j.config.num_clients for j in members),
            escape(" ".join(f"{k}: {len(v)} values" for k, v in varied.items())),
        )
    return table


def _span(values) -> str:
    values = set(values)
    return f"{min(values)}" if len(values) == 1 else f"{min(values)}-{max(values)}"


def workload_line(jobs) -> str:
    """What the jobs add up to, before any data is loaded: rounds, and client updates (rounds x
    clients per round, each E epochs or K local steps); `plan --budget` turns it into time."""
    rounds = sum(j.config.rounds for j in jobs)
    per_round: dict[tuple, float] = {}  # a template's jobs share their participation section: once each
    for j in jobs:
        c = j.config
        if (key := (id(c.participation), c.num_clients)) not in per_round:
            per_round[key] = _clients_per_round(c)
    updates = sum(j.config.rounds * per_round[id(j.config.participation), j.config.num_clients] for j in jobs)
    return f"workload: {len(jobs):,} jobs, {rounds:,} rounds, ≈ {updates:,.0f} client updates (plan --budget: time)"


def _clients_per_round(c) -> float:
    """Expected clients per round (fixed mode: M as sampled, of all or of the pool; bernoulli: rate·N)."""
    from benchmark.data.participation import clients_per_round

    p = c.participation
    n = p.pool.size if p.pool and p.relative_to == "pool" else c.num_clients
    return clients_per_round(p.rate, n) if p.mode == "fixed" else p.rate * n


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
