"""The record of the FedAc authors' released runs replayed (suites/papers/fedac.authors_replay.yaml,
`split.samples: authors_numpy`): each released row matched with the job that replays it, their
final F(w) beside fedbench's, and why any pair differs by more than 1e-6 relative.

    python -m benchmark.protocols.fedac.released suites/papers/fedac.authors_replay.yaml \\
        --results-dir RESULTS --reference REFERENCE_DIR --out docs/reproductions/fedac/replay

writes OUT/runs.csv.gz (one row per released run, in the files' order) and OUT/report.md.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import click
import pandas as pd

from benchmark.errors import UserError
from benchmark.papers.paper_settings import GenerationError
from benchmark.store.layout import Store
from benchmark.store.records import NO_SUMMARY, FailedSummary, JobSummary, measured

TOLERANCE = 1e-6  # relative, on F(w): the issue's bar ("match to 1e-6 relative")

# why a released run and its replay are not equal to TOLERANCE (the `why` column)
WHY = {
    "both_diverged": "both diverged: the authors' final loss is not finite and fedbench's run stopped as diverged",
    "authors_diverged": "the authors' final loss is not finite, fedbench's is",
    "authors_overflow": "the authors' final loss is inf, fedbench's finite and far above F(w0): their "
    "-log sigmoid(y x'w) is -log 0 = inf once a margin y x'w falls below -709.8 (the sigmoid underflows), where "
    "fedbench's softplus stays finite; fedbench's own final w has such margins (fedbench_min_margin)",
    "fedbench_diverged": "fedbench's run diverged (a non-finite loss or model), the authors' final loss is finite",
    "not_run": "no finished replay in the results store",
    "rounding": "rounding-chaotic: fedbench's own replay with η (or λ) moved by a few units in its last place "
    "(·(1 ± 2^-50), a rounding-size change to every step), or with its sums in another order, or the run "
    "replayed again in another batch, ends more than 1e-6 away from itself, so no two float64 implementations "
    "of the run agree to 1e-6 (nudged_rel_change, probe_replays_itself)",
    "rounding_floor": "within the run's own rounding floor: fedbench's replays with η and λ each moved by ±2^-50, "
    "with every sum in another order, and again in another batch, spread by up to 1e-6 (10^6-10^10 times a "
    "stable run's), and fedbench is within FLOOR_FACTOR = 10 times that spread of the authors",
    "authors_code_here_differs": "the authors' own code, run again here (authors_rerun.py), ends more than 1e-6 from "
    "their released number (authors_here_final_loss): the released digits are not reproducible to 1e-6 even by "
    "their code on another CPU and BLAS",
    "differs": "finite in both, more than 1e-6 apart, and not shown rounding-chaotic",
    "differs_unchecked": "finite in both, more than 1e-6 apart; not checked for rounding (the record's time ran out)",
}
NUDGE = 2.0**-50  # η or λ scaled by 1 ± NUDGE: every step's coefficients move by a few units in their last place
# the probes: each a rounding-size change to every step, in another direction (nudged_changes)
PROBES = (("lr", 1 + NUDGE), ("lr", 1 - NUDGE), ("weight_decay", 1 + NUDGE), ("weight_decay", 1 - NUDGE))
# a run within this many times its probe spread of the authors' is within its rounding floor: the authors'
# own code on two machines, and their two float64 arrangements of one recursion, differ by up to about
# 10x that spread (docs/reproductions/fedac/replay/README.md)
FLOOR_FACTOR = 10
PROBED = "eta±lambda±order+again"  # the `nudge` of a row PROBES, the order probe and its replays again checked
ORDER_SEED = 0  # the order probe's permutation of the training rows (engine.run_batch's row_order)


def replayed(suite: str, store: Store, reference: Path, every_run: bool = True) -> pd.DataFrame:
    """One row per released run: its key, the authors' and fedbench's final F(w), their relative
    difference, and `why` (empty where they match to TOLERANCE). `every_run`: a released run that
    no job of the suite replays is an error (else it is left out: a suite of a few of them)."""
    from benchmark.papers.fedac_authors import f_star
    from benchmark.papers.fedac_replay import released_runs
    from benchmark.store.job_dir import JobDir

    by_key = job_ids_by_key(suite)
    rows, summaries = [], {}
    for run in released_runs(reference):
        job_id = by_key.get(run.key)
        if job_id is None and not every_run:
            continue
        if job_id is None:
            raise UserError(f"{suite}: no job replays the authors' run {run.runid} {run.key}")
        if job_id not in summaries:
            summaries[job_id] = JobDir.for_reading(store, job_id).read_summary() or NO_SUMMARY
        summary = summaries[job_id]
        ours = _final_loss(summary, f_star(run.lam))
        status = summary.status or "not run"
        rel = abs(ours / run.final_loss - 1) if math.isfinite(ours) and math.isfinite(run.final_loss) else math.nan
        rows.append(
            {
                "runid": run.runid,
                "lambda": run.lam,
                "alg": run.alg,
                "method": run.key[0],
                "eta": run.eta,
                "M": run.workers,
                "K": run.steps,
                "authors_final_loss": run.final_loss,
                "fedbench_final_loss": ours,
                "rel_diff": rel,
                "match": bool(rel <= TOLERANCE),
                "why": "" if rel <= TOLERANCE else _why(run.final_loss, ours, summary.status),
                "job_id": job_id,
                "fedbench_status": status,
                "ran_on": "not run" if status == "not run" else ran_on(measured(summary).environment or {}),
            }
        )
    return pd.DataFrame(rows)


@functools.cache
def _jobs(suite: str) -> dict:
    from benchmark.suite.expand import load_jobs

    return {job.id: job for job in load_jobs(suite)[1]}


def ran_on(environment: dict) -> str:
    """Where a replay ran, as its summary recorded it: the machine and the commit."""
    dirty = " (dirty)" if environment.get("git_dirty") else ""
    return (
        f"{environment.get('device_name', '?')}, host {environment.get('host', '?')}, python "
        f"{environment.get('python', '?')}, commit {str(environment.get('git_commit', '?'))[:7]}{dirty}"
    )


def job_ids_by_key(suite: str) -> dict[tuple, str]:
    """(method label, λ, η, M, K) -> the id of the suite's job with these settings."""
    return {
        (view.method_label, c.local.weight_decay, c.local.lr, c.num_clients, c.local.steps): job.id
        for job in _jobs(suite).values()
        for view in job.views
        for c in (view.config,)
    }


