"""The docs are tested as text (docs/suites.md, "Examples in the docs"): every YAML block of README.md
and docs/ is read from the Markdown exactly as written and planned, every command line in them is
parsed by the real command line and planned (or run, where marked, in the slow tests), and nothing
a test cannot reach is shown as a command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import tomllib
from doc_blocks import Block, every_block
from fedtest import REPO, extending_examples

from benchmark.suite.safe_yaml import parse_yaml

BLOCKS = every_block()
YAML = [b for b in BLOCKS if b.lang == "yaml"]
MARKERS = ("fragment", "run (slow)", "run (slow, realdata)", "plan (slow)", "run by tests/")
# What a fragment lacks, from a minimal suite: each top-level key the fragment does not give.
MINIMAL = {
    "name": "name: fragment\n",
    "defaults": "defaults:\n  rounds: 2\n  num_clients: 4\n  model: {name: femnist_cnn}\n",
    "datasets": "datasets:\n  - name: femnist\n",
    "methods": "methods: [fedavg]\n",
}
SELECTION = {"only": "--only", "sets": "--set", "seeds": "--seeds", "rounds": "--rounds"}

# Runs in a folder holding the docs' example files and a link to suites/; the example method, dataset
# and executor join the packages' search paths (as in tests/test_extending.py), so a docs suite may
# name them. Each argv: its options parsed by click, then `fedbench plan` of its suite and selection.
DRIVER = """
import contextlib, io, json, sys
from pathlib import Path
import benchmark.data, benchmark.fl, benchmark.run
for package in (benchmark.data, benchmark.fl, benchmark.run):
    package.__path__.append(str(Path(*package.__name__.split(".")).resolve()))
import click
from benchmark.cli import cli, main
SELECTION = json.loads(sys.argv[1])
out = []
for argv, plan_it in json.loads(sys.stdin.read()):
    ctx = cli.make_context("fedbench", list(argv), resilient_parsing=True)
    try:
        command = cli.get_command(ctx, argv[0])
        params = command.make_context(argv[0], list(argv[1:])).params
    except (click.ClickException, AttributeError) as err:
        out.append({"argv": argv, "code": 2, "err": f"options: {err}"})
        continue
    if not plan_it or "suite_file" not in params:  # `data ls`: parsed, no suite to plan
        out.append({"argv": argv, "code": 0, "err": ""})
        continue
    plan = ["plan", str(params["suite_file"])] if argv[0] != "plan" else list(argv)
    for name, flag in SELECTION.items():
        value = params.get(name) if argv[0] != "plan" else None
        for v in value if isinstance(value, tuple) else [] if value is None else [value]:
            plan += [flag, str(v)]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(plan)
    out.append({"argv": argv, "plan": plan, "code": code, "err": err.getvalue()})
print(json.dumps(out))
"""


def suite_text(block: Block) -> str:
    """A whole suite as written; a fragment completed with the minimal suite's other top-level keys."""
    if block.marker != "fragment":
        return block.text
    given = parse_yaml(block.text)
    assert isinstance(given, dict), f"{block.where}: a fragment holds top-level suite keys"
    return block.text + "".join(text for key, text in MINIMAL.items() if key not in given)


def suite_name(block: Block) -> str:
    named = re.match(r"yaml file=(\S+)", block.info)
    return named.group(1) if named else f"{block.file.stem}_{block.line}.yaml"


def workspace(tmp_path):
    """The docs' example files and suites as a reader who followed them would have them."""
    for name, text in extending_examples().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "suites").symlink_to(REPO / "suites")
    for block in YAML:
        (tmp_path / suite_name(block)).write_text(suite_text(block))
    return tmp_path


def plan_all(cwd, argvs: list, timeout: int = 600) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(SELECTION)],
        input=json.dumps(argvs),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fedbench_commands() -> list[tuple[Block, list[str]]]:
    return [(b, words[1:]) for b in BLOCKS for words in b.commands() if words[0] == "fedbench"]


