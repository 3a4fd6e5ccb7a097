"""`extends:`: a suite that takes another whole and adds methods, datasets, grid values, seeds, or
overrides a field; the parent's reference numbers stay only on rows whose jobs are unchanged."""

from __future__ import annotations

import copy

import pytest
from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.errors import SuiteError
from benchmark.suite.expand import load_jobs


def parent_suite() -> dict:
    suite = tiny_suite(name="paper", methods=["fedavg", "fedacg"], grid={"local.lr": [0.05]})
    first = suite["datasets"][0]
    first["label"] = "a"
    first["reference"] = {"source": "paper.t1", "metrics": ["acc@2"], "rows": {"FedAvg": [50.0], "FedACG": [60.0]}}
    suite["datasets"].append({**copy.deepcopy(first), "label": "b", "reference": None})
    return suite


def ids(jobs, entry: int, method: str) -> set[str]:
    return {j.id for j in jobs if j.dataset_index == entry and j.method_label == method}


def test_the_merge_rules(tmp_path):
    write_suite(tmp_path, parent_suite(), "paper.yaml")
    (tmp_path / "mine").mkdir()
    child = {
        "name": "mine",
        "extends": "../paper.yaml",  # relative to the extending file
        "defaults": {"seeds": [1], "local": {"batch_size": 4}},
        "datasets": [{"label": "b", "num_clients": 8}, {"name": "synthetic", "label": "c", "split": {"kind": "iid"}}],
        "methods": ["fedprox", {"preset": "fedacg", "server": {"lam": 0.7}}],  # FedACG: replaced in place
        "grid": {"local.lr": [0.1]},
    }
    suite, jobs = load_jobs(write_suite(tmp_path / "mine", child))
    assert suite.name == "mine" and [m.preset for m in suite.methods] == ["fedavg", "fedacg", "fedprox"]
    assert suite.methods[1].server == {"lam": 0.7}  # FedACG replaced in place
    assert suite.defaults.seeds == [0, 1] and suite.grid == {"local.lr": [0.05, 0.1]}
    local = suite.defaults.local  # merged field by field
    assert (local.epochs, local.batch_size, local.lr) == (1, 4, 0.05)
    assert [d.label for d in suite.datasets] == ["a", "b", "c"]
    assert suite.datasets[1].num_clients == 8 and suite.datasets[1].params["dim"] == 10  # merged into b
    # 3 datasets x 3 methods x 2 lr x 2 seeds
    assert len(jobs) == 36


def test_inherited_jobs_keep_the_parents_ids_and_changed_rows_lose_the_papers_numbers(tmp_path):
    _, parent_jobs = load_jobs(write_suite(tmp_path, parent_suite(), "paper.yaml"))
    child = {"name": "mine", "extends": "paper.yaml", "methods": [{"preset": "fedacg", "server": {"lam": 0.7}}]}
    suite, jobs = load_jobs(write_suite(tmp_path, {**child, "defaults": {"seeds": [0, 1]}}, "mine.yaml"))
    assert ids(parent_jobs, 0, "FedAvg") < ids(jobs, 0, "FedAvg")  # the parent's seed-0 job, plus seed 1
    assert not ids(parent_jobs, 0, "FedACG") & ids(jobs, 0, "FedACG")  # λ changed: new jobs
    ref = suite.datasets[0].reference
    assert ref.rows == {"FedAvg": [50.0]} and list(ref.withheld) == ["FedACG"]
    # adding a method changes nothing the paper measured: every row stays
    added = load_jobs(write_suite(tmp_path, {**child, "methods": ["fedprox"]}, "added.yaml"))[0]
    assert added.datasets[0].reference.rows == {"FedAvg": [50.0], "FedACG": [60.0]}
    # a setting of every job of entry a withholds every row of that entry
    clients = {**child, "methods": [], "datasets": [{"label": "a", "local": {"batch_size": 4}}]}
    lr_suite = load_jobs(write_suite(tmp_path, clients, "clients.yaml"))[0]
    assert lr_suite.datasets[0].reference.rows == {} and set(lr_suite.datasets[0].reference.withheld) == {
        "FedAvg",
        "FedACG",
    }


def test_a_chain_of_extending_suites_and_local_budgets(tmp_path):
    write_suite(tmp_path, parent_suite(), "paper.yaml")
    write_suite(tmp_path, {"name": "one", "extends": "paper.yaml", "methods": ["fedprox"]}, "one.yaml")
    two = {"name": "two", "extends": "one.yaml", "datasets": [{"label": "a", "local": {"steps": 3}}]}
    suite, jobs = load_jobs(write_suite(tmp_path, two, "two.yaml"))
    assert [j.config.local.steps for j in jobs if j.dataset_index == 0] == [3, 3, 3]  # steps dropped epochs
    assert {j.method_label for j in jobs} == {"FedAvg", "FedACG", "FedProx"}


@pytest.mark.parametrize(
    "child, expected",
    [
        ({"extends": "nowhere.yaml"}, "extends: "),
        ({"extends": "self.yaml"}, "suites that extend each other in a circle"),
        ({"extends": 3}, "expected the path of a suite file"),
        ({"extends": "paper.yaml", "methods": ["+fedprox"]}, "write 'fedprox'"),
        ({"extends": "paper.yaml", "datasets": [{"label": "a", "num_clients": 0}]}, "datasets[0].num_clients"),
    ],
)
def test_bad_extends_is_a_suite_error(tmp_path, capsys, child, expected):
    write_suite(tmp_path, parent_suite(), "paper.yaml")
    path = write_suite(tmp_path, {"name": "self", **child}, "self.yaml")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    with pytest.raises(SuiteError):
        load_jobs(path)


