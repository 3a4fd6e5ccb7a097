"""`fedbench report` files under results/<suite>/report/: report.md and a self-contained
report.html (jinja2 templates over the same tables; figures embedded as base64 PNG), and per
table tables/<name>.csv and .tex, plus runs.csv (one row per job): how each is made. Each is written
by a registered output (report_output.py, outputs/); `write_report` runs them all."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from benchmark.report.entry_tables import LEGEND, EntryTable, entry_tables
from benchmark.report.figure_output import PAGE_WIDTH
from benchmark.report.figures import Figure
from benchmark.report.frames import jobs_frame, rounds_frame
from benchmark.report.protocol_sections import Section, build_sections
from benchmark.report.report_output import ReportInputs, write_outputs
from benchmark.report.table import check_columns
from benchmark.store.job_dir import atomic_write_bytes
from benchmark.store.layout import Store

TEMPLATES = Path(__file__).parent / "templates"
RUN_COLUMNS = ["job_id", "entry", "method", "setting", "settings", "seed", "status"]


def _md_escape(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table_md(t: EntryTable) -> str:
    """A Markdown table, the best of each column in bold, each row label with its footnote mark (footnotes_md)."""
    text, best = t.display()
    lines = ["| " + " | ".join(_md_escape(c) for c in text.columns) + " |", "|" + "---|" * len(text.columns)]
    for i, (_row, (_, cells), (_, marks)) in enumerate(zip(t.rows, text.iterrows(), best.iterrows()), 1):
        shown = [f"**{_md_escape(v)}**" if marks[k] else _md_escape(v) for k, v in cells.items()]
        shown[0] += f" [^{t.slug}-{i}]"
        lines.append("| " + " | ".join(shown) + " |")
    return "\n".join(lines)


def footnotes_md(t: EntryTable) -> str:
    return "\n".join(f"[^{t.slug}-{i}]: {row_jobs_text(row)}" for i, row in enumerate(t.rows, 1))


def html_cells(t: EntryTable) -> tuple[list[str], list[list[dict]]]:
    """Header and per row its cells for the HTML table: label cells (the first with the row's
    footnote mark), metric cells with an anchor id, the best mark and their job ids."""
    text, best = t.display()
    rows = []
    for i, row in enumerate(t.rows, 1):
        labels = t.labels(row)
        cells = [{"label": True, "text": text.iloc[i - 1][k], "note": "", "mark": ""} for k in labels]
        cells[0].update(note=f"{t.slug}-{i}", mark=str(i))
        for j, col in enumerate(t.columns):
            cell = row.cells[col.key]
            cells.append(
                {
                    "label": False,
                    "text": cell.text,
                    "best": cell.best,
                    "tied": cell.tied,
                    "id": f"{t.slug}-{i}-{j}",
                    "jobs": ", ".join(cell.job_ids or row.job_ids),
                }
            )
        rows.append(cells)
    return list(text.columns), rows


def job_refs(row) -> list[tuple[str, str]]:
    """(job id, ' (seed S)' or '') for each job behind a row."""
    seeds = row.seeds or [None] * len(row.job_ids)
    return [(j, "" if s is None else f" (seed {s})") for j, s in zip(row.job_ids, seeds)]


def row_jobs_text(row) -> str:
    return "jobs " + ", ".join(j + seed for j, seed in job_refs(row))


def tidy_frame(t: EntryTable) -> pd.DataFrame:
    """A row per (entry, method, setting); per metric column KEY the numbers behind its cell:
    KEY.mean, KEY.std, KEY.n (seeds with a value), KEY.paper and KEY.delta where the suite
    carries the paper's numbers (KEY.unscored: the settings the jobs ran other than the paper's, then no
    delta), KEY.ci_low and KEY.ci_high where an interval is computed."""
    with_paper = {c.key for c in t.columns if any(r.cells[c.key].paper is not None for r in t.rows)}
    with_interval = {c.key for c in t.columns if any(r.cells[c.key].interval for r in t.rows)}
    unscored = {c.key for c in t.columns if any(r.cells[c.key].unscored for r in t.rows)}
    records = []
    for row in t.rows:
        record = {"entry": t.entry, "method": row.method, "setting": row.setting, "settings": row.settings}
        if t.kind == "sensitivity":
            record["chosen"] = row.chosen
        record.update(seeds=row.n, status=row.status)
        for col in t.columns:
            cell = row.cells[col.key]
            record.update({f"{col.key}.mean": cell.mean, f"{col.key}.std": cell.std, f"{col.key}.n": cell.n})
            if col.key in with_paper:
                record.update({f"{col.key}.paper": cell.paper, f"{col.key}.delta": cell.delta})
                record.update({f"{col.key}.unscored": cell.unscored} if col.key in unscored else {})
            if col.key in with_interval:
                low, high = cell.interval or (None, None)
                record.update({f"{col.key}.ci_low": low, f"{col.key}.ci_high": high})
        record["jobs"] = " ".join(row.job_ids)
        records.append(record)
    return pd.DataFrame(records)


def table_frame(t: EntryTable) -> pd.DataFrame:
    """The tidy frame; a protocol's table its numbers where it has them, else each cell's own text
    (report/protocol_sections.py)."""
    if not t.of_protocol:
        return tidy_frame(t)
    if t.numbers is not None:
        return pd.DataFrame(t.numbers)
    text, _ = t.display()
    text["jobs"] = [" ".join(r.job_ids) for r in t.rows]
    return text


def table_csv(t: EntryTable) -> str:
    return table_frame(t).to_csv(index=False)


# report.json's layout, described by docs/schemas/report.schema.json: a change of a key's meaning or
# type is a new version.
REPORT_SCHEMA_VERSION = 1


def report_record(suite_name: str, runs: pd.DataFrame, tables: list[EntryTable]) -> dict:
    """report.json and `report --json`: the jobs behind the report (what a later, narrower report is
    compared with) and every table as its tidy rows, numbers as numbers (JSON null where missing)."""
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "suite": suite_name,
        "jobs": list(runs.job_id),
        "status": runs.status.value_counts().to_dict(),
        "tables": [
            {
                "entry": t.entry,
                "kind": t.kind,
                "title": t.title,
                "notes": t.notes,
                "rows": [_json_row(r, row) for r, row in zip(_records(table_frame(t)), t.rows, strict=True)],
            }
            for t in tables
        ],
    }


def _json_row(record: dict, row) -> dict:
    """A tidy row with lists as lists: the CSV's "2/3" seeds and space-joined job ids are for reading;
    JSON has the seeds and job ids behind the row and the count of finished seeds as a number."""
    finished = row.n.partition("/")[0]
    return {
        **record,
        "seeds": list(row.seeds),
        "finished_seeds": int(finished) if finished.isdigit() else 0,
        "jobs": list(row.job_ids),
    }


def _records(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.to_json(orient="records"))  # pandas writes NaN as null and numpy numbers as JSON's


def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = _md_escape
    env.globals.update(table_md=table_md, footnotes_md=footnotes_md, html_cells=html_cells, job_refs=job_refs)
    return env


def _run_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The HTML's table of every job: labels, status and the final numbers, as text."""
    shown = runs[
        RUN_COLUMNS[:2]
        + ["setting", "seed", "status", "rounds_completed", "final_ema_acc", "final_acc", "wall_s", "error"]
    ]
    return shown.map(
        lambda v: (
            "" if v is None or (isinstance(v, float) and pd.isna(v)) else f"{v:.2f}" if isinstance(v, float) else str(v)
        )
    )


