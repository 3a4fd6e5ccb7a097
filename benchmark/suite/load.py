"""Read and validate a suite file; every problem is reported with its YAML path."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from benchmark.errors import SuiteError
from benchmark.suite.schema import Suite


def format_loc(loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def pydantic_problems(err: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    problems = []
    for e in err.errors():
        # pydantic puts union/function-validator branch names into loc; keep the real fields only
        loc = [p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
        path = format_loc(loc)
        if prefix:
            path = prefix + ("" if not path or path.startswith("[") else ".") + path
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling and where it is nested)"
        elif e["type"] in ("literal_error", "enum") and "expected" in e.get("ctx", {}):
            msg = f"{e['input']!r} is not allowed; allowed: {e['ctx']['expected']}"
        problems.append((path, msg))
    return problems


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
        raise SuiteError(str(path), pydantic_problems(err)) from None
