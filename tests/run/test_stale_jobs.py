"""Stale jobs (docs/runs.md): a done job whose code changed since it ran is named by `status` and
`report`, trained again by `run` (its old results set aside) or kept, marked, with `--keep-stale`;
a change of formatting, comments or docstrings changes nothing. Every run is a subprocess on
files as a person writes them: a plugin's module, a suite in YAML, fedbench's own package copied
into a temporary folder and edited there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fedtest import REPO, measured
from pinned import frozen_copy
from plugins.test_plugins import installed  # noqa: F401 (a fixture: the FedMedian distribution, pip-installed)

SUITE = """\
name: tiny
{plugins}
defaults:
  rounds: 3
  num_clients: 6
  participation: {{rate: 0.5}}
  local: {{epochs: 1, batch_size: 8, lr: 0.05}}
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{num_users: 6, dim: 10, num_classes: 3, max_samples: 60}}
    split: {{kind: natural}}
methods:
{methods}
"""

RULE = '''\
"""A server rule of the researcher's own."""

from fedbench import ServerRule, StrictParams, register_server_rule


def step(mean):
    return SCALE * mean


SCALE = 1.0


@register_server_rule
class Trimmed(ServerRule):
    name = "trimmed"
    Params = StrictParams

    def update(self, theta, state, sent, up, rnd):
        return theta + step(up.messages["delta"].mean(dim=0)), state
'''

# only a docstring, comments and layout differ from RULE
RULE_REFORMATTED = '''\
"""A server rule of the researcher's own, reformatted."""

from fedbench import ServerRule, StrictParams, register_server_rule


def step(mean):
    """The server's step along the clients' mean update."""
    return SCALE  *  mean  # scaled


SCALE = 1.0


@register_server_rule
class Trimmed(ServerRule):
    """Documented now."""

    name = "trimmed"
    Params = StrictParams

    def update(self, theta, state, sent, up, rnd):
        return (
            theta + step(up.messages["delta"].mean(dim=0)),
            state,
        )
