"""Command-line overrides (--set, --seeds, --rounds), exact --only, and 'did you mean' errors."""

from __future__ import annotations

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.cli_options import load_selected
from benchmark.errors import UserError
from benchmark.suite.expand import load_jobs
from benchmark.suite.overrides import Overrides


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
        (["--seeds", "0,x"], ["--seeds", "comma-separated integers"]),
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
