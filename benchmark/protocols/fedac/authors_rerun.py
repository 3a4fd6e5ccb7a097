"""The FedAc authors' own code run again, here, on the released runs a replay record does not match:

    python -m benchmark.protocols.fedac.authors_rerun --authors PATH \\
        --record docs/reproductions/fedac/replay/runs.csv.gz --out AUTHORS_HERE_CSV [--deadline-s S]

`--authors` is a checkout of github.com/hongliny/FedAc-NeurIPS20 (never copied into this repository).
Each selected row (`--why`, default the unexplained `differs` and `differs_unchecked`) is run through
their own entry point, `LogiBinaryLibSVM('a9a', λ).train(alg, η, M, K, 4096, 1, 1, 512)` as their
a9a_1e-0*.py scripts call it, one fresh process per run at one thread, in a scratch folder holding
what their code reads (./libsvm_datasets/a9a from FEDBENCH_DATA); their final loss is the last value
of the curve it writes, as their summary's `final_loss` is. If their code here ends away from their
own released number, that digit is not reproducible even by their code on this machine's CPU and
BLAS (released.py classes the row `authors_code_here_differs`).

Rows run cheapest first (M·T worker-steps); each is appended to OUT as it ends, and rows already in
OUT are not run again, so a cut run resumes. At the deadline the running one is stopped (not recorded).
"""

from __future__ import annotations

import gzip
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import pandas as pd

from benchmark.errors import UserError
from benchmark.papers.fedac_replay import T

UNEXPLAINED = ("differs", "differs_unchecked")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
COLUMNS = ["runid", "authors_here_final_loss", "authors_here_s", "authors_here_on"]
RECORD_COLUMNS = ["runid", "lambda", "alg", "eta", "M", "K", "why", "authors_final_loss"]  # what a row's run needs


def their_call(authors: Path, row) -> str:
    """The lines their a9a_1e-0*.py scripts run for this row (seed 1, batch 1, F every 512 steps)."""
    return "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(authors)!r})",
            "import logistic",
            f"model = logistic.LogiBinaryLibSVM('a9a', {float(row['lambda'])!r})",
            f"model.train({int(row['alg'])}, {float(row['eta'])!r}, {int(row['M'])}, {int(row['K'])}, {T}, 1, 1, 512)",
        ]
    )


def scratch_folder(work: Path, data: Path) -> Path:
    """./libsvm_datasets/a9a (plain text, as their loader reads it) and ./out/ under `work`."""
    (work / "libsvm_datasets").mkdir(parents=True)
    (work / "out").mkdir()
    target = work / "libsvm_datasets" / "a9a"
    if (data / "a9a").is_file():
        target.symlink_to((data / "a9a").resolve())
    elif (data / "a9a.gz").is_file():
        with gzip.open(data / "a9a.gz", "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        raise UserError(f"neither {data}/a9a nor {data}/a9a.gz exists (set FEDBENCH_DATA or --data)")
    return work


def run_one(authors: Path, scratch: Path, row, python: str, timeout: float) -> float | None:
    """Their final loss for the row (None: stopped at the deadline)."""
    out = scratch / "out"
    shutil.rmtree(out)
    out.mkdir()
    env = {**os.environ, **ONE_THREAD}
    try:
        done = subprocess.run(
            [python, "-c", their_call(authors, row)],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise click.ClickException(
            f"{row['runid']}: their code failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    (curve,) = out.glob("*/out/*.csv")  # one run, one curve
    return float(pd.read_csv(curve, index_col=0).iloc[-1, 0])


def machine() -> str:
    import numpy

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.machine(),
    )
    return f"{cpu}; python {platform.python_version()}, numpy {numpy.__version__}"


@click.command()
@click.option("--authors", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--record", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="a CSV, extended")
@click.option("--why", "whys", multiple=True, default=UNEXPLAINED, show_default=True, help="the rows to run")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), envvar="FEDBENCH_DATA", required=True)
@click.option("--deadline-s", type=float, default=None, help="start no run after this; stop the running one")
@click.option("--python", "python", default=sys.executable, help="needs numpy, pandas, scipy, scikit-learn")
def main(authors: Path, record: Path, out: Path, whys: tuple[str, ...], data: Path, deadline_s, python: str) -> None:
    """Run the authors' code here on the record's rows of kinds WHY; append their final losses to OUT."""
    if not (authors / "logistic.py").is_file():
        click.echo(f"error: --authors {authors}: no logistic.py there (a checkout of FedAc-NeurIPS20?)", err=True)
        sys.exit(2)
    runs = pd.read_csv(record)
    if missing := sorted(set(RECORD_COLUMNS) - set(runs.columns)):
        click.echo(f"error: --record {record}: not a replay record's runs.csv (lacks {missing})", err=True)
        sys.exit(2)
    done = set(pd.read_csv(out)["runid"]) if out.is_file() else set()
    todo = runs[runs["why"].isin(whys) & ~runs["runid"].isin(done)]
    todo = todo.assign(cost=todo["M"] * T).sort_values(["cost", "runid"])
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    on = machine()
    with tempfile.TemporaryDirectory(prefix="fedac-authors-here-") as tmp:
        try:
            scratch = scratch_folder(Path(tmp), data)
        except UserError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(2)
        for _, row in todo.iterrows():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            started = time.monotonic()
            final = run_one(authors.resolve(), scratch, row, python, left)
            if final is None:
                break
            line = pd.DataFrame([[row["runid"], final, round(time.monotonic() - started, 1), on]], columns=COLUMNS)
            line.to_csv(out, mode="a", header=not out.is_file(), index=False, float_format="%.17g")
            click.echo(f"{row['runid']} M={row['M']}: theirs here {final!r}, released {row['authors_final_loss']!r}")
    ran = len(pd.read_csv(out)) if out.is_file() else 0
    click.echo(f"{out}: {ran} runs of their code here ({len(todo)} were to run)")


if __name__ == "__main__":
    main()