'''


def fedbench(*args: str, cwd: Path, path: list[Path] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path)), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "benchmark", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def write_suite(folder: Path, methods: list[str], plugins: str = "") -> Path:
    suite = folder / "suite.yaml"
    listed = "\n".join(f"  - {m}" for m in methods)
    suite.write_text(SUITE.format(plugins=f"plugins: [{plugins}]" if plugins else "", methods=listed))
    return suite


def summaries(results: Path) -> dict[str, dict]:
    """Method label -> summary of each job in the suite's view."""
    found = {}
    for summary in results.glob("tiny/*/summary.json"):
        s = json.loads(summary.read_text())
        found[s["method"]] = s
    return found


def metrics(results: Path, method: str) -> list[dict]:
    job_id = summaries(results)[method]["job_id"]
    return measured(
        [json.loads(line) for line in (results / "jobs" / job_id / "metrics.jsonl").read_text().splitlines()]
    )


class Project:
    """A folder with a suite, run through `python -m benchmark` with `path` on PYTHONPATH."""

    def __init__(self, folder: Path, path: list[Path]):
        self.folder, self.path = folder, path

    def __call__(self, *args: str) -> subprocess.CompletedProcess:
        done = fedbench(*args, "suite.yaml", "--results-dir", "results", cwd=self.folder, path=self.path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
        return done

    def run(self, *options: str) -> subprocess.CompletedProcess:
        return self("run", "--no-tracking", *options)

    def status(self) -> dict[str, list | str]:
        """Method label -> the parts `status --json` calls stale."""
        return {r["method"]: r["stale"] for r in json.loads(self("status", "--json").stdout)["jobs"]}

    @property
    def results(self) -> Path:
        return self.folder / "results"

    def set_aside(self) -> list[str]:
        return sorted(p.name.split(".", 1)[1].split("-")[0] for p in (self.results / "jobs").glob("[!.]*.*"))


@pytest.fixture
def plugin_project(tmp_path) -> Project:
    (tmp_path / "my_rule.py").write_text(RULE)
    write_suite(tmp_path, ["fedavg", "{label: Trimmed, server: {rule: trimmed}}"], plugins="my_rule")
    project = Project(tmp_path, [REPO, tmp_path])
    project.run()
    return project


def test_a_plugin_rule_edited_is_stale_retrained_by_run_and_kept_marked_with_keep_stale(plugin_project, tmp_path):
    project, rule = plugin_project, tmp_path / "my_rule.py"
    before = summaries(project.results)
    assert before["Trimmed"]["code_versions"] == {
        "fedbench": before["FedAvg"]["code_versions"]["fedbench"],
        "my_rule": "not installed",
    }
    assert "server trimmed" in before["Trimmed"]["code_parts"] and "server average" in before["FedAvg"]["code_parts"]

    rule.write_text(RULE_REFORMATTED)  # formatting, comments, docstrings: not stale, reused as it is
    assert project.status() == {"FedAvg": [], "Trimmed": []}
    project.run()
    assert summaries(project.results) == before and project.set_aside() == []

    rule.write_text(RULE_REFORMATTED.replace("SCALE = 1.0", "SCALE = 0.5"))  # a constant the rule's helper reads
    assert project.status() == {"FedAvg": [], "Trimmed": ["server trimmed"]}
    said = project("status").stdout
    assert "stale: server trimmed changed" in said and "1 job(s) stale" in " ".join(said.split())
    report = project("report", "--no-tracking")
    assert "1 job(s) stale: their code changed since they ran: server trimmed (1)" in " ".join(report.stderr.split())
    assert "(stale 1/1)" in report.stdout

    kept = project.run("--keep-stale")  # kept as it is, and its numbers marked in the table
    assert summaries(project.results) == before and "(stale 1/1)" in kept.stdout
    assert "1 job(s) stale: their code changed since they ran: server trimmed (1)" in " ".join(kept.stderr.split())

    rerun = project.run()  # trained again with the code now: the numbers of a fresh run
    after = summaries(project.results)
    assert after["FedAvg"] == before["FedAvg"] and after["Trimmed"]["final_acc"] != before["Trimmed"]["final_acc"]
    assert "ran on other code (server trimmed changed since)" in " ".join(rerun.stderr.split())
    assert project.set_aside() == ["code"] and "(stale" not in rerun.stdout
    assert project.status() == {"FedAvg": [], "Trimmed": []}
    fresh = Project(tmp_path / "fresh", project.path)
    fresh.folder.mkdir()
    shutil.copy(tmp_path / "suite.yaml", fresh.folder)
    fresh.run()
    assert metrics(project.results, "Trimmed") == metrics(fresh.results, "Trimmed")


def test_a_diverged_job_of_since_fixed_code_is_retried(tmp_path):
    rule = tmp_path / "my_rule.py"
    rule.write_text(RULE.replace("SCALE = 1.0", "SCALE = float('nan')"))
    write_suite(tmp_path, ["{label: Trimmed, server: {rule: trimmed}}"], plugins="my_rule")
    project = Project(tmp_path, [REPO, tmp_path])
    done = fedbench("run", "suite.yaml", "--no-tracking", "--results-dir", "results", cwd=tmp_path, path=project.path)
    assert done.returncode == 1 and summaries(project.results)["Trimmed"]["status"] == "diverged", done.stderr
    rule.write_text(RULE)
    assert project.status() == {"Trimmed": ["server trimmed"]}
    project.run()
    assert summaries(project.results)["Trimmed"]["status"] == "finished" and project.set_aside() == ["code"]


@pytest.fixture
def package_copy(tmp_path) -> Project:
    """fedbench's own package copied to a temporary folder, a suite of two built-in methods run with it."""
    code = tmp_path / "code"
    for package in ("benchmark", "fedbench"):
        shutil.copytree(REPO / package, code / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "work").mkdir()
    write_suite(tmp_path / "work", ["fedavg", "fedprox"])
    project = Project(tmp_path / "work", [code])
    project.run()
    return project


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_a_built_in_rule_and_model_edited_in_a_copy_of_the_package(package_copy):
    project, code = package_copy, package_copy.path[0] / "benchmark"
    before = summaries(project.results)
    servers, logistic = code / "fl" / "servers.py", code / "models" / "logistic.py"
    # reformatting: comments, docstrings, blank lines
    servers.write_text("# reformatted\n\n" + servers.read_text().replace("\n\n\n", "\n\n\n\n"))
    logistic.write_text(logistic.read_text().replace('"""', '"""Reformatted. ', 1) + "\n# the end\n")
    assert project.status() == {"FedAvg": [], "FedProx": []}
    project.run()
    assert summaries(project.results) == before

    edit(logistic, "score = self.fc(z)", "score = 1.0 * self.fc(z)")  # another model of the same file
    assert project.status() == {"FedAvg": [], "FedProx": []}
    edit(logistic, "logits = self.fc(z)", "logits = 1.0 * self.fc(z)")
    assert project.status() == {"FedAvg": ["model logistic"], "FedProx": ["model logistic"]}
    edit(
        servers,
        "return theta + self.p.global_lr * up.mean(), state",
        "return theta + 0.5 * self.p.global_lr * up.mean(), state",
    )
    assert project.status() == {
        "FedAvg": ["model logistic", "server average"],
        "FedProx": ["model logistic", "server average"],
    }
    project.run()
    after = summaries(project.results)
    assert project.set_aside() == ["code", "code"] and project.status() == {"FedAvg": [], "FedProx": []}
    assert all(after[m]["final_acc"] != before[m]["final_acc"] for m in before), (after, before)


def test_results_from_before_per_part_fingerprints_are_noted_not_retrained(tmp_path):
    frozen = frozen_copy(tmp_path / "frozen")
    done = fedbench("status", "suite.yaml", "--results-dir", "results", cwd=frozen, path=[REPO])
    assert done.returncode == 0, done.stderr
    assert "1 job(s) ran before fedbench recorded their code: not checked for staleness" in " ".join(
        done.stdout.split()
    )


def test_a_protocol_section_counts_its_stale_runs():
    """FedAc's tables have a cell per (method, M, K) over many runs: the note under them counts the stale ones."""
    from engine.test_fedac_batched import shared_suite

    from benchmark.report.protocol_sections import build_sections
    from benchmark.run.code_parts import job_code
    from benchmark.store.records import JobSummary
    from benchmark.suite.expand import expand

    suite = shared_suite(["fedac1", "fedavg"], clients=4)
    jobs = expand(suite)
    summaries = {j.id: JobSummary(j.id, "s", "d", "m", 0, "f", 0, 0, "finished", 3, final_subopt=1e-3) for j in jobs}
    for j in jobs:
        summaries[j.id].code_parts = job_code(j.config)
    [(_, section)], _ = build_sections(suite, jobs, summaries)
    assert "stale" not in section.note
    summaries[jobs[0].id].code_parts["engine"] = "another"
    [(_, section)], _ = build_sections(suite, jobs, summaries)
    assert f"stale: 1 of these {len(jobs)} runs ran on code that changed since" in section.note


def test_the_code_of_each_part_is_tagged_on_the_jobs_mlflow_run(tmp_path):
    from mlflow.tracking import MlflowClient

    (tmp_path / "my_rule.py").write_text(RULE)
    write_suite(tmp_path, ["{label: Trimmed, server: {rule: trimmed}}"], plugins="my_rule")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    Project(tmp_path, [REPO, tmp_path])("run", "--tracking-uri", uri)
    summary = summaries(tmp_path / "results")["Trimmed"]
    client = MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("tiny").experiment_id], "tags.`fedbench.kind` = 'job'")
    tags = run.data.tags
    assert tags["fedbench.code.server.trimmed"] == summary["code_parts"]["server trimmed"]
    assert tags["fedbench.code.engine"] == summary["code_parts"]["engine"]
    assert tags["fedbench.version.fedbench"] == summary["code_versions"]["fedbench"]
    assert tags["fedbench.version.my_rule"] == "not installed"


def test_an_installed_plugin_records_its_distributions_version(tmp_path, installed):  # noqa: F811 (the fixture)
    from plugins.test_plugins import final_accuracies, one_client_suite

    path = one_client_suite(tmp_path)
    done = fedbench("run", str(path), "--no-tracking", "--results-dir", "results", cwd=tmp_path, path=[REPO, installed])
    assert done.returncode == 0 and set(final_accuracies(tmp_path / "results")) == {"FedAvg", "FedMedian"}, done.stderr
    versions = summaries(tmp_path / "results")["FedMedian"]["code_versions"]
    assert versions == {"fedbench": versions["fedbench"], "fedmedian": "0.1.0"}  # tests/plugins/fedmedian_pkg
