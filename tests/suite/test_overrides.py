"""Command-line overrides (--set, --seeds, --rounds), exact --only, and 'did you mean' errors."""

from __future__ import annotations

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.cli_options import load_selected
from benchmark.errors import UserError
from benchmark.suite.expand import expand, load_jobs
from benchmark.suite.overrides import Overrides
from benchmark.suite.schema import Suite


def test_set_gives_the_jobs_of_the_edited_yaml_and_says_so_in_the_label(tmp_path):
    edited = tiny_suite()
    edited["defaults"]["local"]["lr"] = 0.2
    edited["defaults"]["rounds"] = 3
    _, want = load_jobs(write_suite(tmp_path, edited, "edited.yaml"))
    _, got = load_selected(write_suite(tmp_path, tiny_suite()), sets=("local.lr=0.2",), rounds=3)
    assert [j.id for j in got] == [j.id for j in want]
    assert got[0].config.local.lr == 0.2 and got[0].config.rounds == 3
    assert got[0].grid_point == {"local.lr": 0.2, "rounds": 3}  # shown in table row labels


def test_set_reaches_method_parameters_and_seeds_replace_the_suites():
    over = Overrides.parse(("method.server.lam=0.7",), seeds="3,4")
    assert over.seeds == (3, 4) and over.values == {"method.server.lam": 0.7}