def setting_columns(jobs) -> pd.DataFrame:
    """Per job the settings that tell its runs apart, as numbers: clients (M), local steps (K), epochs,
    learning rate (η), batch size, and every other grid or override setting (`settings` says the same
    as one string)."""
    rows = []
    for job in jobs:
        local = job.config.local
        row = {"job_id": job.id, "num_clients": job.config.num_clients, "local.steps": local.steps}
        row |= {"local.epochs": local.epochs, "local.lr": local.lr, "local.batch_size": local.batch_size}
        rows.append(row | {k: v for k, v in {**job.grid_point, **job.suite_point}.items() if k not in row})
    return pd.DataFrame(rows)


def runs_csv(runs: pd.DataFrame, tables: list[EntryTable], jobs) -> str:
    """A row per job: its labels, its settings as numbers (setting_columns), status and every number from
    its summary, and the per-job value behind each table column the report computed (raw accuracy at R,
    bytes to a target, the paired difference to the baseline's job at its seed), so every cell can be
    recomputed from it."""
    computed = [
        t.jobs[["job_id", *new]]
        for t in tables
        if t.jobs is not None and (new := [c.key for c in t.columns if c.key in t.jobs and c.key not in runs])
    ]
    if computed:
        runs = runs.merge(pd.concat(computed, ignore_index=True), on="job_id", how="left")
    settings = setting_columns(jobs)
    settings = settings[[c for c in settings.columns if c == "job_id" or c not in runs]]  # e.g. rounds: one column
    runs = runs.merge(settings, on="job_id", how="left")
    first = RUN_COLUMNS + [c for c in settings.columns if c not in RUN_COLUMNS]
    return runs[first + [c for c in runs.columns if c not in first]].to_csv(index=False)