def test_extending_a_paper_suite_keeps_its_ids_and_its_audit(tmp_path, capsys):
    paper = REPO / "suites" / "papers" / "fedacg.moderate_dir0.3.yaml"
    _, paper_jobs = load_jobs(paper)
    child = {
        "name": "mine",
        "extends": str(paper),
        "methods": [{"preset": "fedacg", "label": "FedACG-0.7", "server": {"lam": 0.7}}],
    }
    suite, jobs = load_jobs(write_suite(tmp_path, child))
    assert {j.id for j in paper_jobs} < {j.id for j in jobs}
    assert all(d.reference.rows and not d.reference.withheld for d in suite.datasets)
    assert main(["plan", str(tmp_path / "suite.yaml"), "--audit"]) == 0
    assert "FedACG-0.7" in capsys.readouterr().out  # the stated settings are audited for the new method too


def test_the_report_shows_each_methods_tuning_budget_and_the_withheld_rows(tmp_path, capsys):
    paper = parent_suite()
    paper["datasets"] = paper["datasets"][:1]
    write_suite(tmp_path, paper, "paper.yaml")
    child = {
        "name": "mine",
        "extends": "paper.yaml",
        "methods": [
            {"preset": "fedacg", "server": {"lam": 0.7}},
            {"preset": "fedprox", "grid": {"client.prox.mu": [0.01, 0.1]}},
        ],
    }
    path = str(write_suite(tmp_path, child, "mine.yaml"))
    assert main(["run", path, "--no-tracking", "--results-dir", str(tmp_path / "results"), "-q"]) == 0
    assert main(["report", path, "--no-tracking", "--results-dir", str(tmp_path / "results")]) == 0
    report = (tmp_path / "results" / "mine" / "report" / "report.md").read_text()
    assert "tuning budget (settings tried per method): FedAvg 1, FedACG 1, FedProx 2" in report
    assert (
        "paper numbers withheld (the extending suite changed the settings they were measured under): FedACG" in report
    )
    assert "50.0" in report and "60.0" not in report  # FedAvg's paper number beside it, FedACG's withheld
    assert "grid selected on the test set" in report and "selected on: THE TEST SET (the papers' protocol)" in report


PAPER = """\
name: paper
defaults:
  rounds: 3
  num_clients: 6
  model: {name: logistic}
datasets:
  - name: synthetic
    label: a
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods:
  - fedavg
  - fedacg
  - {preset: fedprox, client: {prox: {mu: -1}}}
"""

MINE = """\
name: mine
extends: ../paper.yaml
datasets:
  - label: a
    params: {dimm: 3}
methods:
  - preset: feddyn
    server: {alpha: 0.5}
    client: {dyn: {alpah: 0.1}}
  - {preset: fedacg, server: {lam: 1.5}}
"""


def test_an_extending_suites_errors_point_at_the_file_and_line_they_were_written_at(tmp_path, capsys):
    """methods[3] (the parent's three methods counted) was the child's methods[0]; the parent's own
    mistake is placed in the parent's file."""
    (tmp_path / "paper.yaml").write_text(PAPER)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "mine.yaml").write_text(MINE)
    mine, paper = tmp_path / "mine" / "mine.yaml", tmp_path / "mine" / ".." / "paper.yaml"
    assert main(["plan", str(mine)]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert f"methods[0].client[0].alpah ({mine}, line 9): unknown parameter 'alpah'" in err, err
    assert f"methods[1].server.lam ({mine}, line 10): Input should be less than 1" in err, err
    assert f"methods[2].client[0].mu ({paper}, line 14):" in err, err
    assert f"datasets[0].params.dimm ({mine}, line 5): unknown field 'dimm'" in err, err
    assert "methods[3]" not in err and "Traceback" not in err


SHARED = """\
name: shared
defaults:
  rounds: 2
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods:
  - fedacg
  - preset: fedacg
    label: FedACG-tune
    grid: {server.lam: [0.8, 0.85, 0.9, 0.95]}
"""


def test_a_grid_point_shared_with_another_methods_job_counts_in_both(tmp_path, capsys):
    """FedACG's job is FedACG-tune's lam=0.85 point (λ 0.85 is the default): it runs once, and the
    tuned method's budget reads 4, not 3 (the shared point was dropped from its grid)."""
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED)
    _, jobs = load_jobs(path)
    assert len(jobs) == 4 and [v.method_label for v in jobs[0].views] == ["FedACG", "FedACG-tune[lam=0.85]"]
    assert main(["plan", str(path)]) == 0
    assert "FedACG = FedACG-tune[lam=0.85]" in capsys.readouterr().out
    results = tmp_path / "results"
    assert main(["run", str(path), "--no-tracking", "--results-dir", str(results), "-q"]) == 0
    assert main(["report", str(path), "--no-tracking", "--results-dir", str(results)]) == 0
    report = (results / "shared" / "report" / "report.md").read_text()
    assert "tuning budget (settings tried per method): FedACG 1, FedACG-tune 4" in report
    assert "FedACG-tune[lam=0.85]" in report  # in its sensitivity table, and selectable