def nudged_changes(
    suite: str, finals: dict[str, float], workers: int, budget_s: float
) -> dict[str, tuple[float, float]]:
    """job id -> (max |F'/F − 1| over the probes, |F''/F − 1|) for the jobs of `finals` (id -> final loss
    F): F' the final loss of its replay with η or λ scaled by 1 ± NUDGE (how far rounding-size changes
    to every step move it) or with the training rows in another order and the workers reversed (every
    sum over them in another order), F'' of the replay again as it was, in this batch (the BLAS products
    of a batch of another size sum in another order: 0 where it replays the recorded run bit for bit),
    in the probes' batch and alone, the larger.
    The jobs run by batch (batch_key; a job and its probes in one batch), smallest M first, `workers`
    at a time (forked), until `budget_s` is spent; the jobs not reached are left out."""
    import multiprocessing

    from benchmark.protocols.fedac.jobs import batch_key

    jobs = _jobs(suite)
    groups = defaultdict(list)
    for job_id, final in finals.items():
        groups[batch_key(jobs[job_id].config)].append((job_id, jobs[job_id].config, final))
    tasks = sorted(groups.values(), key=lambda g: g[0][1].num_clients)
    out, deadline = {}, time.monotonic() + budget_s
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pending = [pool.apply_async(_nudged, (task,)) for task in tasks]
        for result in pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                out.update(result.get(timeout=left))
            except multiprocessing.TimeoutError:
                break
        pool.terminate()
    return out


