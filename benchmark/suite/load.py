"""Read and validate a suite file; every problem is reported with its YAML path."""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import ValidationError

from benchmark.errors import SuiteError, UserError
from benchmark.params import pydantic_problems
from benchmark.suite.safe_yaml import YamlRefused, decode, parse_yaml
from benchmark.suite.schema import Suite


def missing_suite(path: Path) -> UserError:
    """A path that is no file: say so plainly, and list the suites in the folder it names (or its own)."""
    folder = path if path.is_dir() else path.parent
    message = f"{path}: " + ("is a folder, not a suite file" if path.is_dir() else "no such suite file")
    names = sorted(p.name for p in folder.glob("*.y*ml")) if folder.is_dir() else []
    if names:
        close = [] if path.is_dir() else difflib.get_close_matches(path.name, names, n=1, cutoff=0.8)
        message += f"; suites in {folder}/: {', '.join(names)}" + (
            f"; did you mean {str(folder / close[0])!r}?" if close else ""
        )
    return UserError(message)


def read_yaml(path: Path) -> object:
    if not path.is_file():
        raise missing_suite(path)
    try:
        return parse_yaml(decode(path.read_bytes()))
    except YamlRefused as err:
        raise SuiteError(str(path), [("", str(err))]) from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or err})") from None


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise SuiteError(str(path), [("", "a suite is a YAML mapping with name, datasets and methods")])
    try:
        return Suite.model_validate(raw)
    except ValidationError as err:
        raise SuiteError(str(path), pydantic_problems(err, model=Suite)) from None
