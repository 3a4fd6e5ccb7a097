"""Paper suites carry the reference numbers; the committed files match their generator."""

from __future__ import annotations

import pytest
import yaml

from benchmark.report.paper_suites import main as generate
from benchmark.suite.expand import load_jobs
from fedtest import REPO

REFERENCE = REPO.parent / "shared" / "reference"


def test_table1_carries_fedacg_table_1():
    suite, jobs = load_jobs(REPO / "suites" / "table1.yaml")
    entry = suite.datasets[0]
    assert entry.reference.source == "fedacg.moderate_dir0.3.cifar10"
    assert entry.reference.rows["FedACG"] == [85.13, 89.1, 319, 450]
    assert len(suite.datasets) == 6 and all(j.config.model.name == "resnet18_gn" for j in jobs)
    first = jobs[0].config
    assert (first.num_clients, first.participation.rate, first.local.batch_size, first.local.epochs) == (100, 0.05, 50, 5)


def test_sensitivity_columns_become_method_grids():
    suite, jobs = load_jobs(REPO / "suites" / "papers" / "fedacg.lambda_sensitivity.dir0.3.yaml")
    assert sorted(j.config.method["server"]["lam"] for j in jobs) == [0.75, 0.8, 0.85, 0.9]
    assert suite.datasets[0].reference.rows["FedACG[lam=0.8]"] == [82.52]


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="shared/reference is not beside the checkout")
def test_committed_paper_suites_match_the_generator(tmp_path):
    assert generate([str(REFERENCE), str(tmp_path)]) == 0
    for path in tmp_path.glob("*.yaml"):
        committed = REPO / "suites" / ("table1.yaml" if path.name == "table1.yaml" else f"papers/{path.name}")
        assert yaml.safe_load(committed.read_text()) == yaml.safe_load(path.read_text()), path.name