def _nudged(task: list[tuple]) -> dict[str, tuple[float, float]]:
    import torch

    from benchmark.engine.setup import load_source
    from benchmark.papers.fedac_authors import f_star
    from benchmark.protocols.fedac.replay import run_group

    torch.set_num_threads(1)  # one of `workers` processes: as the engine runs (FedAcProtocol.threads)
    # the jobs as they are first (the batch's F is measured at the first one's λ), then each probe of each
    configs = [c for _, c, _ in task] + [
        c.model_copy(update={"local": c.local.model_copy(update={key: getattr(c.local, key) * factor})})
        for key, factor in PROBES
        for _, c, _ in task
    ]
    fstar = f_star(configs[0].local.weight_decay)  # one λ per batch
    # and the jobs as they are with every sum over examples and workers in another order
    n = len(load_source(configs[0]).train_y)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(ORDER_SEED))
    outcomes = run_group(configs) + run_group(configs[: len(task)], row_order=order)
    alone = [run_group([c])[0] for c in configs[: len(task)]]  # BLAS sums a batch of one (gemv) another way
    finals = [o.records[-1]["subopt"] + fstar if o.records else math.nan for o in outcomes + alone]
    out = {}
    for i, (job_id, _, plain) in enumerate(task):
        again = (finals[i], finals[-len(task) + i])
        probed = finals[len(task) + i : -len(task) : len(task)]
        # a probe that diverged moved the run without bound
        out[job_id] = (
            max(abs(f / plain - 1) if math.isfinite(f) else math.inf for f in probed),
            max(abs(f / plain - 1) if math.isfinite(f) else math.inf for f in again),
        )
    return out


def write_record(
    suite: str,
    store: Store,
    reference: Path,
    out: Path,
    command: str,
    wall_s: float | None,
    every_run: bool = True,
    workers: int = 1,
    check_s: float = 0.0,
    earlier: pd.DataFrame | None = None,
    earlier_note: str = "",
    authors_here: pd.DataFrame | None = None,
) -> None:
    """OUT/runs.csv.gz and OUT/report.md; the runs that differ are checked for rounding (nudged_changes,
    within `check_s` seconds on `workers` processes). `earlier`: another machine's runs.csv of the
    same suite, whose replays fill the rows this results store has not run (`ran_on` says which).
    `authors_here`: the authors' own code run again here on some rows (authors_rerun.py's CSV)."""
    runs = replayed(suite, store, reference, every_run)
    ran_here = set(runs.loc[runs["fedbench_status"] != "not run", "runid"])
    runs["nudge"], runs["nudged_rel_change"], runs["fedbench_min_margin"] = "", math.nan, math.nan
    runs["probe_replays_itself"] = math.nan
    if earlier is not None:
        runs = _with_earlier(runs, earlier, earlier_note)
        runs = _same_replay_probed(runs, earlier, ran_here)
    differs = runs["why"].isin(["differs", "differs_unchecked", "rounding_floor"])
    to_probe = differs & (runs["nudge"] != PROBED)  # an earlier record's probes of these rows stand
    finals = dict(zip(runs.loc[to_probe, "job_id"], runs.loc[to_probe, "fedbench_final_loss"]))
    changes = nudged_changes(suite, finals, workers, check_s) if check_s else {}
    probed = to_probe & runs["job_id"].isin(changes.keys())
    if probed.any():
        found = runs.loc[probed, "job_id"].map(changes)
        runs.loc[probed, "nudged_rel_change"] = found.map(lambda c: c[0]).astype(float)
        runs.loc[probed, "probe_replays_itself"] = found.map(lambda c: c[1]).astype(float)
        runs.loc[probed, "nudge"] = PROBED
    checked = differs & (runs["nudge"] == PROBED)
    spread = _spread(runs)
    chaotic = checked & (spread > TOLERANCE)
    floor = checked & ~chaotic & (runs["rel_diff"] <= FLOOR_FACTOR * spread)
    runs.loc[checked, "why"] = "differs"
    runs.loc[chaotic, "why"], runs.loc[floor, "why"] = "rounding", "rounding_floor"
    runs.loc[differs & ~checked, "why"] = "differs_unchecked"
    if earlier is not None:  # probed here first: the earlier verdict only where this record's time ran out
        runs = _still_rounding(runs, earlier, ran_here)
    if authors_here is not None:
        runs = _with_authors_here(runs, authors_here)
    overflow = (runs["why"] == "authors_diverged") & runs["fedbench_min_margin"].isna()
    margins = runs["job_id"].where(overflow).map(lambda j: _min_margin(suite, store, j), na_action="ignore")
    runs.loc[overflow, "fedbench_min_margin"] = margins[overflow]
    diverged = runs["why"] == "authors_diverged"
    runs.loc[diverged & (runs["fedbench_min_margin"] < EXP_UNDERFLOW), "why"] = "authors_overflow"
    out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out / "runs.csv.gz", index=False, float_format="%.17g")
    text = report(runs, command, wall_s, _environment(runs, store))
    here = int(runs["runid"].isin(ran_here).sum())
    text += f"\n## Where they ran\n\n{here:,} rows by the command above, the rest taken from the earlier record.\n\n"
    text += "".join(f"- {n:,}: {where}\n" for where, n in Counter(runs["ran_on"]).most_common())
    (out / "report.md").write_text(text)
    click.echo(f"{int(runs['match'].sum()):,} of {len(runs):,} match to {TOLERANCE:g}: {out / 'report.md'}")