def test_the_docs_hold_what_these_tests_read():
    """Guards the parser: the README's suite and quickstart, and docs' fragments, are found."""
    assert any(b.file.name == "README.md" and "name: my-study" in b.text for b in YAML)
    assert ["run", "suites/quickstart.yaml"] in [argv for b, argv in fedbench_commands() if b.file.name == "README.md"]
    assert any(b.marker == "fragment" and "select: {on: validation, holdout: 0.1}" in b.text for b in YAML)
    assert len(YAML) >= 7 and len(fedbench_commands()) >= 20


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker], ids=lambda b: b.where)
def test_every_marker_is_one_these_tests_know(block):
    assert block.marker.startswith(MARKERS), f"{block.where}: unknown marker {block.marker!r}"
    if block.marker.startswith("run by "):
        assert (REPO / block.marker.removeprefix("run by ").split()[0]).is_file()


@pytest.mark.parametrize("block", YAML, ids=lambda b: b.where)
def test_every_yaml_block_is_a_suite_or_a_marked_fragment(block):
    value = parse_yaml(block.text)
    assert isinstance(value, dict), f"{block.where}: a YAML block is a suite or a fragment of one"
    if block.marker != "fragment":
        assert {"name", "methods"} <= set(value), (
            f"{block.where}: not a whole suite; mark it <!-- fedbench: fragment -->"
        )


def plan_commands(tmp_path, slow: bool) -> None:
    """Suites as files written from the blocks' text, planned; each command's options parsed by the real
    command line and its suite planned with its selection (--only, --set, --seeds, --rounds). The commands
    of `plan (slow)` blocks (tens of thousands of jobs) are planned by the slow tests, the others by both."""
    cwd = workspace(tmp_path)
    items = [(b.where, ["plan", suite_name(b)], True) for b in YAML]
    items += [(b.where, argv, slow or b.marker != "plan (slow)") for b, argv in fedbench_commands()]
    if slow:
        items = [item for item, (b, _) in zip(items[len(YAML) :], fedbench_commands()) if b.marker == "plan (slow)"]
    results = plan_all(cwd, [[argv, plan_it] for _, argv, plan_it in items], timeout=3600 if slow else 600)
    failed = [
        f"{where}: fedbench {' '.join(r['argv'])}\n{r['err']}" for (where, _, _), r in zip(items, results) if r["code"]
    ]
    assert not failed, "\n".join(failed)


def test_every_yaml_block_and_command_plans(tmp_path):
    plan_commands(tmp_path, slow=False)


@pytest.mark.slow
def test_the_commands_of_the_largest_suites_plan(tmp_path):
    plan_commands(tmp_path, slow=True)


def test_every_other_command_is_one_a_test_or_ci_runs():
    """pip and pytest lines are CI's (.ci/run, with the same torch pin and extras the project has); a
    block of other programs (ray start) names the test that runs it."""
    ci = (REPO / ".ci" / "run").read_text()
    pin = re.search(r'"torch==[^"]+"', ci).group(0)
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for block in BLOCKS:
        for words in block.commands():
            line = " ".join(words)
            if words[0] == "fedbench" or block.marker.startswith("run by ") or block.info == "bash run":
                continue
            if words[:4] == ["python", "-m", "pip", "install"]:
                assert f'"{words[4]}"' == pin and re.fullmatch(r"\.(\[[\w,]+\])?", words[6]), f"{block.where}: {line}"
                assert set(re.findall(r"\w+", words[6])) <= extras, f"{block.where}: {line}"
            elif words == ["python", "-m", "pytest"]:
                assert "&& python -m pytest" in ci, block.where
            else:
                pytest.fail(f"{block.where}: `{line}` is run by no test (mark its block with the test that runs it)")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.info == "bash run"], ids=lambda b: b.where)
def test_bash_run_blocks_are_the_extending_docs(block):
    assert block.file == REPO / "docs" / "extending.md", (
        "tests/test_extending.py runs the `bash run` blocks of extending.md only"
    )


RUN = [
    pytest.param(b, id=b.where, marks=[pytest.mark.realdata] if "realdata" in b.marker else [])
    for b in BLOCKS
    if b.marker.startswith("run (slow")
]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN)
def test_commands_marked_run_run(tmp_path, request, block):
    """As a reader runs them, in a fresh folder; `run (slow, realdata)`: with the datasets of FEDBENCH_DATA."""
    if "realdata" in block.marker:
        request.getfixturevalue("data_root")  # skips, saying why, where the datasets are not there
    cwd = workspace(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for words in block.commands():
        if words[0] != "fedbench":
            continue
        command = [sys.executable, "-m", "benchmark", *words[1:]]
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"{block.where}: {' '.join(words)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr
