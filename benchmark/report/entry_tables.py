"""The report's tables, as data: per dataset entry a row per method (its grid collapsed to the
best setting) and, where a method has several settings, a sensitivity table with a row per
setting. Each cell is mean ± std over the finished seeds (n in the row), the paper's number and
Δ beside it where the suite carries one, and the best of each column marked. Rows remember
their job ids, so every cell can be traced to the jobs behind it.

Only finished jobs give numbers (store/job_status.py); diverged, failed, stopped, running and not-run
jobs are counted and shown as such, never averaged in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchmark.errors import UserError
from benchmark.metrics import parse_metric
from benchmark.papers.audit import off_paper
from benchmark.report.cells import NOT_SCORED, Cell, Column, is_number, measured_cell, with_paper
from benchmark.round_values import RoundValue, aggregated, in_columns
from benchmark.store.job_status import FINISHED

if TYPE_CHECKING:  # a run's terminal tables (a protocol's section) import no pandas (0.2-0.5 CPU-s)
    import pandas as pd

    from benchmark.store.layout import Store


@dataclass
class Row:
    method: str
    setting: str  # the setting's label (method, its grid point and suite-grid settings)
    settings: str  # only the grid / override settings ('' for none)
    n: str  # finished seeds, "3" or "2/3"
    status: str  # "finished" or e.g. "finished 2, diverged@37 1"
    job_ids: list[str]
    seeds: list[int]
    cells: dict[str, Cell]
    chosen: bool = False  # sensitivity tables: the setting the main table shows


@dataclass
class EntryTable:
    entry: str
    slug: str  # file-name-safe entry label
    title: str
    columns: list[Column]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    sensitivity: EntryTable | None = None
    # "main" (a row per method), "sensitivity" (a row per setting), or a protocol's name: its section's
    # table (report/protocol_sections.py), a row per method, each cell its own text
    kind: str = "main"
    figure: object = None  # report_files.Figure drawn from this table, shown under it
    jobs: pd.DataFrame | None = None  # per job its value behind each column (runs.csv): its entry's jobs
    numbers: list[dict] | None = None  # a protocol's table: its cells' numbers, a record each row (its .csv)

    @property
    def of_protocol(self) -> bool:
        return self.kind not in ("main", "sensitivity")

    def labels(self, row: Row) -> dict[str, str]:
        """The label columns of a row, before the metric columns."""
        if self.of_protocol:
            return {"method": row.method}
        if self.kind == "sensitivity":
            labels = {"setting": row.setting, "chosen": "✓" if row.chosen else ""}
        else:
            labels = {"method": row.method, **({"setting": row.settings} if any(r.settings for r in self.rows) else {})}
        return {**labels, "n": row.n, "status": row.status}

    def display(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(plain-text cells, best-of-column mask), a row per Row: label columns, then one per metric column."""
        import pandas as pd

        text, best = [], []
        for r in self.rows:
            labels = self.labels(r)
            text.append({**labels, **{c.header: r.cells[c.key].text for c in self.columns}})
            best.append({**dict.fromkeys(labels, False), **{c.header: r.cells[c.key].best for c in self.columns}})
        return pd.DataFrame(text), pd.DataFrame(best)


SELECTION_RULE = (
    "grids collapsed to the best setting per method: highest final test accuracy "
    "(EMA-smoothed, last round), mean over finished seeds; diverged, failed and unfinished jobs "
    "excluded (a setting with such a seed is chosen only if no setting has every seed finished); "
    "every setting is in the sensitivity table"
)
SELECTION_RULE_CONVEX = SELECTION_RULE.replace(
    "highest final test accuracy (EMA-smoothed, last round)", "lowest final F(w) − F*"
)
SELECTION_RULE_VALIDATION = SELECTION_RULE.replace(
    "highest final test accuracy (EMA-smoothed, last round)",
    "highest final validation accuracy (EMA-smoothed, last round), the table showing the test numbers of those runs",
)


def selection_note(on: str, holdout: float, grid: bool) -> str:
    """What this table's grids were selected on, said in every table."""
    if on == "validation":
        return (
            f"selected on: validation — {holdout:g} of each client's training data held out (a client with fewer "
            f"than {1 / holdout:.0f} examples holds none out; summary.json lists them), the rest trained on; the "
            "test numbers shown are of those same runs (their job ids differ from test-selected runs)"
        )
    if not grid:
        return "selected on: nothing to select (one setting per method)"
    return "selected on: THE TEST SET (the papers' protocol): the numbers shown also chose each grid's setting"


LEGEND = (
    "acc@R: test accuracy after round R smoothed by an exponential moving average over evaluated rounds, "
    "a_s(t) = 0.9·a_s(t−1) + 0.1·a(t), a_s = a at the first evaluation (the FedACG/FedAGM papers' metric); "
    "raw: the unsmoothed test accuracy of that round. Rounds / MB to X%: the first round whose smoothed accuracy is ≥ X, "
    "and the bytes sent down + up (all clients) until then; >R: not reached in R rounds. "
    "Wall time: seconds per job (setup, training, evaluation), shown but never ranked (it measures the machine's "
    "load as much as the method). Cells: mean ± sample std over the finished "
    "seeds, n = finished seeds / jobs. Bold: the column's best, ahead of every other row by the paired test "
    "(the 95% Student-t interval of the per-seed differences excludes 0); ≈: tied for best, no paired test "
    "separates these from the best; no mark: none is separated (with one seed never)."
)


VALIDATION_HEADER = "selected on: val acc (EMA, %, round {rounds})"


def _columns(
    metrics: list[str],
    rounds: int,
    target: float | None,
    convex: bool,
    raw: bool,
    extra: list[Column] = (),
    validation: bool = False,
) -> list[Column]:
    """The metric columns; `raw`: an unsmoothed acc_raw@R beside each acc@R (from the round records);
    `extra` (client_columns) before the wall time; `validation`: first, the validation accuracy the grid
    was selected on (the other columns are test numbers)."""
    cols = [Column("final_val_ema_acc", VALIDATION_HEADER.format(rounds=rounds), True, "acc")] if validation else []
    for m in metrics:
        kind, value = parse_metric(m)
        if kind == "acc":
            cols.append(Column(m, f"acc@{int(value)} (EMA, %)", True, "acc"))
            if raw and f"acc_raw@{int(value)}" not in metrics:
                cols.append(Column(f"acc_raw@{int(value)}", f"acc@{int(value)} (raw, %)", True, "acc"))
        elif kind == "acc_raw":
            cols.append(Column(m, f"acc@{int(value)} (raw, %)", True, "acc"))
        else:
            x = f"{value:g}"
            cols.append(Column(m, f"rounds to {x}% (EMA)", False, "rounds"))
            cols.append(Column(f"bytes_to@{m.split('@')[1]}", f"MB to {x}% (EMA)", False, "MB"))
    if target is not None:
        cols.append(Column(f"bytes_to@{target:g}", f"MB to {target:g}% (EMA)", False, "MB"))
    keys = {c.key for c in cols}
    if f"acc@{rounds}" not in keys:  # else that column is the final EMA accuracy already
        cols.append(Column("final_ema_acc", f"final acc (EMA, %, round {rounds})", True, "acc"))
    if f"acc_raw@{rounds}" not in keys:
        cols.append(Column("final_acc", f"final acc (raw, %, round {rounds})", True, "acc"))
    if convex:
        cols.append(Column("final_subopt", "final F(w) − F*", False, "subopt"))
    cols += extra
    cols.append(Column("wall_s", "wall time (s)", False, "s", ranked=False))
    return cols


CLIENT_COLUMNS = ("p10", "p50", "p90")  # of summary.json's client_acc; all of it is in runs.csv
CLIENT_NOTE = (
    "client acc pQ: the Q-th percentile over the users of the test set of each user's test accuracy at the "
    "last round (raw), mean ± std over seeds; p25, p75 and the mean over users are in runs.csv, each "
    "user's accuracy in the job's client_acc.json"
)


def client_columns(entry_jobs: pd.DataFrame) -> list[Column]:
    """Where the entry's jobs recorded per-client accuracy (natural users): its 10th, 50th and 90th
    percentile over clients at the last round, each averaged over seeds like every column."""
    if not any(f"client_{q}" in entry_jobs and entry_jobs[f"client_{q}"].notna().any() for q in CLIENT_COLUMNS):
        return []
    return _by_client()


def _by_client() -> list[Column]:
    return [Column(f"client_{q}", f"client acc {q} (raw, %)", True, "acc") for q in CLIENT_COLUMNS]


def value_column(value: RoundValue) -> Column:
    """The table column of a per-round value declared with `column` (round_values.py)."""
    ranked = value.higher_is_better is not None
    return Column(value.name, value.label, bool(value.higher_is_better), value.unit, ranked=ranked)


def value_columns(entry_jobs: pd.DataFrame) -> list[Column]:
    """A column per declared per-round value that some job of the entry recorded."""
    return [value_column(v) for v in in_columns() if v.name in entry_jobs and entry_jobs[v.name].notna().any()]


def column_keys(config) -> dict[str, str]:
    """Key -> header of every metric column a table of jobs configured so may show, whatever their results
    (but the bytes to a target their accuracies decide; the paired column's header names the baseline, so
    only its key): `run --columns` is checked against them before any job runs."""
    convex = config.suboptimality
    declared = [value_column(v) for v in in_columns()]
    cols = _columns(config.metrics, config.rounds, None, convex, True, _by_client() + declared, True)
    return {c.key: c.header for c in cols} | {f"{_paired_headline(convex).key}-vs-baseline": ""}


def _status_text(jobs: pd.DataFrame) -> str:
    labels = [
        f"diverged@{int(r)}" if s == "diverged" and is_number(r) else s
        for s, r in zip(jobs.status, jobs.diverged_at_round)
    ]
    import pandas as pd

    counts = pd.Series(labels).value_counts()
    return ", ".join(s if n == len(labels) else f"{s} {n}" for s, n in counts.items())


TIE_MARK = " ≈"


SeedValues = Callable[[Row, str], dict[int, float]]  # a row's seed -> its finished value in a column


def frame_seeds(jobs: pd.DataFrame) -> SeedValues:
    """mark_best's per-seed values from a frame of the rows' jobs (job_id, seed, status, a column per key)."""
    from benchmark.report.paired import by_seed

    return lambda row, key: by_seed(jobs[jobs.job_id.isin(row.job_ids)], key)


def mark_best(columns: list[Column], rows: list[Row], seeds: SeedValues | None = None) -> None:
    """Per ranked column, among the rows whose every job finished where there are any (a mean over the one
    seed that did not diverge is no fair winner): the best mean in bold where it beats every other row by
    the paired test over their shared seeds (paired.beats); where some rows' seeds do not separate them
    from it, those rows and the best are tied, each marked TIE_MARK; where none is separated from it,
    nothing is marked. `seeds`: a row's per-seed values in a column (frame_seeds; a FedAc table's: each run at
    its cell's best η); without it the lowest / highest is bold untested."""
    from benchmark.report.paired import beats

    complete = [r for r in rows if "/" not in r.n] or rows
    for col in (c for c in columns if c.ranked):
        ranked = [r for r in complete if r.cells[col.key].value is not None]
        if len(ranked) < 2:
            continue
        values = [r.cells[col.key].value for r in ranked]
        top = max(values) if col.higher_is_better else min(values)
        if seeds is None:
            for r in ranked:
                r.cells[col.key].best = r.cells[col.key].value == top
            continue
        lead = next(r for r in ranked if r.cells[col.key].value == top)
        values_of = {id(r): seeds(r, col.key) for r in ranked}
        tied = [
            r for r in ranked if r is lead or not beats(values_of[id(lead)], values_of[id(r)], col.higher_is_better)
        ]
        if len(tied) == 1:
            lead.cells[col.key].best = True
        elif len(tied) < len(ranked):
            for r in tied:
                r.cells[col.key].tied = True
                r.cells[col.key].text += TIE_MARK


def _row(setting_jobs: pd.DataFrame, columns: list[Column], ref, off: dict[str, str] | None = None) -> Row:
    finished = setting_jobs[setting_jobs.status == FINISHED]
    first = setting_jobs.iloc[0]
    n = len(finished)
    labels = [first.setting, first.method_label, first.method]
    unscored = (off or {}).get(first.method, "")
    cells = {c.key: with_paper(measured_cell(c, finished, setting_jobs), c, ref, labels, unscored) for c in columns}
    return Row(
        first.method,
        first.setting,
        first.settings,
        str(n) if n == len(setting_jobs) else f"{n}/{len(setting_jobs)}",
        _status_text(setting_jobs),
        list(setting_jobs.job_id),
        [int(s) for s in setting_jobs.seed],
        cells,
    )


def _selection_key(setting_jobs: pd.DataFrame, convex: bool, on: str = "test") -> tuple | None:
    finished = setting_jobs[setting_jobs.status == FINISHED]
    key = "final_subopt" if convex else "final_val_ema_acc" if on == "validation" else "final_ema_acc"
    values = [float(v) for v in finished[key] if is_number(v)]
    if not values:
        return None
    mean = sum(values) / len(values)
    return (len(finished) == len(setting_jobs), -mean if convex else mean)


def best_settings(entry_jobs: pd.DataFrame, convex: bool, on: str = "test") -> dict[str, str]:
    """method -> its chosen setting (by SELECTION_RULE, on the test or validation accuracy); the first
    setting when none has numbers."""
    chosen = {}
    for method, jobs in entry_jobs.groupby("method", sort=False):
        keyed = [(_selection_key(g, convex, on), s) for s, g in jobs.groupby("setting", sort=False)]
        ranked = [(k, s) for k, s in keyed if k is not None]
        chosen[method] = max(ranked, key=lambda ks: ks[0])[1] if ranked else keyed[0][1]
    return chosen


def reach_target(entry_jobs: pd.DataFrame, rounds: pd.DataFrame, target: float) -> pd.Series:
    """Per job: bytes sent until the first round whose EMA accuracy is ≥ target (NaN: never)."""
    hits = rounds[rounds.ema_acc >= target].groupby("job_id")["bytes"].first()
    return entry_jobs.job_id.map(hits)


def raw_accuracy_at(entry_jobs: pd.DataFrame, rounds: pd.DataFrame, r: int) -> pd.Series:
    """Per job: the unsmoothed test accuracy of the last evaluated round ≤ r (as acc_raw@R; NaN when
    the job did not reach round r)."""
    reached = rounds.groupby("job_id")["round"].max() >= r
    upto = rounds[rounds["round"] <= r].groupby("job_id")["test_acc"].last()
    return entry_jobs.job_id.map(upto[reached.reindex(upto.index, fill_value=False)])


def value_per_job(entry_jobs: pd.DataFrame, rounds: pd.DataFrame, value: RoundValue) -> pd.Series:
    """Per job: its evaluated rounds' `value` aggregated as declared (NaN: no round recorded it)."""
    recorded = rounds[rounds[value.name].notna()].groupby("job_id")[value.name]
    return entry_jobs.job_id.map(recorded.agg(lambda series: aggregated(value, series)))