def test_seeds_and_method_override_through_the_cli(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite(methods=["fedacg"]))
    assert main(["plan", str(path), "--seeds", "3,4", "--set", "method.server.lam=0.7"]) == 0
    out = capsys.readouterr().out
    assert "2 jobs" in out and "lam=0.7" in out and "lam=0.85" not in out


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["--set", "local.lrr=0.1"],
            ["--set local.lrr: unknown field 'lrr'", "did you mean 'lr'"],
        ),  # the path said once
        (["--set", "roundz=3"], ["--set roundz", "did you mean 'rounds'"]),
        (["--set", "local.lr=-1"], ["--set local.lr", "greater than 0"]),
        (
            ["--set", "method.server.lamm=0.7"],
            ["--set method.server.lamm", "unknown parameter 'lamm'", "did you mean 'lam'"],
        ),
        (["--set", "local.lr"], ["expected PATH=VALUE"]),
        (["--set", "dataset.params.num_user=3"], ["--set dataset.params.num_user", "did you mean 'num_users'"]),
        (["--set", "dataset.name=femnistt"], ["--set dataset.name", "did you mean 'femnist'"]),
        (["--set", "model.name=logistc"], ["--set model.name", "unknown model 'logistc'", "did you mean 'logistic'"]),
        (["--set", "model.params.width=3"], ["--set model.params.width", "unknown model parameter 'width'"]),
        (["--seeds", "0,x"], ["--seeds", "comma-separated integers"]),
        (["--seeds", "1,,2"], ["--seeds '1,,2': item 2 is empty"]),  # ran seeds 1 and 2 without a word
        (["--seeds", "1,2,1"], ["--seeds: seed 1 is given twice"]),
        (["--set", "seeds=[3, 3]"], ["--set seeds: seed 3 is given twice"]),
        (["--rounds", "0"], ["--rounds", "0 is not in the range x>=1"]),
        (["--set", "local.lr=.inf"], ["--set local.lr", "finite number"]),
        (["--set", "local.batch_size=true"], ["--set local.batch_size", "valid integer"]),  # no bool for int
        (["--set", "local.lr=.nan"], ["--set local.lr", "finite number"]),
        (["--seeds", "0,-1"], ["--seeds", "greater than or equal to 0"]),
        (["--seeds", str(2**70)], ["--seeds", "less than 4294967296"]),
        (["--set", "rounds=&a [*a]"], ["--set 'rounds=&a [*a]'", "alias *a refers to no complete anchor"]),
        (["--only", "FedAvgg"], ["--only 'FedAvgg' matches no job", "did you mean 'FedAvg'"]),
    ],
)
def test_bad_overrides_name_the_option_and_what_is_allowed(tmp_path, capsys, args, expected):
    path = write_suite(tmp_path, tiny_suite(methods=["fedacg", "fedavg"]))
    assert main(["plan", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, (text, err)


def test_only_selects_exactly_by_label_case_or_id(tmp_path):
    path = write_suite(
        tmp_path, tiny_suite(methods=["fedavg", "fedavgm", {"preset": "fedacg", "grid": {"server.lam": [0.8, 0.9]}}])
    )
    assert {j.method_label for j in load_selected(path, only=("FedAvg",))[1]} == {"FedAvg"}  # not FedAvgM
    assert {j.method_label for j in load_selected(path, only=("fedavgm",))[1]} == {"FedAvgM"}
    acg = load_selected(path, only=("FedACG",))[1]
    assert sorted(j.method_label for j in acg) == ["FedACG[lam=0.8]", "FedACG[lam=0.9]"]
    one = load_selected(path, only=(acg[0].id,))[1]
    assert [j.id for j in one] == [acg[0].id]
    assert len(load_selected(path, only=("synthetic",))[1]) == 4
    with pytest.raises(UserError, match="did you mean 'FedACG\\[lam=0.8\\]'"):
        load_selected(path, only=("FedACG[lam=0.85]",))


def test_unknown_suite_fields_list_the_allowed_names(tmp_path, capsys):
    suite = tiny_suite()
    suite["defaults"]["roundz"] = 3
    assert main(["plan", str(write_suite(tmp_path, suite))]) == 2
    err = capsys.readouterr().err
    assert "defaults.roundz: unknown field 'roundz'" in err and "did you mean 'rounds'" in err
    suite = tiny_suite()
    suite["datasets"][0]["split"]["kindd"] = "iid"
    assert main(["plan", str(write_suite(tmp_path, suite))]) == 2
    err = capsys.readouterr().err
    assert "datasets[0].split.kindd" in err and "did you mean 'kind'" in err and "allowed: alpha, kind" in err


def _ids(jobs) -> dict[str, str]:
    return {j.method_label: j.id for j in jobs}


def test_set_reaches_only_the_methods_that_have_the_field(tmp_path):
    path = write_suite(tmp_path, tiny_suite(methods=["fedavg", "fedprox", "fedacg"]))
    plain = _ids(load_jobs(path)[1])
    jobs = load_selected(path, sets=("method.server.lam=0.9",))[1]
    by_label = {j.method_label: j for j in jobs}
    assert by_label["FedACG"].config.method.param("server.lam") == 0.9
    assert by_label["FedACG"].suite_point == {"method.server.lam": 0.9}
    # the others are the suite's own jobs: same ids, no override in their row labels
    assert _ids(jobs)["FedAvg"] == plain["FedAvg"] and _ids(jobs)["FedProx"] == plain["FedProx"]
    assert by_label["FedAvg"].setting_label == "FedAvg"
    # a client term's parameter reaches FedProx and FedACG (both have prox), not FedAvg
    mu = {j.method_label: j for j in load_selected(path, sets=("method.client.prox.mu=0.5",))[1]}
    assert [t.params.mu for t in mu["FedProx"].config.method.client] == [0.5]
    assert mu["FedAvg"].id == plain["FedAvg"]


def test_only_selects_before_the_overrides_are_validated(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite(methods=["fedavg", "fedavgm", "fedacg"]))
    assert main(["plan", str(path), "--only", "FedAvg", "--set", "method.server.lam=0.9"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'lam'" in err and "methods without it: FedAvg)" in err, err
    # selected together with a method that has it, the same override is fine
    assert len(load_selected(path, only=("FedAvg", "FedACG"), sets=("method.server.lam=0.9",))[1]) == 2


def test_a_field_no_job_has_suggests_the_closest_of_any_method(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite(methods=["fedavg", "fedacg"]))  # FedAvg first: its server has no λ
    assert main(["plan", str(path), "--set", "method.server.lamm=0.9"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'lam'" in err and "methods without it: FedACG, FedAvg" in err, err


def test_scoped_set_matches_labels_as_only_does_and_wins_over_the_unscoped(tmp_path, capsys):
    grid = {"preset": "fedacg", "grid": {"server.lam": [0.8, 0.9]}}
    path = write_suite(tmp_path, tiny_suite(methods=["fedprox", grid]))
    jobs = load_selected(path, sets=("method.client.prox.mu=0.2", "FedACG[lam=0.8]:method.client.prox.mu=0.3"))[1]
    mu = {j.method_label: j.config.method.client[-1].params.mu for j in jobs}
    assert mu == {"FedProx": 0.2, "FedACG[lam=0.8]": 0.3, "FedACG[lam=0.9]": 0.2}
    scoped = load_selected(path, sets=("fedacg:method.client.prox.mu=0.5",))[1]  # the label without its grid
    assert {j.method_label: j.config.method.client[-1].params.mu for j in scoped} == {
        "FedProx": 0.001,  # the preset default, untouched
        "FedACG[lam=0.8]": 0.5,
        "FedACG[lam=0.9]": 0.5,
    }
    assert main(["plan", str(path), "--set", "FedProxx:method.client.prox.mu=0.1"]) == 2
    err = capsys.readouterr().err
    assert "'FedProxx' matches no selected job" in err and "did you mean 'FedProx'" in err, err
    assert main(["plan", str(path), "--set", "FedProx:method.server.lam=0.5"]) == 2
    assert "methods without it: FedProx)" in capsys.readouterr().err


def test_values_may_hold_colons_and_equals_signs():
    over = Overrides.parse(("dataset.label=a:b=c", "FedACG[lam=0.7]:local.lr=0.2"))
    assert [(s.scope, s.path, s.value) for s in over.settings] == [
        (None, "dataset.label", "a:b=c"),
        ("FedACG[lam=0.7]", "local.lr", 0.2),
    ]


@pytest.mark.parametrize(
    "path, present",
    [
        ("local.lr", True),
        ("local.lrr", False),
        ("participation.pool.size", True),
        ("model.params.norm", True),  # a model's params are free-form
        ("dataset.params.num_users", True),
        ("dataset.params.num_user", False),
        ("method.server.lam", False),  # FedProx's server rule is the average
        ("method.server.global_lr", True),
        ("method.client.prox.mu", True),
        ("method.client.0.mu", True),
        ("method.client.mlb.mu", False),
        ("method.uplink.codec", True),
    ],
)
def test_has_field_follows_the_jobs_own_schema(path, present):
    from benchmark.suite.fields import has_field

    job = expand(Suite(**tiny_suite(methods=["fedprox"])))[0]
    assert has_field(job.config.model_dump(mode="json"), path) is present


def test_the_issues_checks_on_the_quickstart(capsys):
    from fedtest import REPO

    quickstart = REPO / "suites" / "quickstart.yaml"
    plain = _ids(load_jobs(quickstart)[1])
    jobs = load_selected(quickstart, sets=("method.server.lam=0.9",))[1]
    assert [getattr(j.config.method.server.params, "lam", None) for j in jobs] == [None, None, None, 0.9]
    assert {m: i for m, i in _ids(jobs).items() if m != "FedACG"} == {m: i for m, i in plain.items() if m != "FedACG"}
    assert main(["plan", str(quickstart), "--set", "method.server.lamm=0.9"]) == 2
    assert "did you mean 'lam'" in capsys.readouterr().err
