"""Suites of many jobs: a cap checked before any job is built, `--only` that builds only what it
selects, counts within stated limits, a plan that sums up, and ids that expansion's shortcuts keep."""

from __future__ import annotations

import hashlib

import pytest
from fedtest import REPO

from benchmark.cli import main
from benchmark.params import canonical_json, identity_dump
from benchmark.suite import expand as expand_module
from benchmark.suite.expand import MAX_JOBS, job_id, load_jobs


def grid_suite(tmp_path, lrs: int, seeds: int, rounds: str = "5", extra: str = ""):
    """A suite as a person writes it: two methods, a grid of learning rates, some seeds."""
    lr_values = ", ".join(f"0.{i + 1:04d}" for i in range(lrs))
    text = f"""\
name: scale
defaults:
  rounds: {rounds}
  num_clients: 30
  participation: {{rate: 0.1}}
  seeds: [{", ".join(str(s) for s in range(seeds))}]
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{num_users: 30, dim: 10, num_classes: 3}}
    split: {{kind: natural}}
{extra}methods:
  - fedavg
  - preset: fedprox
    client: {{prox: {{mu: 0.01}}}}
grid:
  local.lr: [{lr_values}]
"""
    path = tmp_path / "scale.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def built(monkeypatch):
    """How many jobs expansion builds (validates and hashes)."""
    calls = []
    original = expand_module._Candidate.job

    def counting(self, *args, **kwargs):
        calls.append(self.labels)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(expand_module._Candidate, "job", counting)
    return calls


def test_a_million_jobs_are_refused_before_any_is_built(tmp_path, capsys, built):
    path = grid_suite(tmp_path, lrs=1000, seeds=500)  # 2 methods x 1,000 lr x 500 seeds
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "1,000,000 jobs" in err and f"limit of {MAX_JOBS:,}" in err and "--max-jobs 1000000" in err
    assert built == []


def test_max_jobs_lowers_and_raises_the_cap(tmp_path, capsys):
    path = grid_suite(tmp_path, lrs=5, seeds=2)  # 20 jobs
    assert main(["plan", str(path), "--max-jobs", "19"]) == 2
    assert "20 jobs" in capsys.readouterr().err
    assert main(["plan", str(path), "--max-jobs", "20"]) == 0
    assert "scale: 20 jobs" in capsys.readouterr().out
    assert main(["plan", str(path), "--max-jobs", "19", "--only", "FedAvg"]) == 0  # the cap counts the selection


def test_only_by_name_builds_only_the_jobs_it_selects(tmp_path, built):
    path = grid_suite(tmp_path, lrs=4, seeds=3)
    _, jobs = load_jobs(path, only=("FedProx",))
    assert len(jobs) == 12 and {j.method_label.split("[")[0] for j in jobs} == {"FedProx"}
    assert len(built) == 12 and {labels[0] for labels in built} == {"FedProx"}


def test_only_by_id_still_finds_the_job(tmp_path):
    path = grid_suite(tmp_path, lrs=4, seeds=3)
    _, jobs = load_jobs(path)
    _, (only,) = load_jobs(path, only=(jobs[17].id,))
    assert only.id == jobs[17].id and only.config == jobs[17].config