def status_counts(jobs_df: pd.DataFrame) -> str:
    counts = jobs_df.status.value_counts()
    return f"{len(jobs_df)} jobs: " + ", ".join(f"{n} {s}" for s, n in counts.items())


def build_tables(
    suite, jobs, summaries: dict, store: Store, runs: pd.DataFrame
) -> tuple[list[EntryTable], list[Section]]:
    """(entry tables, protocol sections) for the suite's jobs; `runs` is their jobs_frame."""
    built, rest = build_sections(suite, jobs, summaries)
    sections = [section for _, section in built]
    if not rest:
        return [], sections
    rest_runs = runs[runs.job_id.isin({j.id for j in rest})]
    return entry_tables(suite, rest, rest_runs, rounds_frame(rest, store)), sections


def add_sensitivity_figure(table: EntryTable, runs: pd.DataFrame, jobs, figures_dir: Path, width: float) -> None:
    """The plot of the table's sensitivity rows, under the sensitivity table (where one can be drawn)."""
    from benchmark.report.figures import method_styles
    from benchmark.report.sensitivity_figure import sensitivity_figure, sensitivity_points

    keys = {c.key for c in table.columns}
    metric, ylabel = (  # the metric the grid was selected on
        ("final_subopt", "final F(w) − F*")
        if "final_subopt" in keys
        else ("final_val_ema_acc", "final validation accuracy (EMA, %)")
        if "final_val_ema_acc" in keys
        else ("final_ema_acc", "final test accuracy (EMA, %)")
    )
    ids = {i for r in table.sensitivity.rows for i in r.job_ids}
    points = {j.id: {**j.grid_point, **j.suite_point} for j in jobs if j.id in ids}
    data = sensitivity_points(runs[runs.job_id.isin(ids)], points, metric)
    path = sensitivity_figure(
        data,
        {r.method: r.setting for r in table.rows},
        ylabel,
        figures_dir / f"sensitivity-{table.slug}.png",
        method_styles(runs.method),
        log_y=metric == "final_subopt",
        width=width,
    )
    if path:
        table.sensitivity.figure = Figure(
            f"{table.entry}: {ylabel}, the metric the grid was selected on, against each grid parameter, "
            "mean ± std over the finished seeds; "
            "a method's other grid parameters are held at the setting its table shows (named above each panel); "
            "×: a setting with no finished seed",
            path,
        )


def document_context(report: ReportInputs) -> dict:
    """What report.md and report.html render (templates/)."""
    return dict(
        suite=report.suite.name,
        description=report.suite.description,
        counts=status_counts(report.runs),
        legend=LEGEND if report.tables else "",  # it explains the accuracy tables; protocol-only reports have none
        generated=report.generated,
        results=str(report.view.path),
        tables=report.tables,
        protocol_tables=report.protocol_tables,
        protocol_notes=[line for s in report.sections if s.note for line in s.note.splitlines()],  # a paragraph a line
        figures=[f for f in report.figures if f.path.exists()],
        run_table=_run_table(report.runs),
        out=report.view.report,
        relpath=os.path.relpath,
    )


def render(template: str, report: ReportInputs) -> str:
    return _env().get_template(template).render(**document_context(report))


def write_text(path: Path, text: str) -> Path:
    atomic_write_bytes(path, text.encode())
    return path


def write_report(
    suite,
    jobs,
    summaries: dict,
    store: Store,
    figures: list[Figure] = (),
    columns: tuple[str, ...] = (),
    wide: bool = False,
    figure_width: float = PAGE_WIDTH,
) -> tuple[list[Path], list[Figure]]:
    """Write every registered output (report_output.py) for `jobs` of `suite` from the results in
    `store`; returns the paths written and the figures the outputs drew. `figures`: drawn before
    (the protocol sections'), shown in the documents first; `columns` / `wide` choose the .tex tables' columns
    as the terminal's (latex_table.py); `figure_width`: the figures' width in inches (figure_output.py)."""
    runs = jobs_frame(jobs, store)
    tables, sections = build_tables(suite, jobs, summaries, store, runs)
    view = store.suite(suite.name)
    report = ReportInputs(suite, jobs, summaries, store, view, runs, tables, sections, columns, wide, figure_width)
    report.figures += figures
    check_columns([t for t in report.every_table if not t.of_protocol], columns)
    return write_outputs(report), report.figures[len(figures) :]
