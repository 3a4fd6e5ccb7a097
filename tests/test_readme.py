"""The README stays true: its test command is what CI runs, and its example suite is valid."""

from __future__ import annotations

import re

import yaml

from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite
from fedtest import REPO


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    ci_command = lines[lines.index("# README test command:") + 1]
    assert ci_command in readme


def test_readme_example_suite_expands():
    readme = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    jobs = expand(Suite(**yaml.safe_load(block)))
    assert len(jobs) == (1 + 1 + 3 + 1) * 2 * 3  # methods (with the λ sweep) x lr grid x seeds