# the columns a row of the earlier record brings (its replay, and what its own record found about it)
EARLIER = ["fedbench_final_loss", "rel_diff", "match", "why", "fedbench_status", "nudged_rel_change"]
# and those it brings when it has them (a record before them lacks them)
EARLIER_IF_THERE = ["nudge", "fedbench_min_margin", "probe_replays_itself"]


def _spread(runs: pd.DataFrame) -> pd.Series:
    """A probed run's own rounding floor: the largest move of its probes, or of its replay again in another batch."""
    return runs[["nudged_rel_change", "probe_replays_itself"]].max(axis=1)


PRINTED = 1e-15  # their summary prints 16-17 digits: a last-digit difference is its printing, not their code


def _with_authors_here(runs: pd.DataFrame, here: pd.DataFrame) -> pd.DataFrame:
    """The authors' code's final loss here beside their released one (authors_here_rel_diff) and
    fedbench's (fedbench_vs_authors_here); a row their own code does not reproduce to TOLERANCE is
    classed so, whatever the probe found (their number is then not a fixed target)."""
    from benchmark.protocols.fedac.authors_rerun import COLUMNS

    if set(COLUMNS) - set(here.columns) or not here["runid"].is_unique:
        raise UserError(f"--authors-here: not a CSV of authors_rerun.py (needs {COLUMNS}, one row per runid)")
    theirs = runs["runid"].map(here.set_index("runid")["authors_here_final_loss"])
    runs["authors_here_final_loss"] = theirs
    runs["authors_here_on"] = runs["runid"].map(here.set_index("runid")["authors_here_on"])
    runs["authors_here_rel_diff"] = (theirs / runs["authors_final_loss"] - 1).abs()
    runs["fedbench_vs_authors_here"] = (runs["fedbench_final_loss"] / theirs - 1).abs()
    unexplained = runs["why"].isin(["differs", "differs_unchecked", "rounding_floor"])
    runs.loc[unexplained & (runs["authors_here_rel_diff"] > TOLERANCE), "why"] = "authors_code_here_differs"
    return runs


