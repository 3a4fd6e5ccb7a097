"""Jobs that differ from their template's first job only in plain top-level fields are built from it
with those fields validated one by one (job/plain_fields.py): each must be the config validating it
whole gives, and a value that validation refuses must fail exactly as it did when every job was
validated whole (the same message, exit 2)."""

from __future__ import annotations

import pytest

from benchmark.cli import main
from benchmark.job import plain_fields
from benchmark.job.config import JobConfig
from benchmark.suite import expand as expand_module
from benchmark.suite.expand import load_jobs
from benchmark.suite.overrides import Overrides

SUITE = """\
name: plain
defaults:
  rounds: 2
  seeds: [3, 4]
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{num_users: 64, dim: 5, num_classes: 3}}
    split: {{kind: natural}}
methods: [fedavg, fedprox]
grid:
{grid}"""


def write(tmp_path, grid: str):
    path = tmp_path / "plain.yaml"
    path.write_text(SUITE.format(grid=grid))
    return path


@pytest.fixture
def shortcut_taken(monkeypatch):
    """How many configs the shortcut built."""
    built = []
    original = plain_fields.with_plain_fields

    def counting(config, values):
        found = original(config, values)
        built.append(found is not None)
        return found

    monkeypatch.setattr(expand_module, "with_plain_fields", counting)
    return built


def whole_only(monkeypatch):
    monkeypatch.setattr(expand_module, "with_plain_fields", lambda config, values: None)


def test_each_job_built_from_its_first_is_the_config_validated_whole(tmp_path, shortcut_taken, monkeypatch):
    path = write(
        tmp_path,
        "  num_clients: [8, 16, 64]\n  rounds: [2, 5]\n  checkpoint_minutes: [0, 2.5]\n"
        "  execution: [sequential, vectorised]\n  seed: [7, 9]\n",
    )
    jobs = load_jobs(path)[1]
    # a job per method, num_clients, rounds and seed (the grid's wins over the suite's); checkpoint_minutes
    # and execution are no part of its identity: each of their values is another view of it
    views = [view for job in jobs for view in job.views]
    assert len(jobs) == 2 * 3 * 2 * 2 and len(views) == len(jobs) * 2 * 2
    assert sum(shortcut_taken) == len(views) * 2 - 2  # every config (each suite seed's) but each method's first
    whole_only(monkeypatch)
    wholes = [view for job in load_jobs(path)[1] for view in job.views]
    assert [(v.id, v.suite_point) for v in views] == [(v.id, v.suite_point) for v in wholes]
    for job, whole in zip(views, wholes):
        assert job.config == whole.config and job.config.model_fields_set == whole.config.model_fields_set
        assert type(job.config.checkpoint_minutes) is float and job.config.seed in (7, 9)


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("  num_clients: [8, 0]\n", "greater than or equal to 1"),
        ("  num_clients: [8, '16']\n", "valid integer"),
        ("  num_clients: [8, 2.5]\n", "valid integer"),
        ("  num_clients: [8, true]\n", "valid integer"),
        ("  num_clients: [8, 20000000]\n", "less than or equal to 10000000"),
        ("  checkpoint_minutes: [1, .nan]\n", "finite number"),
        ("  execution: [sequential, parallel]\n", "'sequential', 'vectorised' or 'auto'"),
        ("  seed: [1, -1]\n", "greater than or equal to 0"),
        ("  compile: [false, true]\n  execution: [sequential, vectorised]\n", "compile: true compiles"),
        ("  num_clients: [8, {a: 1}]\n", "valid integer"),
    ],
)
def test_a_value_validation_refuses_fails_as_when_each_job_was_validated_whole(
    tmp_path, capsys, monkeypatch, grid, message
):
    path = write(tmp_path, grid)
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    whole_only(monkeypatch)
    assert main(["plan", str(path)]) == 2
    assert capsys.readouterr().err == err


def test_a_set_of_a_plain_field_takes_the_shortcut_and_a_bad_grid_value_beside_it_fails_as_before(
    tmp_path, capsys, monkeypatch, shortcut_taken
):
    path = write(tmp_path, "  num_clients: [8, 16]\n")
    assert main(["plan", str(path), "--set", "rounds=3"]) == 0
    # each method's second num_clients (its second seed is a copy of its first seed's job: expand's `like`)
    assert "8 jobs" in capsys.readouterr().out and shortcut_taken == [True, True]
    assert all(job.config.rounds == 3 for job in load_jobs(path, Overrides.parse(("rounds=3",)))[1])
    path = write(tmp_path, "  num_clients: [8, 0]\n")
    assert main(["plan", str(path), "--set", "rounds=3"]) == 2
    err = capsys.readouterr().err
    assert "grid ({'num_clients': 0})" in err and "greater than or equal to 1" in err
    whole_only(monkeypatch)
    assert main(["plan", str(path), "--set", "rounds=3"]) == 2
    assert capsys.readouterr().err == err


def test_only_vetted_before_validators_let_a_config_be_built_field_by_field():
    """A `before` model validator sees the whole raw input: one that may read a plain field would be
    skipped by the shortcut, so each must be vetted (plain_fields.VETTED_BEFORE) before it is taken."""
    validators = JobConfig.__pydantic_decorators__.model_validators.items()
    assert {name for name, d in validators if d.info.mode != "after"} == plain_fields.VETTED_BEFORE