@pytest.mark.parametrize(
    ("rounds", "extra", "args", "where", "limit"),
    [
        ("1000000000000000000000000000000", "", [], "defaults.rounds", "1000000"),
        ("5", "    num_clients: 100000000\n", [], "datasets[0].num_clients", "10000000"),
        ("5", "    local: {steps: 10000000}\n", [], "datasets[0].local.steps", "1000000"),
        ("5", "", ["--rounds", "2000000"], "--rounds", "1000000"),
    ],
)
def test_counts_beyond_their_limits_name_the_key_and_the_limit(tmp_path, capsys, rounds, extra, args, where, limit):
    path = grid_suite(tmp_path, lrs=2, seeds=1, rounds=rounds, extra=extra)
    assert main(["plan", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert f"{where}: " in err and limit in err and "Traceback" not in err


def test_plan_over_200_jobs_sums_up_per_dataset_and_method(tmp_path, capsys):
    path = grid_suite(tmp_path, lrs=35, seeds=3)  # 2 x 35 x 3 = 210 jobs
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "210 jobs, a row per dataset and method" in out and "local.lr: 35 values" in out
    # 210 jobs x 5 rounds; 3 clients a round (10 % of 30)
    assert "workload: 210 jobs, 1,050 rounds, ≈ 3,150 client updates" in out
    _, jobs = load_jobs(path)
    assert sum(j.id in out for j in jobs) == 0
    assert main(["plan", str(path), "--jobs"]) == 0
    listed = capsys.readouterr().out
    assert all(j.id in listed for j in jobs)


def test_expansion_ids_are_those_of_each_job_alone(tmp_path):
    """Expansion shares sections between jobs and memoises their identity: every id must still be
    the hash of that job's own identity dump, whatever its grid point or --set changed."""
    extra = "    method_overrides: {FedProx: {local: {batch_size: 20}}}\n"
    path = grid_suite(tmp_path, lrs=3, seeds=2, extra=extra)
    text = path.read_text() + "  participation.rate: [0.1, 0.2]\n  dataset.split.seed: [0, 1]\n"
    path.write_text(text.replace("  - fedavg\n", "  - preset: fedavg\n    grid: {server.global_lr: [1.0, 0.5]}\n"))
    from benchmark.suite.overrides import Overrides

    _, jobs = load_jobs(path, Overrides.parse(("FedProx:method.client.prox.mu=0.1",)))
    assert len(jobs) == (2 + 1) * 3 * 2 * 2 * 2
    assert len({j.id for j in jobs}) == len(jobs)
    for job in jobs:
        alone = hashlib.sha256(canonical_json(identity_dump(job.config)).encode()).hexdigest()[:12]
        assert job.id == job_id(job.config) == alone


def test_jobs_differing_in_plain_fields_take_their_first_jobs_members(tmp_path, monkeypatch):
    """A job whose sections are its template's first job's and whose other fields differ only in plain
    identity scalars takes that job's members with those swapped: each id still equals its whole dump's.
    Left-out-at-default (suboptimality) and never-identity (checkpoint_every) fields are in the grid too."""
    suite = tmp_path / "clients.yaml"
    suite.write_text(
        "name: clients\ndefaults: {rounds: 2, seeds: [3], model: {name: logistic}}\n"
        "datasets:\n  - name: synthetic\n    params: {num_users: 64, dim: 5, num_classes: 3}\n"
        "    split: {kind: natural}\n  - name: synthetic\n    label: other\n    rounds: 3\n"
        "    params: {num_users: 64, dim: 5, num_classes: 3, seed: 4}\n    split: {kind: natural}\n"
        "methods: [fedavg, fedprox]\n"
        "grid:\n  num_clients: [8, 16, 64]\n  rounds: [2, 5]\n  suboptimality: [false, true]\n"
        "  checkpoint_every: [0, 1]\n"
    )
    dumped = []
    original = expand_module.identity_members
    monkeypatch.setattr(expand_module, "identity_members", lambda *a: dumped.append(1) or original(*a))
    jobs = load_jobs(suite)[1]
    # checkpoint_every is no identity: a job of each value is one job
    assert len(jobs) == len({job.id for job in jobs}) == 2 * 2 * 3 * 2 * 2
    assert len(dumped) < len(jobs) / 4  # the shortcut was taken: a dump per template and per suboptimality
    for job in jobs:
        alone = hashlib.sha256(canonical_json(identity_dump(job.config)).encode()).hexdigest()[:12]
        assert job.id == job_id(job.config) == alone


def test_every_id_of_the_authors_replay_suite_equals_its_whole_dumps():
    """The 38,640 single-seed jobs of the replay suite (a num_clients grid) are built by the shortcut:
    each id recomputed from the job's whole config, with nothing shared."""
    jobs = load_jobs(REPO / "suites" / "papers" / "fedac.authors_replay.yaml")[1]
    assert len(jobs) == 38_640
    mismatched = [job.id for job in jobs if job.id != job_id(job.config)]
    assert mismatched == []


def test_a_section_left_at_its_default_is_shared_and_never_written_into(tmp_path, capsys):
    """The jobs of a method of a suite that leaves `select` at its default share one default object (its
    identity dumped once, not once a job); a grid that writes into it gets the suite's error at the grid's key, exit 2, as
    before it was shared, and the shared object stays the default."""
    text = grid_suite(tmp_path, lrs=2, seeds=2).read_text()
    _, jobs = load_jobs(tmp_path / "scale.yaml")
    assert len(jobs) == 8 and len({id(job.config.select) for job in jobs}) == 2  # FedAvg's and FedProx's
    assert jobs[0].config.select.on == "test"
    path = tmp_path / "select.yaml"
    path.write_text(text + "  select.on: [test, validation]\n")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "grid.select.on: unknown field 'select'" in err and "Traceback" not in err
    assert all(job.config.select.on == "test" for job in load_jobs(tmp_path / "scale.yaml")[1])


def test_after_expansion_the_collector_runs_again_and_still_finds_garbage_made_during_it(tmp_path):
    """Expansion pauses the cyclic collector and then moves what it built to the oldest generation: the
    collector is on again, nothing stays frozen, a cycle dropped meanwhile is found by a full collection,
    and objects someone else froze stay frozen."""
    import gc
    import weakref

    class Node:
        pass

    assert gc.isenabled() and gc.get_freeze_count() == 0
    with expand_module._collector_paused():
        assert not gc.isenabled()
        node = Node()
        node.me = node
        dropped = weakref.ref(node)
        del node
    assert gc.isenabled() and gc.get_freeze_count() == 0 and dropped() is not None
    gc.collect()
    assert dropped() is None
    assert len(load_jobs(grid_suite(tmp_path, lrs=2, seeds=2))[1]) == 8 and gc.isenabled()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with expand_module._collector_paused():
            Node()
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
