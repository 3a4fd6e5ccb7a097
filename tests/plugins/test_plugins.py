"""Plugins from the user's own code: docs/extending.md's FedMedian file as an installed distribution (entry
point `fedbench.plugins`, tests/plugins/fedmedian_pkg) and as a plain module (a suite's `plugins:`).
Every run is a subprocess: a plugin registers names for the life of its process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fedtest import REPO, extending_examples, tiny_suite, write_suite

FEDMEDIAN = extending_examples()["benchmark/fl/fedmedian.py"]  # docs/extending.md's text, unchanged


def fedbench(*args: str, cwd: Path, path: list[Path] = (), env: dict | None = None):
    pythonpath = os.pathsep.join(str(p) for p in [REPO, *path])
    environ = {**os.environ, "PYTHONPATH": pythonpath, "OMP_NUM_THREADS": "1", **(env or {})}

    command = [sys.executable, "-m", "benchmark", *args]
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The FedMedian distribution installed into a folder of its own (as pip puts it in site-packages)."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(REPO / "tests" / "plugins" / "fedmedian_pkg", root / "src")
    (root / "src" / "fedmedian.py").write_text(FEDMEDIAN)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, "--target", str(root / "site"), str(root / "src")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root / "site"


def one_client_suite(tmp_path: Path, **extra) -> Path:
    """FedAvg and FedMedian with one client a round: the median of one update is that update, so the
    two methods must give the same numbers."""
    suite = tiny_suite(methods=["fedavg", "fedmedian"], **extra)
    suite["defaults"]["participation"] = {"rate": 0.17}  # round(0.17 * 6) = 1 client a round
    return write_suite(tmp_path, suite)


def final_accuracies(results: Path) -> dict[str, float]:
    found = {}
    for summary in results.glob("tiny/*/summary.json"):
        config = json.loads((summary.parent / "config.json").read_text())
        found[config["method"]["label"]] = json.loads(summary.read_text())["final_acc"]
    return found


def test_an_installed_plugin_is_found_through_its_entry_point(tmp_path, installed):
    path = one_client_suite(tmp_path)
    plan = fedbench("plan", str(path), cwd=tmp_path, path=[installed])
    assert plan.returncode == 0 and "FedMedian" in plan.stdout, plan.stderr
    run = fedbench("run", str(path), "--no-tracking", "--results-dir", "results", cwd=tmp_path, path=[installed])
    assert run.returncode == 0, run.stderr
    acc = final_accuracies(tmp_path / "results")
    assert set(acc) == {"FedAvg", "FedMedian"} and acc["FedMedian"] == acc["FedAvg"]
    for command in ("status", "report"):
        done = fedbench(command, str(path), "--results-dir", "results", cwd=tmp_path, path=[installed])
        assert done.returncode == 0 and "FedMedian" in done.stdout, (command, done.stderr)
    # without the distribution, the method is unknown: a suite error, not a crash
    missing = fedbench("plan", str(path), cwd=tmp_path)
    assert missing.returncode == 2 and "unknown preset 'fedmedian'" in missing.stderr, missing.stderr


def test_a_module_on_pythonpath_is_found_through_the_suite_key(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "my_median.py").write_text(FEDMEDIAN)
    path = one_client_suite(tmp_path, plugins=["my_median"])
    run = fedbench(
        "run", str(path), "--no-tracking", "--results-dir", "results", cwd=tmp_path, path=[tmp_path / "code"]
    )
    assert run.returncode == 0, run.stderr
    acc = final_accuracies(tmp_path / "results")
    assert set(acc) == {"FedAvg", "FedMedian"} and acc["FedMedian"] == acc["FedAvg"]


@pytest.mark.parametrize(
    "source, expected",
    [
        (None, ["plugins[0]", "plugin module 'my_plugin'", "ModuleNotFoundError", "on PYTHONPATH"]),
        (
            "import numpy\nraise RuntimeError('boom')\n",
            ["plugin module 'my_plugin'", "RuntimeError: boom", "my_plugin.py:2: raise RuntimeError('boom'))"],
        ),
        (
            "from fedbench import ServerRule, register_server_rule\n\n\n"
            "@register_server_rule\nclass Mine(ServerRule):\n    name = 'average'\n",
            ["server rule 'average' is registered twice: by benchmark.fl.servers and by my_plugin"],
        ),
        (
            "from fedbench import register_preset\nregister_preset('fedavg', 'Mine', {'rule': 'average'})\n",
            ["preset 'fedavg' is registered twice: by benchmark.fl.servers and by my_plugin"],
        ),
        (
            "from fedbench import register_model\nregister_model('logistic', 'my_plugin:factory')\n",
            ["model 'logistic' is registered twice: by benchmark.models.registry and by my_plugin"],
        ),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_a_suite_error(tmp_path, source, expected):
    if source is not None:
        (tmp_path / "my_plugin.py").write_text(source)
    path = write_suite(tmp_path, tiny_suite(plugins=["my_plugin"]))
    done = fedbench("plan", str(path), cwd=tmp_path, path=[tmp_path])
    err = " ".join(done.stderr.split())  # the console wraps long lines
    assert done.returncode == 2 and "Traceback" not in err, err
    for text in expected:
        assert text in err, (text, err)


def test_a_broken_installed_plugin_is_skipped_with_one_warning_unless_a_suite_names_its_parts(tmp_path, installed):
    """It made every command exit 2 for every suite; now only a suite that uses it does, naming it."""
    broken = tmp_path / "site"
    shutil.copytree(installed, broken)
    # it registers its rule and preset, then fails: half a plugin must not run either
    (broken / "fedmedian.py").write_text(FEDMEDIAN + "raise ImportError('needs scipy')\n")
    line = len(FEDMEDIAN.splitlines()) + 1
    why = (
        "plugin module 'fedmedian' (entry point 'fedmedian' of fedmedian 0.1.0) cannot be imported: "
        f"ImportError: needs scipy ({broken / 'fedmedian.py'}:{line}: raise ImportError('needs scipy'))"
    )
    path = write_suite(tmp_path, tiny_suite(methods=["fedavg"]))
    for args in (
        ["run", str(path), "--no-tracking", "--results-dir", "results"],
        ["status", str(path)],
        ["data", "ls"],
    ):
        done = fedbench(*args, cwd=tmp_path, path=[broken])
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
        assert done.stderr.count(why) == 1 and "skipped: suites that use none of its names" in done.stderr, args
    assert final_accuracies(tmp_path / "results").keys() == {"FedAvg"}
    uses_it = write_suite(tmp_path, tiny_suite(methods=["fedavg", "fedmedian"]), "uses_it.yaml")
    done = fedbench("plan", str(uses_it), cwd=tmp_path, path=[broken])
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "Traceback" not in err, err
    assert (
        "methods[1].preset: unknown preset 'fedmedian'; allowed: " in err and f"{why} (it may define this name" in err
    )


CONSOLE_SCRIPT = "import sys\nfrom benchmark.cli import main\nsys.exit(main())\n"  # what pip writes for `fedbench`


@pytest.mark.parametrize("launcher", ["python -m benchmark", "fedbench"])
def test_plugins_resolve_the_same_under_both_launchers_and_never_from_the_current_folder(tmp_path, launcher):
    """`python -m` put the current folder on sys.path: a module that merely sat there was imported
    through `plugins:`, where `fedbench` (sys.path[0] = its bin folder) found none."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "fedbench").write_text(CONSOLE_SCRIPT)
    command = [sys.executable, "-m", "benchmark"] if launcher != "fedbench" else [sys.executable, "bin/fedbench"]
    here, study = tmp_path, tmp_path / "study"
    (study / "child").mkdir(parents=True)
    (here / "my_median.py").write_text(FEDMEDIAN)  # in the current folder, on no path
    (study / "my_median.py").write_text(FEDMEDIAN)
    write_suite(study, _raw(plugins=["my_median"]), "by_name.yaml")
    write_suite(study, _raw(plugins=["./my_median.py"]), "by_path.yaml")
    (study / "child" / "extending.yaml").write_text(
        "extends: ../by_path.yaml\nname: child\n"
    )  # paths count from their file

    def plan(suite: str):
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        done = subprocess.run([*command, "plan", suite], cwd=here, env=env, capture_output=True, text=True, timeout=300)
        return done.returncode, " ".join(done.stderr.split()), done.stdout

    code, err, _ = plan("study/by_name.yaml")
    assert code == 2 and "plugins[0]: plugin module 'my_median'" in err and "ModuleNotFoundError" in err, err
    for suite in ("study/by_path.yaml", "study/child/extending.yaml"):
        code, err, out = plan(suite)
        assert code == 0 and "FedMedian" in out, (suite, err)