def add_round_metrics(
    entry_jobs: pd.DataFrame, rounds: pd.DataFrame, metrics: list[str], convex: bool
) -> tuple[float | None, list[str]]:
    """Columns the summaries lack, from the round records: acc_raw@R beside each acc@R, each declared
    per-round value with `column` aggregated per job, and where the suite names no rounds_to@X (and is not
    convex) bytes to a target every method reached. Returns (that target or None, notes saying how it was chosen)."""
    for value in in_columns():
        if value.name in entry_jobs:
            raise UserError(f"per-round value {value.name!r} has the name of a column of the jobs' table: rename it")
        entry_jobs[value.name] = value_per_job(entry_jobs, rounds, value)
    for m in metrics:
        kind, r = parse_metric(m)
        if kind == "acc" and f"acc_raw@{int(r)}" not in metrics:
            entry_jobs[f"acc_raw@{int(r)}"] = raw_accuracy_at(entry_jobs, rounds, int(r))
    finals = entry_jobs[entry_jobs.status == FINISHED].groupby("method")["final_ema_acc"].max().dropna()
    if convex or finals.empty or any(parse_metric(m)[0] == "rounds_to" for m in metrics):
        return None, []
    target = math.floor(finals.min())
    entry_jobs[f"bytes_to@{target:g}"] = reach_target(entry_jobs, rounds, target)
    return target, [
        f"MB to {target:g}%: the suite names no rounds_to@X target; {target:g}% is the highest final "
        "EMA accuracy the weakest method reached (rounded down)"
    ]


PAIRED_NOTE = (
    "Δ vs {baseline}: the method's difference to {baseline} (the entry's first method) at the same seeds (same "
    "clients, data order and initial model), mean and 95% Student-t interval over the seeds both finished"
)


def _paired_headline(convex: bool) -> Column:
    if convex:
        return Column("final_subopt", "final F(w) − F*", False, "subopt")
    return Column("final_ema_acc", "final acc (EMA)", True, "acc")


def add_paired_column(rows: list[Row], entry_jobs: pd.DataFrame, convex: bool) -> Column:
    """The column of each row's paired difference to the first row (the baseline method), its
    cells added to the rows."""
    from benchmark.report.paired import by_seed, paired_cell, paired_column

    headline = _paired_headline(convex)
    column = paired_column(rows[0].method, headline)
    baseline_jobs = entry_jobs[entry_jobs.job_id.isin(rows[0].job_ids)]
    rows[0].cells[column.key] = Cell("baseline")
    for row in rows[1:]:
        jobs = entry_jobs[entry_jobs.job_id.isin(row.job_ids)]
        row.cells[column.key] = paired_cell(jobs, baseline_jobs, headline.key, headline.unit)
    # per job (runs.csv): its difference to the baseline's job at its seed
    base = by_seed(baseline_jobs, headline.key)
    others = {j for row in rows[1:] for j in row.job_ids}
    entry_jobs[column.key] = [
        float(v) - base[int(s)] if j in others and st == FINISHED and is_number(v) and int(s) in base else None
        for j, s, st, v in zip(entry_jobs.job_id, entry_jobs.seed, entry_jobs.status, entry_jobs[headline.key])
    ]
    return column


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "entry"


