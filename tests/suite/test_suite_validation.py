"""Bad suites fail with the file, the YAML path and what is allowed — and exit code 2 from the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fedtest import REPO, tiny_suite, write_suite

from benchmark.cli import main
from benchmark.errors import SuiteError
from benchmark.suite.expand import load_jobs


def problems_of(tmp_path, suite: dict) -> list[tuple[str, str]]:
    path = write_suite(tmp_path, suite)
    with pytest.raises(SuiteError) as err:
        load_jobs(path)
    assert str(path) in str(err.value)
    return err.value.problems


def test_unknown_server_parameter_names_its_path(tmp_path):
    suite = tiny_suite(methods=["fedavg", "fedprox", {"preset": "fedacg", "server": {"lamda": 0.9}}])
    ((path, msg),) = problems_of(tmp_path, suite)
    assert path == "methods[2].server.lamda" and "unknown parameter" in msg


def test_out_of_range_parameter(tmp_path):
    suite = tiny_suite(methods=["fedavg", "fedprox", {"preset": "fedacg", "server": {"lam": 1.5}}])
    ((path, msg),) = problems_of(tmp_path, suite)
    assert path == "methods[2].server.lam" and "less than 1" in msg


def test_unknown_preset_lists_the_known_ones(tmp_path):
    ((path, msg),) = problems_of(tmp_path, tiny_suite(methods=["fedavg", "fedsgd"]))
    assert path == "methods[1].preset" and "fedacg" in msg and "fedavg" in msg


def test_a_method_entry_is_checked_by_suite_validation(tmp_path):
    suite = tiny_suite(methods=["fedavg", {"preset": "fedacg", "lamda": 0.9}])
    ((path, msg),) = problems_of(tmp_path, suite)
    assert path == "methods[1].lamda" and "unknown field 'lamda'" in msg and "server" in msg
    ((path, msg),) = problems_of(
        tmp_path, tiny_suite(methods=["fedavg", {"preset": "fedacg", "grid": {"server.lam": []}}])
    )
    assert path == "methods[1].grid.server.lam" and "at least 1 item" in msg
    ((path, msg),) = problems_of(tmp_path, tiny_suite(methods=["fedavg", 3]))
    assert path == "methods[1]" and "expected a preset name or a mapping, got int" in msg


def test_wrong_type_and_wrong_literal(tmp_path):
    suite = tiny_suite()
    suite["defaults"]["rounds"] = "many"
    suite["datasets"][0]["split"] = {"kind": "dirichelt"}
    found = dict(problems_of(tmp_path, suite))
    assert "datasets[0].split.kind" in found and "'iid'" in found["datasets[0].split.kind"]
    suite["datasets"][0]["split"] = {"kind": "natural"}
    found = dict(problems_of(tmp_path, suite))
    assert "defaults.rounds" in found and "integer" in found["defaults.rounds"]


def test_misspelled_field_and_missing_alpha(tmp_path):
    suite = tiny_suite()
    suite["defaults"]["local"]["learning_rate"] = 0.1
    found = dict(problems_of(tmp_path, suite))
    assert "defaults.local.learning_rate" in found
    suite = tiny_suite()
    suite["datasets"][0]["split"] = {"kind": "dirichlet"}
    found = dict(problems_of(tmp_path, suite))
    assert any("alpha" in m for m in found.values())


def test_unknown_dataset_and_model(tmp_path):
    suite = tiny_suite()
    suite["datasets"][0]["name"] = "mnist9"
    suite["defaults"]["model"] = {"name": "resnet1000"}
    found = dict(problems_of(tmp_path, suite))
    assert "synthetic" in found["datasets[0].name"]
    assert "logistic" in found["defaults.model.name"]


def test_epochs_and_steps_are_exclusive(tmp_path):
    suite = tiny_suite()
    suite["defaults"]["local"] = {"epochs": 2, "steps": 10}
    found = dict(problems_of(tmp_path, suite))
    assert any("exactly one of local.epochs or local.steps" in m for m in found.values())


def test_bad_grid_key(tmp_path):
    found = dict(problems_of(tmp_path, tiny_suite(grid={"lokal.lr": [0.1]})))
    assert "grid.lokal.lr" in found


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nmethods: [fedavg\n")
    with pytest.raises(SuiteError) as err:
        load_jobs(path)
    assert "line" in str(err.value)


def test_cli_exits_2_with_a_message_and_no_traceback(tmp_path, capsys):
    suite = tiny_suite(methods=["fedavg", "fedprox", {"preset": "fedacg", "server": {"lam": "high"}}])
    path = write_suite(tmp_path, suite)
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "methods[2].server.lam" in err and str(path.name) in err and "Traceback" not in err
    assert main(["run", str(tmp_path / "missing.yaml"), "--no-tracking"]) == 2


def test_a_missing_suite_file_is_named_plainly_with_the_suites_beside_it(tmp_path, capsys):
    write_suite(tmp_path, tiny_suite(), "tiny.yaml")
    assert main(["plan", str(tmp_path / "tny.yaml")]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "no such suite file" in err and "invalid suite" not in err and "Traceback" not in err
    assert f"did you mean '{tmp_path / 'tiny.yaml'}'" in err
    assert main(["run", str(tmp_path), "--no-tracking"]) == 2
    assert "is a folder, not a suite file; suites in" in capsys.readouterr().err


def test_dataset_params_are_checked_before_anything_runs(tmp_path):
    suite = tiny_suite()
    suite["datasets"][0]["params"]["alpah"] = 1.0
    suite["datasets"].append({"name": "femnist", "params": {"size": 3}, "split": {"kind": "natural"}})
    found = dict(problems_of(tmp_path, suite))
    assert "unknown field" in found["datasets[0].params.alpah"] and "datasets[1].params.size" in found


def test_method_overrides_name_an_unknown_label_or_key(tmp_path):
    suite = tiny_suite()
    suite["datasets"][0]["method_overrides"] = {"FedCM": {"local": {"batch_size": 50}}}
    problems = dict(problems_of(tmp_path, suite))
    assert "no method labelled 'FedCM'" in problems["datasets[0].method_overrides.FedCM"]
    suite["datasets"][0]["method_overrides"] = {"FedACG": {"locl": {}}}
    ((path, msg),) = problems_of(tmp_path, suite)
    assert path == "datasets[0].method_overrides.FedACG.locl" and "did you mean 'local'" in msg


def test_method_override_of_a_missing_term_names_its_path(tmp_path):
    suite = tiny_suite()
    suite["datasets"][0]["method_overrides"] = {"FedAvg": {"client": {"prox": {"mu": 0.1}}}}
    ((path, msg),) = problems_of(tmp_path, suite)
    assert path == "datasets[0].method_overrides.FedAvg.client.prox" and "no client term" in msg


@pytest.mark.parametrize(
    "make, reason",
    [
        ("fifo", "is a named pipe (FIFO), not a suite file"),
        ("device", "is a character device, not a suite file"),
        ("loop", "is a symbolic link that loops back on itself"),
        ("dangling", "is a symbolic link to a missing file"),
    ],
)
def test_a_suite_path_that_is_no_regular_file_says_what_it_is(tmp_path, capsys, make, reason):
    """Each was "no such suite file"; a FIFO or /dev/zero must not be read at all (it would block or never end)."""
    path = tmp_path / "suite.yaml"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "device":
        path = Path("/dev/zero")
    elif make == "loop":
        path.symlink_to(tmp_path / "other.yaml")
        (tmp_path / "other.yaml").symlink_to(path)
    else:
        path.symlink_to(tmp_path / "gone.yaml")
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{path}: {reason}" in err and "no such suite file" not in err and "Traceback" not in err, err


SMALL = """\
name: small
defaults:
  rounds: 3
  num_clients: 6
  seeds: {seeds}
  metrics: [acc@2, {metric}]
  model: {{name: logistic}}