def _with_earlier(runs: pd.DataFrame, earlier: pd.DataFrame, note: str = "") -> pd.DataFrame:
    """The rows this store has not run, from the earlier record where it ran them (by runid), each
    with the machine and commit it ran on as that record names them (`ran_on`; `note`, else "an
    earlier record", where it names none). Its rounding verdicts stand where its check found a run
    chaotic (nudge "w0": that record nudged w0); the rest are checked again here."""
    prior = earlier.set_index("runid")
    missing = {"runid", "job_id", *EARLIER} - set(earlier.columns)
    if missing or not prior.index.is_unique:
        raise UserError(f"the earlier runs.csv is not a replay record's (lacks {sorted(missing)} or repeats a runid)")
    take = (runs["fedbench_status"] == "not run") & runs["runid"].map(prior["fedbench_status"]).isin(
        ["finished", "diverged", "failed"]
    )
    if (runs.loc[take, "job_id"] != runs.loc[take, "runid"].map(prior["job_id"])).any():
        raise UserError("the earlier runs.csv replays other jobs: not a record of this suite")
    prior["why"] = prior["why"].fillna("")
    if "nudge" in prior.columns:  # read as numbers where no row was nudged
        prior["nudge"] = prior["nudge"].fillna("").astype(str)
    # (only where there is a row to take: an empty selection's map keeps the runids' dtype, not the column's)
    for column in EARLIER + [c for c in EARLIER_IF_THERE if c in prior.columns] if take.any() else []:
        runs.loc[take, column] = runs.loc[take, "runid"].map(prior[column])
    named = prior["ran_on"].fillna("") if "ran_on" in prior.columns else pd.Series("", index=prior.index)
    where = runs.loc[take, "runid"].map(named)
    runs.loc[take, "ran_on"] = where.where(~where.isin(["", "not run"]), note or "an earlier record")
    if "nudge" not in prior.columns:  # the first device record nudged w0 only
        runs.loc[take & (runs["why"] == "rounding"), "nudge"] = "w0"
    runs["match"] = runs["match"].astype(bool)
    return runs


def _same_replay_probed(runs: pd.DataFrame, earlier: pd.DataFrame, ran_here: set) -> pd.DataFrame:
    """Rows run here whose replay is the earlier record's bit for bit (the same final loss: the same
    arithmetic on the same stream) keep that record's probes (nudge PROBED and their numbers): the
    probes measured this very replay, so a record can be written in passes without probing twice."""
    prior = earlier.set_index("runid")
    if "nudge" not in prior.columns or "probe_replays_itself" not in prior.columns:
        return runs
    same = runs["runid"].isin(ran_here) & (
        runs["fedbench_final_loss"] == runs["runid"].map(prior["fedbench_final_loss"])
    )
    same &= runs["runid"].map(prior["nudge"].fillna("").astype(str)) == PROBED
    if not same.any():  # (an empty selection's map keeps the runids' dtype, not the column's)
        return runs
    for column in ["nudge", "nudged_rel_change", "probe_replays_itself"]:
        runs.loc[same, column] = runs.loc[same, "runid"].map(prior[column])
    return runs


EARLIER_MARK = " (earlier replay)"  # the `nudge` of a verdict carried from an earlier record's replay


def _still_rounding(runs: pd.DataFrame, earlier: pd.DataFrame, ran_here: set) -> pd.DataFrame:
    """Rows run again here that still differ, that this record's probes did not reach in their time
    (`differs_unchecked`), and that the earlier record's probes found rounding-chaotic (a rounding-size
    change moved that replay by more than TOLERANCE, nudged_rel_change): how far a run amplifies
    rounding is the run's own, not the order of one implementation's sums, so the verdict stands, its
    probes' numbers carried, `nudge` marked "(earlier replay)"; probing each again costs six replays a row."""
    prior = earlier.set_index("runid")
    before = runs["runid"].map(prior["why"].fillna("")) == "rounding"
    carry = runs["runid"].isin(ran_here) & (runs["why"] == "differs_unchecked") & before
    if not carry.any():  # (an empty selection's map keeps the runids' dtype, not the column's)
        return runs
    for column in ["nudged_rel_change", "probe_replays_itself"]:
        if column in prior.columns:
            runs.loc[carry, column] = runs.loc[carry, "runid"].map(prior[column]).astype(float)
    nudge = prior["nudge"].fillna("").astype(str) if "nudge" in prior.columns else pd.Series("w0", index=prior.index)
    # marked once, however many records have carried it
    runs.loc[carry, "nudge"] = runs.loc[carry, "runid"].map(nudge).str.replace(EARLIER_MARK, "") + EARLIER_MARK
    runs.loc[carry, "why"] = "rounding"
    return runs


