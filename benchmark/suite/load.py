"""Read and validate a suite file; every problem is reported with its YAML path."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from benchmark.errors import SuiteError
from benchmark.params import pydantic_problems
from benchmark.suggest import allowed_names
from benchmark.suite.schema import Suite


def read_yaml(path: Path) -> object:
    if not path.is_file():
        raise SuiteError(str(path), [("", "no such file")])
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SuiteError(str(path), [("", f"not valid YAML: {where}{getattr(err, 'problem', err)}")]) from None


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise SuiteError(str(path), [("", "a suite is a YAML mapping with name, datasets and methods")])
    try:
        return Suite(**raw)
    except ValidationError as err:
        raise SuiteError(str(path), pydantic_problems(err, model=Suite)) from None