datasets:
  - name: synthetic
    params: {{num_users: 6, dim: 10, num_classes: 3, max_samples: 60}}
    split: {{kind: natural}}
methods:
{methods}
"""


def small_suite(tmp_path, seeds="[0]", metric="acc@3", methods="  - fedavg") -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL.format(seeds=seeds, metric=metric, methods=methods))
    return path


@pytest.mark.parametrize(
    "methods, problem, fixed",
    [
        (
            "  - fedavg\n  - fedprox\n  - fedavg",
            "methods[2]: the same method as methods[0]: remove one",
            "  - fedavg\n  - fedprox",
        ),
        (
            "  - fedavg\n  - {preset: fedavg, server: {global_lr: 0.5}}",
            "methods[1]: label 'FedAvg' is methods[0]'s too: give one a `label:`",
            "  - fedavg\n  - {preset: fedavg, server: {global_lr: 0.5}, label: FedAvg-half}",
        ),
    ],
)
def test_a_method_listed_twice_or_under_a_taken_label_is_exit_2(tmp_path, capsys, methods, problem, fixed):
    """[fedavg, fedavg] planned one job without a word; two FedAvg rows would share a table row."""
    assert main(["plan", str(small_suite(tmp_path, methods=methods))]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert problem in err and "Traceback" not in err, err
    assert main(["plan", str(small_suite(tmp_path, methods=fixed))]) == 0


def test_seeds_listed_twice_in_the_suite_are_exit_2(tmp_path, capsys):
    assert main(["plan", str(small_suite(tmp_path, seeds="[0, 1, 0]"))]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "defaults.seeds: seed 0 is listed twice" in err, err


def test_a_metric_past_the_last_round_is_warned_at_plan(tmp_path, capsys):
    """acc@1000 with rounds: 3 is an empty column: plan says so, and still plans (--rounds 3 on a paper
    suite is a smoke run that falls short on purpose)."""
    path = small_suite(tmp_path, metric="acc@1000")
    assert main(["plan", str(path)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "acc@1000 (defaults.metrics) is past the last round of jobs with rounds: 3" in err, err
    assert main(["plan", str(path), "--rounds", "1000"]) == 0
    assert main(["plan", str(small_suite(tmp_path, metric="rounds_to@30"))]) == 0
    assert "past the last round" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "model, problem",
    [
        (
            "{name: femnist_cnn, params: {norms: group}}",
            "defaults.model.params.norms: unknown model parameter 'norms'; allowed: groups, norm; did you mean 'norm'?",
        ),
        ("{name: femnist_cnn, params: {groups: two}}", "defaults.model.params.groups: Input should be a valid integer"),
        ("{name: logistic, params: {width: 3}}", "unknown model parameter 'width': this model takes none"),
    ],
)
def test_model_params_are_checked_at_plan_without_torch(tmp_path, capsys, model, problem):
    """They failed only when the job built its model, after the run had started."""
    path = small_suite(tmp_path)
    path.write_text(path.read_text().replace("model: {name: logistic}", f"model: {model}"))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom benchmark.cli import main\nc = main(['plan', sys.argv[1]])\n"
            "sys.exit(c if 'torch' not in sys.modules else 99)",
            str(path),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and problem in err and "Traceback" not in err, (done.returncode, err)
