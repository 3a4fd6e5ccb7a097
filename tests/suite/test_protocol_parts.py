"""What a protocol adds to the suite format is registered by its package (FedAc's reference
`authors:` block and its `normal_numpy` init: protocols/fedac/suite_parts.py), read from YAML as a
person writes it, and refused at `plan` with its path and the allowed names when wrong."""

from __future__ import annotations

import pytest

from benchmark.cli import main
from benchmark.protocols.fedac.suite_parts import AuthorsRuns
from benchmark.suite.expand import load_jobs

SUITE = """\
name: parts
defaults:
  rounds: 2
  num_clients: 4
  model: {{name: logistic, init: {init}}}
datasets:
  - name: synthetic
    params: {{num_users: 4, dim: 5, num_classes: 3}}
    split: {{kind: natural}}
    reference:
      source: hand-made
      metrics: [acc@2]
      rows: {{FedAvg: [50.0]}}
{authors}methods: [fedavg]
"""
AUTHORS = """\
      authors:
        source: their_runs.csv
        f_star: {f_star}
        best: {{FedAvg: {{4: [0.01, 0.5]}}}}
"""


def write(tmp_path, init: str = "normal_numpy", authors: str = AUTHORS.format(f_star=0.25)):
    path = tmp_path / "parts.yaml"
    path.write_text(SUITE.format(init=init, authors=authors))
    return path


def test_the_fedac_parts_read_from_yaml(tmp_path):
    suite, jobs = load_jobs(write(tmp_path))
    reference = suite.datasets[0].reference
    authors = reference.parts["authors"]
    assert isinstance(authors, AuthorsRuns) and authors.best == {"FedAvg": {4: [0.01, 0.5]}}
    assert reference.model_dump()["authors"]["f_star"] == 0.25 and "parts" not in reference.model_dump()
    assert type(reference).model_validate(reference.model_dump()) == reference
    assert jobs[0].config.model.init == "normal_numpy"
    assert main(["plan", str(write(tmp_path))]) == 0


@pytest.mark.parametrize(
    ("init", "authors", "expected"),
    [
        ("normal_numpi", "", "unknown model init 'normal_numpi'; allowed: default, normal, normal_numpy, zeros"),
        ("normal_numpy", AUTHORS.format(f_star="low"), "datasets[0].reference: authors.f_star: Input should be"),
        ("normal_numpy", "      authorz: {}\n", "datasets[0].reference.authorz: unknown field"),
        ("normal_numpy", "      parts: {}\n", "write each part under its own key"),
    ],
)
def test_a_wrong_part_is_refused_at_plan(tmp_path, capsys, init, authors, expected):
    assert main(["plan", str(write(tmp_path, init, authors))]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
