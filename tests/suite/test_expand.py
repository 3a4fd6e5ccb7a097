"""Suite expansion: grid counts, method grids, and job ids that are stable and meaningful."""

from __future__ import annotations

from fedtest import REPO, tiny_suite

from benchmark.suite.expand import expand, job_id, load_jobs
from benchmark.suite.schema import Suite


def jobs_of(**overrides):
    return expand(Suite(**tiny_suite(**overrides)))


def test_cartesian_product_of_datasets_methods_grid_and_seeds():
    suite = tiny_suite(grid={"local.lr": [0.1, 0.05, 0.01], "participation.rate": [0.5, 1.0]})
    suite["defaults"]["seeds"] = [0, 1]
    suite["datasets"].append({**suite["datasets"][0], "split": {"kind": "iid"}})
    jobs = expand(Suite(**suite))
    assert len(jobs) == 2 * 2 * 3 * 2 * 2  # datasets x methods x lr x rate x seeds
    assert len({j.id for j in jobs}) == len(jobs)
    assert {j.config.local.lr for j in jobs} == {0.1, 0.05, 0.01}


def test_method_grid_applies_to_its_method_only():
    jobs = jobs_of(
        methods=[
            "fedavg",
            {"preset": "fedacg", "grid": {"server.lam": [0.8, 0.85, 0.9], "client.prox.mu": [0.001, 0.01]}},
        ]
    )
    acg = [j for j in jobs if j.config.method.server.name == "acg"]
    assert len(jobs) == 1 + 6 and len(acg) == 6
    assert {(j.config.method.param("server.lam"), j.config.method.client[0].params.mu) for j in acg} == {
        (lam, mu) for lam in (0.8, 0.85, 0.9) for mu in (0.001, 0.01)
    }
    assert all("lam=" in j.method_label for j in acg)


def test_suite_grid_may_sweep_method_parameters():
    jobs = jobs_of(methods=["fedacg"], grid={"method.server.lam": [0.8, 0.9]})
    assert sorted(j.config.method.param("server.lam") for j in jobs) == [0.8, 0.9]


def test_job_id_ignores_spelling_and_presentation():
    base = jobs_of()[0]
    explicit = tiny_suite()
    explicit["defaults"]["local"].update(weight_decay=1e-3, clip_norm=10.0, lr_decay=1.0)  # the defaults, spelled out
    explicit["methods"] = [{"preset": "fedavg", "label": "Plain averaging"}]
    explicit["defaults"]["metrics"] = ["acc@3"]
    explicit["defaults"]["execution"] = "vectorised"
    again = expand(Suite(**explicit))[0]
    assert again.id == base.id
    assert job_id(base.config) == base.id  # recomputing gives the same id


def test_job_id_changes_with_anything_that_changes_training():
    base = jobs_of()[0].id
    assert jobs_of(grid={"local.lr": [0.07]})[0].id != base
    suite = tiny_suite()
    suite["defaults"]["seeds"] = [1]
    assert expand(Suite(**suite))[0].id != base
    suite = tiny_suite()
    suite["datasets"][0]["split"]["seed"] = 3
    assert expand(Suite(**suite))[0].id != base


def test_dataset_entries_override_defaults():
    suite = tiny_suite()
    suite["datasets"][0].update(rounds=9, local={"lr": 0.2})
    (job, _) = expand(Suite(**suite))
    assert job.config.rounds == 9 and job.config.local.lr == 0.2 and job.config.local.batch_size == 8


def test_reference_metrics_are_reported():
    suite = tiny_suite()
    suite["datasets"][0]["reference"] = {
        "source": "test",
        "metrics": ["acc@4", "rounds_to@50"],
        "rows": {"FedAvg": [10.0, ">4"], "FedACG": [20.0, 3]},
    }
    (job, _) = expand(Suite(**suite))
    assert job.config.metrics == ["acc@2", "rounds_to@30", "acc@4", "rounds_to@50"]


def test_method_overrides_train_one_method_of_a_table_differently():
    """A paper table that trains its methods differently (FedCM's CIFAR-100): local settings and
    method parameters for one method label of one dataset entry; steps replace the default epochs."""
    suite = tiny_suite()
    suite["datasets"][0]["method_overrides"] = {
        "FedACG": {"local": {"batch_size": 4, "steps": 7}, "server": {"lam": 0.5}, "client": {"prox": {"mu": 0.1}}}
    }
    fedavg, fedacg = expand(Suite(**suite))
    assert (fedavg.config.local.batch_size, fedavg.config.local.epochs, fedavg.config.local.steps) == (8, 1, None)
    assert (fedacg.config.local.batch_size, fedacg.config.local.epochs, fedacg.config.local.steps) == (4, None, 7)
    assert fedacg.config.method.param("server.lam") == 0.5 and fedacg.config.method.client[0].params.mu == 0.1
    plain = expand(Suite(**tiny_suite()))
    assert plain[0].id == fedavg.id and plain[1].id != fedacg.id


def test_new_optional_fields_leave_existing_job_ids_alone():
    """method_overrides, participation.relative_to and FedAdam's per_step are left out of the
    hashed config at their defaults, so results of earlier runs are still found."""
    (job, _) = jobs_of(methods=["fedadam", "fedavg"])
    dumped = job.config.model_dump(mode="json")
    assert "method_overrides" not in dumped["dataset"] and "relative_to" not in dumped["participation"]
    assert "per_step" not in dumped["method"]["server"]


def test_job_ids_do_not_move_when_a_setting_is_added():
    """Results on disk are found by job id: a new setting left at its default (here `compile`, which a
    dataset entry also carries as an override) must not give every existing job a new id."""
    ids = {j.method_label: j.id for j in load_jobs(REPO / "suites" / "quickstart.yaml")[1]}
    assert ids == {
        "FedAvg": "d85c8bb99ca3",
        "FedProx": "237fa7b71fb9",
        "FedAvgM": "12c673e14894",
        "FedACG": "3eaa7f596799",
    }
