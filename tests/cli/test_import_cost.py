"""Commands that only read YAML or results never import torch (1.2 s) or MLflow (2-3 s):
validation binds torch through benchmark.lazy and models are named without their classes
(models/registry.py). Import times: benchmarks/README.md, "Start-up"."""

from __future__ import annotations

import json
import subprocess
import sys

from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main

HEAVY = ("torch", "mlflow", "numba", "pandas", "matplotlib")
# The FedAc figure suites expand to 8,190 and 3,240 jobs (9 s to print); fedac_small.yaml has
# their dataset, model and every method part, so planning it walks the same code.
LARGE = {"fedac.fig1.yaml", "fedac.fig2.yaml"}
AUDITED = ["table1.yaml", "fedac_small.yaml"]  # one code path, 0.1-0.5 s per suite
RUN_COMMANDS = f"""
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
"""


def heavy_imports(commands: list[list[str]], exit_code: int = 0) -> list[str]:
    """Run `commands` in one fresh interpreter; the heavy modules it imported. Each must exit
    with `exit_code`."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_COMMANDS, json.dumps(commands)], cwd=REPO, capture_output=True, text=True, check=True
    )
    outcomes, imported = json.loads(done.stdout)
    unexpected = [(args, code, err) for args, code, err in outcomes if code != exit_code]
    assert not unexpected, unexpected
    return imported


def test_plan_and_status_of_every_suite_import_neither_torch_nor_mlflow(tmp_path):
    suites = sorted(p for p in (REPO / "suites").rglob("*.yaml") if p.name not in LARGE)
    commands = [["--help"], ["data", "ls"]]
    commands += [["plan", str(p)] for p in suites]
    commands += [["plan", str(REPO / "suites" / name), "--audit"] for name in AUDITED]
    commands += [["status", str(p), "--results-dir", str(tmp_path)] for p in suites[:3]]
    assert heavy_imports(commands) == []  # validation needs none of them


def test_invalid_suites_are_reported_without_torch(tmp_path):
    """The error paths too: pairings and model traits, model names, dataset parameters."""
    pairing = tiny_suite(methods=["moon", {"label": "x", "server": {"rule": "scaffold"}}])  # on logistic; no term
    model = tiny_suite()
    model["defaults"]["model"] = {"name": "lenet"}
    params = tiny_suite()
    params["datasets"][0]["params"] = {"nonsense": 1}
    paths = [write_suite(tmp_path, suite, f"{i}.yaml") for i, suite in enumerate([pairing, model, params])]
    assert heavy_imports([["plan", str(p)] for p in paths], exit_code=2) == []


def test_report_imports_neither_torch_nor_mlflow(tmp_path):
    path, results = write_suite(tmp_path, tiny_suite()), str(tmp_path / "results")
    assert main(["run", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0", "--rounds", "2"]) == 0
    report = ["report", str(path), "--no-tracking", "--results-dir", results, "--seeds", "0", "--rounds", "2"]
    assert set(heavy_imports([report])) == {"pandas", "matplotlib"}  # its tables and figures


def test_version_imports_no_command_module():
    """`fedbench --version` is the unit the start-up timings are measured in (benchmarks/noop_run_speed.py):
    it imports click and the command table, not `data`'s dataset registry (pydantic)."""
    heavy = ("pydantic", "benchmark.cli_data", "benchmark.data.source", "torch")
    probe = f"import sys; from benchmark.cli import main; code = main(['--version']); print(code, [m for m in {heavy} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    version, verdict = done.stdout.strip().splitlines()
    assert version.startswith("fedbench ") and verdict == "0 []"