EXP_UNDERFLOW = -709.78  # float64: exp(-m) overflows and the sigmoid of a margin m below this is 0


@functools.cache
def _min_margin(suite: str, store: Store, job_id: str) -> float:
    """The smallest margin y x'w over the training set at fedbench's final w of the job (nan if none)."""
    import torch

    from benchmark.engine.setup import load_source
    from benchmark.store.job_dir import JobDir

    model = JobDir.for_reading(store, job_id).model
    if not model.is_file():
        return math.nan
    w = torch.load(model, map_location="cpu", weights_only=True)["fc.weight"].double().flatten()
    src = load_source(_jobs(suite)[job_id].config)
    y = 2.0 * src.train_y.double() - 1.0
    return float((y * (src.train_x.flatten(1).double() @ w)).min())


def _final_loss(summary: JobSummary | FailedSummary, fstar: float) -> float:
    """F(w) after the last round: the recorded F − F* plus the F* it was measured against; nan
    when the job did not finish (diverged, failed, not run)."""
    subopt = measured(summary).final_subopt
    if summary.status != "finished" or subopt is None:
        return math.nan
    return subopt + fstar


def _why(authors: float, ours: float, status: str | None) -> str:
    if status is None:
        return "not_run"
    if not math.isfinite(authors):
        return "both_diverged" if status == "diverged" else "authors_diverged"
    return "fedbench_diverged" if not math.isfinite(ours) else "differs"


def report(runs: pd.DataFrame, command: str, wall_s: float | None, environment: dict) -> str:
    """report.md: the counts, per λ and method, and every kind of non-match with its runs."""
    from benchmark.run.environment import package_version

    total, matched = len(runs), int(runs["match"].sum())
    lines = [
        "# The FedAc authors' released runs, replayed",
        "",
        f"**{matched:,} of {total:,} released runs match to {TOLERANCE:g} relative** "
        f"(final F(w) on the whole a9a training set, float64; {runs['job_id'].nunique():,} distinct jobs).",
        "",
        "    " + command,
        "",
        f"- commit: {environment.get('git_commit', '?')}{' (dirty)' if environment.get('git_dirty') else ''}",
        f"- machine: {environment.get('device_name', '?')} ({os.cpu_count()} CPUs, {platform.machine()}), host "
        f"{environment.get('host', '?')}, python {environment.get('python', '?')}, torch {environment.get('torch', '?')}, "
        f"numba {package_version('numba')}",
        f"- wall time: {_duration(wall_s)}",
        "",
        "| λ | method | runs | match | largest relative difference among matches |",
        "|---|---|---|---|---|",
    ]
    for (lam, method), part in runs.groupby(["lambda", "method"], sort=True):
        ok = part[part["match"]]
        worst = f"{ok['rel_diff'].max():.1e}" if len(ok) else "—"
        lines.append(f"| {lam:g} | {method} | {len(part):,} | {int(part['match'].sum()):,} | {worst} |")
    missing = runs[~runs["match"]]
    lines += ["", f"## The {len(missing):,} that do not match", ""]
    for why, count in Counter(missing["why"]).most_common():
        lines.append(f"- **{count:,}: {WHY[why]}**")
        lines += [f"  - {line}" for line in _examples(missing[missing["why"] == why])]
    if not len(missing):
        lines.append("None.")
    lines += _rounding_floor(runs)
    lines += [
        "",
        "Every run: runs.csv.gz (authors' runid, their final loss and fedbench's, the relative difference, "
        "match, why, fedbench's job id and status, the probes' spread and the authors' code's final loss here "
        "where measured).",
    ]
    return "\n".join(lines) + "\n"


