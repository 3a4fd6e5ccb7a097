"""Commands that only read YAML or results never import torch (1.2 s) or MLflow (2-3 s):
validation binds torch through benchmark.lazy and models are named without their classes
(models/registry.py). Import times: benchmarks/README.md, "Start-up"."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmark.cli import main
from fedtest import REPO, tiny_suite, write_suite

HEAVY = ("torch", "mlflow", "numba", "pandas", "matplotlib")
# The FedAc figure suites expand to 8,190 and 3,240 jobs (9 s to print); fedac_small.yaml has
# their dataset, model and every method part, so planning it walks the same code.
LARGE = {"fedac.fig1.yaml", "fedac.fig2.yaml"}
AUDITED = ["table1.yaml", "fedac_small.yaml"]  # one code path, 0.1-0.5 s per suite
RUN_COMMANDS = f'''
import contextlib, io, json, sys
from benchmark.cli import main
outcomes = []
for args in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            code = main(args)
        except SystemExit as exit:
            code = exit.code
    outcomes.append([args, code or 0, err.getvalue()[-500:]])
print(json.dumps([outcomes, [m for m in {HEAVY!r} if m in sys.modules]]))
'''


def heavy_imports(commands: list[list[str]], cwd=REPO) -> list[str]:
    """Run `commands` in one fresh interpreter; the heavy modules it imported. Each must succeed."""
    done = subprocess.run([sys.executable, "-c", RUN_COMMANDS, json.dumps(commands)], cwd=cwd, capture_output=True,
                          text=True, check=True)
    outcomes, imported = json.loads(done.stdout)
    failed = [(args, code, err) for args, code, err in outcomes if code != 0]
    assert not failed, failed
    return imported


def test_plan_and_status_of_every_suite_import_neither_torch_nor_mlflow(tmp_path):
    suites = sorted(p for p in (REPO / "suites").rglob("*.yaml") if p.name not in LARGE)
    commands = [["--help"], ["data", "ls"]]
    commands += [["plan", str(p)] for p in suites]
    commands += [["plan", str(REPO / "suites" / name), "--audit"] for name in AUDITED]
    commands += [["status", str(p), "--results-dir", str(tmp_path)] for p in suites[:3]]
    assert heavy_imports(commands) == []  # validation needs none of them


def test_report_imports_neither_torch_nor_mlflow(tmp_path):
    path, results = write_suite(tmp_path, tiny_suite()), str(tmp_path / "results")
    assert main(["run", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0", "--rounds", "2"]) == 0
    report = ["report", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0", "--rounds", "2"]
    assert set(heavy_imports([report])) == {"pandas", "matplotlib"}  # its tables and figures