def entry_tables(suite, jobs: list, jobs_df: pd.DataFrame, rounds_df: pd.DataFrame | None) -> list[EntryTable]:
    """One EntryTable per dataset entry with jobs (and its sensitivity table where a grid has several
    settings); without `rounds_df` no bytes-to-target column where the suite names no rounds_to@X."""
    tables, slugs = [], set()
    unscored = off_paper(suite, jobs)  # (entry, method) -> settings run other than the paper's
    for index, entry in enumerate(suite.datasets):
        entry_jobs = jobs_df[jobs_df.entry_index == index].copy()
        if entry_jobs.empty:
            continue
        off = {method: text for (i, method), text in unscored.items() if i == index}
        e_jobs = [j for j in jobs if j.dataset_index == index]
        config = e_jobs[0].config
        convex = any(j.config.suboptimality for j in e_jobs)
        raw = rounds_df is not None and not rounds_df.empty
        target, notes = add_round_metrics(entry_jobs, rounds_df, config.metrics, convex) if raw else (None, [])
        by_client = client_columns(entry_jobs)
        on = "validation" if all(j.config.select.on == "validation" for j in e_jobs) else "test"
        extra = by_client + value_columns(entry_jobs)
        columns = _columns(config.metrics, config.rounds, target, convex, raw, extra, on == "validation")
        notes += [CLIENT_NOTE] if by_client else []
        ref = entry.reference
        rule = SELECTION_RULE_CONVEX if convex else SELECTION_RULE_VALIDATION if on == "validation" else SELECTION_RULE
        chosen = best_settings(entry_jobs, convex, on)
        main_rows = [_row(entry_jobs[entry_jobs.setting == s], columns, ref, off) for s in chosen.values()]
        mark_best(columns, main_rows, frame_seeds(entry_jobs))
        main_columns = columns
        if len(main_rows) > 1:
            main_columns = [add_paired_column(main_rows, entry_jobs, convex), *columns]
            notes.append(PAIRED_NOTE.format(baseline=main_rows[0].method))
        slug = _slug(entry.label or entry.name)
        slug = slug if slug not in slugs else f"{slug}_{index}"
        slugs.add(slug)
        title = (
            f"{entry.label or entry.name} ({entry.split.kind}, {config.num_clients} clients, {config.rounds} rounds)"
        )
        budget = entry_jobs.groupby("method", sort=False).setting.nunique()
        grid = budget.max() > 1
        notes.append(selection_note(on, config.select.holdout, grid))
        title += " — grid selected on the test set" if grid and on == "test" and not convex else ""
        notes.append("tuning budget (settings tried per method): " + ", ".join(f"{m} {n}" for m, n in budget.items()))
        if ref:
            title += f" — paper: {ref.source}"
            if ref.withheld:
                notes.append(
                    "paper numbers withheld (the extending suite changed the settings they were measured "
                    "under): " + ", ".join(ref.withheld)
                )
            if ref.contradicted:
                notes.append(
                    "† paper cell its own numbers contradict (not a target): "
                    + "; ".join(f"{c.row} {c.metric}: {c.reason}" for c in ref.contradicted)
                )
        notes += [f"{NOT_SCORED} {m}: not scored against the paper, the jobs ran {t}" for m, t in off.items()]
        notes += [f"another paper prints other numbers: {ref.also_printed}"] if ref and ref.also_printed else []
        notes += [
            f"{c.status}, not stated by the paper: {c.setting} = {c.value}"
            + (f" ({c.method})" if c.method else "")
            + f" — {c.reason}"
            for c in (ref.chosen if ref else [])
            if c.status in ("assumed", "read from the text")
        ]
        table = EntryTable(entry.label or entry.name, slug, title, main_columns, main_rows, notes, jobs=entry_jobs)
        if entry_jobs.groupby("method").setting.nunique().max() > 1:
            table.notes.insert(0, rule)
            several = entry_jobs.groupby("method").setting.transform("nunique") > 1
            rows = [_row(g, columns, ref, off) for _, g in entry_jobs[several].groupby("setting", sort=False)]
            for r in rows:
                r.chosen = r.setting in chosen.values()
            mark_best(columns, rows, frame_seeds(entry_jobs))
            table.sensitivity = EntryTable(
                table.entry,
                f"{slug}.sensitivity",
                f"{table.entry}: every setting of the grid",
                columns,
                rows,
                [rule],
                kind="sensitivity",
            )
        tables.append(table)
    return tables


@dataclass
class Headline:
    """One method's headline number in one dataset entry: the final EMA accuracy (convex: final F − F*)
    of the setting its table shows, mean over its finished seeds."""

    entry: str
    method: str
    metric: str  # final_ema_acc or final_subopt
    value: float
    seeds: int


def headline_numbers(suite, jobs, store: Store) -> list[Headline]:
    """Each dataset entry's methods' headline numbers (Headline)."""
    from benchmark.report.frames import jobs_frame

    frame = jobs_frame(jobs, store)
    numbers = []
    for index, entry in frame.groupby("entry_index", sort=False):
        convex = any(j.config.suboptimality for j in jobs if j.dataset_index == index)
        key = "final_subopt" if convex else "final_ema_acc"
        for method, setting in best_settings(entry, convex).items():
            values = entry[(entry.setting == setting) & (entry.status == FINISHED)][key].dropna()
            if len(values):
                numbers.append(Headline(entry.entry.iloc[0], method, key, float(values.mean()), len(values)))
    return numbers
