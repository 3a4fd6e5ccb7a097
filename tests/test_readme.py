"""The README stays true: its test command is what CI runs, its example suite is valid."""

from __future__ import annotations

import re
import shlex

from fedtest import REPO

from benchmark.suite.expand import expand
from benchmark.suite.safe_yaml import parse_yaml
from benchmark.suite.schema import Suite


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    ci_command = lines[lines.index("# README test command:") + 1]
    assert ci_command in readme


def test_readme_example_suite_expands():
    readme = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    jobs = expand(Suite(**parse_yaml(block)))
    assert len(jobs) == (1 + 1 + 3 + 1) * 2 * 3  # methods (with the λ sweep) x lr grid x seeds
    assert {(j.config.select.on, j.config.select.holdout) for j in jobs} == {("validation", 0.1)}  # `on`: a word


def test_the_override_example_plans_as_printed(capsys):
    from benchmark.cli import main

    commands = (REPO / "docs" / "commands.md").read_text()
    (line,) = re.findall(r"^ {4}fedbench run (suites/quickstart\.yaml --set .*)$", commands, flags=re.M)
    suite, *args = shlex.split(line)
    assert main(["plan", str(REPO / suite), *args]) == 0
    out = capsys.readouterr().out
    assert "3 jobs" in out and "lam=0.9" in out and "lr=0.1" in out and "FedAvg " not in out


def test_readme_is_a_landing_page():
    """What fedbench is, the two commands, a suite, the commands, links: the manual is docs/."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert readme.count("\n## ") <= 12