# at K = 1 the authors ran one recursion twice, arranged two ways (a pool of workers averaged, or one
# minibatch step): FedAc-I and MB-AC-SGD, FedAvg and MB-SGD (their alg codes)
SAME_AT_K1 = ((1, 4), (0, 3))


def _authors_own_arrangements(runs: pd.DataFrame) -> str:
    """How far apart the authors' own released numbers of one recursion are (SAME_AT_K1)."""
    one = runs[runs["K"] == 1].drop_duplicates(["alg", "lambda", "eta", "M"]).set_index(["lambda", "eta", "M"])
    gaps = []
    for a, b in SAME_AT_K1:
        pair = pd.concat(
            [one[one["alg"] == a]["authors_final_loss"], one[one["alg"] == b]["authors_final_loss"]], axis=1
        )
        pair = pair[pair.map(math.isfinite).all(axis=1)]
        gaps.append((pair.iloc[:, 0] / pair.iloc[:, 1] - 1).abs())
    gap = pd.concat(gaps)
    if not len(gap):
        return ""
    return (
        f"- the authors' own two arrangements of one recursion (K = 1: FedAc-I and MB-AC-SGD, FedAvg and MB-SGD, "
        f"their released numbers): {len(gap):,} pairs, {int((gap == 0).sum()):,} equal, "
        f"{int((gap > TOLERANCE).sum()):,} more than {TOLERANCE:g} apart (up to {gap.max():.2g} relative)"
    )


def _rounding_floor(runs: pd.DataFrame) -> list[str]:
    """What the probes and the authors' code here measured on the rows they checked: how far the
    authors' own code moves between machines, against the probes' spread (FLOOR_FACTOR's grounds)."""
    probed = runs[runs["nudge"] == PROBED]
    lines = ["", "## The rounding floor, measured", "", _authors_own_arrangements(runs)]
    if not len(probed):
        return lines
    itself, spread = probed["probe_replays_itself"], _spread(probed)
    lines += [
        f"- {len(probed):,} rows probed (η and λ each scaled by 1 ± 2^-50, the same examples summed in another "
        f"order, and the run replayed again, in the probes' batch and alone): their floor (the largest of these "
        f"moves) {spread.min():.1e}..{spread.max():.1e}; the replays again alone moved {itself.min():.1e}..{itself.max():.1e} "
        "(BLAS sums a batch of another size in another order)",
    ]
    if "authors_here_final_loss" in runs:
        here = runs[runs["authors_here_final_loss"].notna()]
        same = here["authors_here_rel_diff"] <= PRINTED
        moved = here[~same & (here["nudge"] == PROBED)]
        lines.append(
            f"- the authors' own code run here on {len(here):,} rows: {int(same.sum()):,} give their released number "
            f"to its printed digits, {len(here) - int(same.sum()):,} move from it by "
            f"{here.loc[~same, 'authors_here_rel_diff'].min():.1e}..{here.loc[~same, 'authors_here_rel_diff'].max():.1e}"
            if (~same).any()
            else f"- the authors' own code run here on {len(here):,} rows gives their released number bit for bit"
        )
        if len(moved):
            ratio = moved["authors_here_rel_diff"] / _spread(moved)
            lines.append(
                f"- their code's move between machines over the row's floor, on the {len(moved):,} probed rows it "
                f"moves: median {ratio.median():.2g}, largest {ratio.max():.2g} (FLOOR_FACTOR = {FLOOR_FACTOR})"
            )
    floor = probed[probed["why"].isin(["rounding_floor", "differs"])]
    if len(floor):
        ratio = floor["rel_diff"] / _spread(floor)
        lines.append(
            f"- fedbench's distance from the authors over the probes' spread, on the {len(floor):,} rows the probes "
            f"move by at most 1e-6: median {ratio.median():.2g}, largest {ratio.max():.2g}"
        )
    return lines


