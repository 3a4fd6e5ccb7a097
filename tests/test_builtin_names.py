"""The registries of methods, datasets and executors are read lazily (benchmark/registry.py): a built-in
name imports only the module benchmark/builtin_names.py names, with every guarantee of a full import kept.
Each check runs in a fresh interpreter: in this one, other tests have imported every module already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from engine.test_fedac_fixed_costs import SUITE, write_a9a
from fedtest import REPO

from benchmark import builtin_names

# What a FedAc run of fedac1 and mbsgd on a9a must not import: the other methods, datasets and executors.
UNUSED = [
    "benchmark.fl.scaffold",
    "benchmark.fl.moon",
    "benchmark.fl.mlb",
    "benchmark.fl.feddc",
    "benchmark.fl.fedcm",
    "benchmark.fl.qsgd",
    "benchmark.fl.terms",
    "benchmark.data.femnist",
    "benchmark.data.cifar",
    "benchmark.data.celeba",
    "benchmark.data.shakespeare",
    "benchmark.data.tiny_imagenet",
    "benchmark.data.synthetic",
    "benchmark.run.ray_executor",
    "benchmark.run.ray_worker",
]
# A plugin taking a built-in dataset name and adding an executor and a preset of its own.
PLUGIN = """
from benchmark.data.source import DATASETS, DatasetSpec
from benchmark.fl.presets import register_preset
from benchmark.run.executor import LocalExecutor
from benchmark.run.executor_base import EXECUTORS

register_preset("fedac1_mine", "mine", {"rule": "average"})


@EXECUTORS.register
class Mine(LocalExecutor):
    name = "mine"


DATASETS.register(DatasetSpec("a9a", None, "", None))
"""


def python(code: str, env: dict | None = None, cwd=REPO) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "FEDBENCH_PLUGINS": "", **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=environ, capture_output=True, text=True, timeout=300
    )


def test_the_list_is_what_importing_every_module_registers():
    done = python("from benchmark.registry_manifest import discovered, source; print(source(discovered()), end='')")
    assert done.returncode == 0, done.stderr
    listed = open(builtin_names.__file__).read()
    assert done.stdout == listed, (
        "benchmark/builtin_names.py is not what fedbench's modules register: run "
        "`python -m benchmark.registry_manifest` to rewrite it (a name missing there costs every run the import "
        "of its whole package)"
    )


def test_every_kind_the_lazy_packages_register_is_read_lazily():
    """A registration of another kind in benchmark/fl, data or run would be missed: those files are no
    longer all imported by a first read."""
    from benchmark.data.source import DATASETS
    from benchmark.fl.registry import CLIENT_TERMS, CODECS, SERVER_RULES
    from benchmark.run.executor_base import EXECUTORS

    lazy = {r.kind for r in (SERVER_RULES, CLIENT_TERMS, CODECS, DATASETS, EXECUTORS) if r.lazy}
    assert set(builtin_names.BUILT_IN_NAMES) == lazy | {"preset", "modifier"}


def test_a_fedac_run_imports_no_method_dataset_or_executor_it_does_not_use(tmp_path):
    write_a9a(tmp_path / "data", rows=60, seed=0)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, mbsgd]"))
    done = python(
        f"""
        import json, sys
        from benchmark.cli import main
        code = main(["run", {str(suite)!r}, "--results-dir", {str(tmp_path / "results")!r}, "--no-tracking", "-q"])
        print("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith("benchmark."))))
        sys.exit(code)
        """,
        env={"FEDBENCH_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("MODULES ")]
    modules = set(json.loads(line.removeprefix("MODULES ")))
    assert {"benchmark.fl.fedac", "benchmark.data.a9a", "benchmark.run.executor"} <= modules
    assert sorted(modules & set(UNUSED)) == []
    assert len(list((tmp_path / "results" / "jobs").glob("*/summary.json"))) == 4


def test_a_plugin_taking_a_built_in_name_fails_before_fedbench_imports_it(tmp_path):
    """An installed plugin is imported on the first read, before the module owning the name it takes:
    it is still refused at its own import, naming both modules; the built-in one is the name's."""
    (tmp_path / "clash_plugin.py").write_text(PLUGIN)
    done = python(
        """
        import sys
        from benchmark.run.executor_base import EXECUTORS
        assert "local" in EXECUTORS and "benchmark.data.a9a" not in sys.modules
        from benchmark.data.source import DATASETS
        print(DATASETS.get("a9a").help[:4])
        """,
        env={"FEDBENCH_PLUGINS": "clash_plugin", "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"},
    )
    assert done.returncode == 0, done.stderr
    assert "dataset 'a9a' is registered twice: by benchmark.data.a9a and by clash_plugin" in done.stderr
    assert done.stdout.strip() != ""  # the built-in a9a's own help, the plugin's empty one withdrawn


def test_names_and_suggestions_see_every_name_and_fedbench_s_come_first(tmp_path):
    (tmp_path / "mine_plugin.py").write_text(
        PLUGIN.replace('DATASETS.register(DatasetSpec("a9a", None, "", None))', "")
    )
    done = python(
        """
        import json
        from benchmark.data.source import DATASETS
        from benchmark.errors import UserError
        from benchmark.fl.presets import preset
        from benchmark.run.executor_base import EXECUTORS
        DATASETS.get("a9a")  # imports a9a's module, then the plugin: its executor is registered first
        try:
            preset("fedac1_min")
        except KeyError as err:
            suggestion = str(err)
        print(json.dumps([DATASETS.names(), [e.name for e in EXECUTORS.in_order()], suggestion]))
        """,
        env={"FEDBENCH_PLUGINS": "mine_plugin", "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"},
    )
    assert done.returncode == 0, done.stderr
    datasets, executors, suggestion = json.loads(done.stdout)
    assert datasets == sorted(builtin_names.BUILT_IN_NAMES["dataset"])
    assert executors == [*builtin_names.BUILT_IN_NAMES["executor"], "mine"]
    assert "did you mean 'fedac1_mine'?" in suggestion and "fedavg" in suggestion and "scaffold" in suggestion


def test_a_name_moved_without_rewriting_the_list_is_an_error_saying_so():
    """The list says a module that no longer registers the name: its read imports the whole package,
    where the module that does register it is refused, named, with the command that fixes the list."""
    done = python(
        """
        from benchmark.builtin_names import BUILT_IN_NAMES
        from benchmark.errors import UserError
        from benchmark.fl.presets import preset
        BUILT_IN_NAMES["preset"]["fedavg"] = "benchmark.fl.fedac"  # as if fedavg had moved to servers.py
        try:
            preset("fedavg")
        except UserError as err:
            print(err)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "preset 'fedavg' is registered twice: by benchmark.fl.fedac and by benchmark.fl.servers"
        " (moved? run `python -m benchmark.registry_manifest`)"
    )