def _raw(**extra) -> dict:
    suite = tiny_suite(methods=["fedavg", "fedmedian"], **extra)
    suite["defaults"]["participation"] = {"rate": 0.17}
    return suite


def test_the_ray_workers_get_the_plugins_source_and_names(tmp_path):
    (tmp_path / "my_median.py").write_text(FEDMEDIAN)
    script = (
        "import json\nfrom benchmark.plugins import import_plugin\nfrom benchmark.run.ray_worker import code_runtime_env\n"
        "import_plugin('my_median', 'test')\nprint(json.dumps(code_runtime_env()))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    runtime_env = json.loads(done.stdout)
    assert str(tmp_path / "my_median.py") in runtime_env["py_modules"]
    assert runtime_env["env_vars"] == {"FEDBENCH_PLUGINS": "my_median"}


def test_the_public_api_is_importable_as_fedbench():
    import benchmark.api
    import fedbench

    assert fedbench.__all__ == benchmark.api.__all__
    assert all(getattr(fedbench, name) is getattr(benchmark.api, name) for name in fedbench.__all__)
    assert fedbench.StrictParams.model_config["extra"] == "forbid"


def test_the_walkthrough_suite_extends_the_paper_suite_with_the_installed_method(tmp_path, installed):
    from benchmark.suite.expand import load_jobs

    text = textwrap.dedent(extending_examples()["fedmedian-vs-fedacg.yaml"])
    (tmp_path / "fedmedian-vs-fedacg.yaml").write_text(text)
    (tmp_path / "suites").symlink_to(REPO / "suites")
    plan = fedbench("plan", "fedmedian-vs-fedacg.yaml", cwd=tmp_path, path=[installed])
    assert plan.returncode == 0, plan.stderr
    _, paper = load_jobs(REPO / "suites" / "papers" / "fedacg.moderate_dir0.3.yaml")
    assert "42 jobs" in plan.stdout and plan.stdout.count("FedMedian") == 3
    assert all(job.id in plan.stdout for job in paper)  # the baselines keep their ids
    audit = fedbench("plan", "fedmedian-vs-fedacg.yaml", "--audit", cwd=tmp_path, path=[installed])
    assert audit.returncode == 0 and "FedMedian" in audit.stdout, audit.stderr


@pytest.mark.slow
def test_ray_workers_import_the_plugin_from_the_shipped_source(tmp_path):
    """The plugin folder is on the driver's sys.path only (not in PYTHONPATH, which local Ray workers
    inherit): the workers can build FedMedian only from what runtime_env shipped."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "my_median.py").write_text(FEDMEDIAN)
    path = one_client_suite(tmp_path, plugins=["my_median"])
    driver = (
        f"import sys\nsys.path.insert(0, {str(code)!r})\nfrom benchmark.cli import main\n"
        f"sys.exit(main(['run', {str(path)!r}, '--executor', 'ray', '--no-tracking', '--results-dir', 'results']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", driver], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    acc = final_accuracies(tmp_path / "results")
    assert set(acc) == {"FedAvg", "FedMedian"} and acc["FedMedian"] == acc["FedAvg"]


MODEL_AND_EXECUTOR = """
import torch

from fedbench import Executor, register_executor, register_model, run_jobs


class Mlp(torch.nn.Module):
    def __init__(self, inputs: int, classes: int):
        super().__init__()
        self.body, self.head = torch.nn.Linear(inputs, 8), torch.nn.Linear(8, classes)

    def forward(self, x, features=False):
        h = torch.relu(self.body(x.flatten(1)))
        return (self.head(h), h) if features else self.head(h)


def mlp(input_shape, num_classes):
    return Mlp(input_shape[0], num_classes)


register_model("plugin_mlp", "my_parts:mlp", traits=("features",))


@register_executor
class Reversed(Executor):
    name = "reversed"

    def run(self, jobs, suite, results_root, device, tracker, progress, stop_after):
        return run_jobs(list(reversed(jobs)), suite, results_root, device, tracker, progress, stop_after)
"""


def test_a_plugin_model_and_executor_named_by_the_suite(tmp_path):
    (tmp_path / "my_parts.py").write_text(MODEL_AND_EXECUTOR)
    suite = tiny_suite(plugins=["my_parts"], methods=["fedavg", "moon"])  # MOON needs the model's features
    suite["defaults"]["model"] = {"name": "plugin_mlp"}
    path = write_suite(tmp_path, suite)
    args = ("run", str(path), "--executor", "reversed", "--no-tracking", "--results-dir", "results")
    done = fedbench(*args, cwd=tmp_path, path=[tmp_path])
    assert done.returncode == 0, done.stderr
    assert set(final_accuracies(tmp_path / "results")) == {"FedAvg", "MOON"}
    suite["defaults"]["model"]["params"] = {"hiden": 8}  # a plugin model's parameters are checked at plan too
    done = fedbench("plan", str(write_suite(tmp_path, suite)), cwd=tmp_path, path=[tmp_path])
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "defaults.model.params.hiden: unknown model parameter 'hiden'" in err, err
