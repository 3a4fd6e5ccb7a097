"""The gate against code changes the job ids cannot see, each in a process of its own: FedProx's
proximal term dropped in a copy of fedbench's code, and a plugin's server rule changed on disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fedtest import REPO

BASELINE = REPO / "results" / "baselines" / "ci.json"
QUIET = ["--no-tracking", "--threads", "1", "--quiet"]


def fedbench(*args: str, cwd: Path, code: Path = REPO, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    """`python -m benchmark ARGS` with `code` (a fedbench tree) first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (code, *path))), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "benchmark", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def failed_metrics(done: subprocess.CompletedProcess) -> dict[str, str]:
    return {r["metric"]: r["verdict"] for r in json.loads(done.stdout)["rows"] if r["failed"]}


def test_fedprox_without_its_proximal_term_fails_the_gate(tmp_path):
    """The edit a careless refactor makes: the term's loss returns nothing, so FedProx trains as FedAvg."""
    code = tmp_path / "code"
    for package in ("benchmark", "fedbench", "leaf_data"):
        shutil.copytree(REPO / package, code / package, ignore=shutil.ignore_patterns("__pycache__"))
    terms = code / "benchmark" / "fl" / "terms.py"
    text = terms.read_text()
    term = "return scale * self.p.mu * sq_dist(w, ctx.start)"
    assert text.count(term) == 1
    terms.write_text(text.replace(term, "return None"))
    imported = subprocess.run(
        [sys.executable, "-c", "import benchmark.fl.terms as t; print(t.__file__)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
    )
    assert imported.stdout.strip() == str(terms)  # the copy runs, not the installed code

    suite = str(REPO / "suites" / "ci.yaml")
    done = fedbench(
        "check", suite, "--only", "FedProx", "--baseline", str(BASELINE), "--json", *QUIET, cwd=tmp_path, code=code
    )
    assert done.returncode == 1, done.stderr
    failed = failed_metrics(done)  # FedProx at mu = 30 is 1.4 points below FedAvg; without the term it is FedAvg
    assert set(failed) >= {"acc@30", "final_acc", "final_ema_acc"} and set(failed.values()) == {"improved"}, failed


MEDIAN_RULE = '''"""A plugin's server rule: the coordinate-wise median of the client updates."""

from fedbench import ServerRule, StrictParams, register_preset, register_server_rule


class MedianParams(StrictParams):
    pass


@register_server_rule
class Median(ServerRule):
    name = "median"
    Params = MedianParams

    def update(self, theta, state, sent, up, rnd):
        return theta + up.messages["delta"].median(dim=0).values, state


register_preset("fedmedian", "FedMedian", {"rule": "median"})
'''

PLUGIN_SUITE = """\
name: ci_plugin
description: suites/ci.yaml's problem for a plugin's method
plugins: [median_rule]

defaults:
  rounds: 30
  seeds: [0, 1, 2]
  num_clients: 20
  participation: {mode: fixed, rate: 1.0}
  local: {steps: 5, batch_size: 16, lr: 0.01, lr_decay: 0.998}
  model: {name: logistic, init: zeros}
  metrics: [acc@10, acc@30, rounds_to@80]

datasets:
  - name: synthetic
    params: {alpha: 0.5, beta: 0.5, num_users: 20, dim: 30, num_classes: 5, max_samples: 200, seed: 1}
    split: {kind: natural}

methods: [fedmedian]
"""


@pytest.mark.slow  # three processes of 3 jobs each: about 25 s of CPU, a minute on a loaded machine
def test_a_plugins_changed_rule_fails_the_gate(tmp_path):
    """Baseline from the plugin as written; the same code reproduces it; the rule changed (median ->
    mean of the updates) fails, though every job id stays the same."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    rule = plugins / "median_rule.py"
    rule.write_text(MEDIAN_RULE)
    suite = tmp_path / "ci_plugin.yaml"
    suite.write_text(PLUGIN_SUITE)
    baseline = tmp_path / "ci_plugin.json"
    check = ["check", str(suite), "--baseline", str(baseline), *QUIET]

    written = fedbench(*check, "--update", cwd=tmp_path, path=(plugins,))
    assert written.returncode == 0 and "baseline written" in written.stdout, written.stderr
    same = fedbench(*check, "--json", cwd=tmp_path, path=(plugins,))
    assert same.returncode == 0 and all(r["delta"] == 0 for r in json.loads(same.stdout)["rows"]), same.stderr

    rule.write_text(MEDIAN_RULE.replace(".median(dim=0).values", ".mean(dim=0)"))
    changed = fedbench(*check, "--json", cwd=tmp_path, path=(plugins,))
    assert changed.returncode == 1, changed.stderr
    assert {"acc@30", "final_acc", "final_ema_acc"} <= set(failed_metrics(changed)), changed.stdout