def _examples(part: pd.DataFrame, shown: int = 20) -> list[str]:
    """The runs of one kind of non-match (the first `shown`, largest difference first)."""
    out = [
        f"{r.runid}: {r.method}, λ = {r['lambda']:g}, η = {r.eta:g}, M = {r.M}, K = {r.K}: authors "
        f"{r.authors_final_loss:.10g}, fedbench {r.fedbench_final_loss:.10g}"
        + (f" (relative {r.rel_diff:.1e})" if math.isfinite(r.rel_diff) else "")
        + (f"; its probes ({r.nudge}) move fedbench {r.nudged_rel_change:.1e}" if r.nudged_rel_change >= 0 else "")
        + (f", its replay again {r.probe_replays_itself:.1e}" if r.get("probe_replays_itself", math.nan) >= 0 else "")
        + (
            f"; the authors' code here {r.authors_here_final_loss:.10g} ({r.authors_here_rel_diff:.1e} from their "
            f"released number, fedbench {r.fedbench_vs_authors_here:.1e} from it)"
            if r.get("authors_here_final_loss", math.nan) >= 0
            else ""
        )
        for _, r in part.sort_values("rel_diff", ascending=False, na_position="last").head(shown).iterrows()
    ]
    if len(part) > shown:
        out.append(f"... and {len(part) - shown:,} more (runs.csv.gz)")
    return out


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not given (--started)"
    return f"{seconds / 60:.1f} min"


def _environment(runs: pd.DataFrame, store: Store) -> dict:
    """The environment the first finished replay recorded (commit, machine), else this process's."""
    from benchmark.run.environment import environment
    from benchmark.store.job_dir import JobDir

    for job_id in runs.loc[runs["fedbench_status"] == "finished", "job_id"]:
        if found := measured(JobDir.for_reading(store, job_id).read_summary() or NO_SUMMARY).environment:
            return found
    return environment("cpu")


# the options this record and released_run.py share
reference_option = click.option(
    "--reference",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="the folder holding fedac_authors/out_a9a_1e-0*_summary.csv",
)
out_option = click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
check_option = click.option(
    "--check-s", type=float, default=60.0, show_default=True, help="seconds to spend checking for rounding"
)


@click.command()
@click.argument("suite", type=click.Path(exists=True, dir_okay=False))
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"))
@reference_option
@out_option
@click.option("--started", type=float, default=None, help="the run's start (seconds since the epoch): wall time")
@click.option("--command", "command", default="(not given)", help="the command that ran the suite, as recorded")
@click.option("--some-runs", is_flag=True, help="SUITE replays some of the released runs: leave the others out")
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="processes checking for rounding"
)
@check_option
@click.option(
    "--earlier",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="another machine's runs.csv.gz of this suite: its replays fill the rows not run here",
)
@click.option("--earlier-note", default="", help="that record's command, commit, machine and wall time, as reported")
@click.option(
    "--authors-here",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="the authors' code run again here on some rows: authors_rerun.py's CSV",
)
def main(
    suite: str,
    results_dir: Path,
    reference: Path,
    out: Path,
    started: float | None,
    command: str,
    some_runs: bool,
    workers: int,
    check_s: float,
    earlier: Path | None,
    earlier_note: str,
    authors_here: Path | None,
) -> None:
    """Write OUT/runs.csv.gz and OUT/report.md: SUITE's replays against the authors' released runs."""
    wall = None if started is None else time.time() - started
    try:
        prior = None if earlier is None else pd.read_csv(earlier)
        theirs = None if authors_here is None else pd.read_csv(authors_here)
        write_record(
            suite,
            Store(results_dir),  # the command's --results-dir, built once, here
            reference,
            out,
            command,
            wall,
            not some_runs,
            workers,
            check_s,
            prior,
            earlier_note,
            theirs,
        )
    except (UserError, GenerationError, FileNotFoundError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
