"""A model's `params:` checked at `plan`, without importing torch or the model's module: the
factory's signature is read from its source (ast) and its simple annotations (int, float, str,
bool, their unions with None, Literal) become a strict pydantic model, so an unknown, missing or
mistyped parameter is a suite error at its YAML path rather than a failed job at run time. A
factory that takes **kwargs accepts any name; one defined where ast cannot see it is not checked."""

from __future__ import annotations

import ast
import functools
import importlib.util
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from benchmark.params import pydantic_problems

BUILT_BY_FEDBENCH = {"input_shape", "num_classes"}  # what build_model passes itself
SIMPLE = {"int": int, "float": float, "str": str, "bool": bool, "None": None, "Literal": Literal}


def model_param_problems(factory: str, params: dict, path: str) -> list[tuple[str, str]]:
    """(YAML path, message) for each of `params` the factory "module:function" would refuse."""
    model = _params_model(factory)
    if model is None:
        return []
    if not model.model_fields:
        return [(f"{path}.{key}", f"unknown model parameter {key!r}: this model takes none") for key in params]
    try:
        model.model_validate(params)
    except ValidationError as err:
        return pydantic_problems(err, path, model, noun="model parameter")
    return []


@functools.cache
def _params_model(factory: str) -> type[BaseModel] | None:
    module, function = factory.split(":")
    node = _function_node(module, function)
    if node is None or node.args.kwarg is not None:
        return None
    args = node.args.posonlyargs + node.args.args
    defaults = [...] * (len(args) - len(node.args.defaults)) + list(node.args.defaults)
    pairs = [*zip(args, defaults), *zip(node.args.kwonlyargs, node.args.kw_defaults)]
    fields = {a.arg: (_annotation(a.annotation), _default(d)) for a, d in pairs if a.arg not in BUILT_BY_FEDBENCH}
    return create_model("ModelParams", __config__=ConfigDict(extra="forbid", strict=True), **fields)


def _function_node(module: str, function: str) -> ast.FunctionDef | None:
    try:
        spec = importlib.util.find_spec(module)
        source = spec.loader.get_source(module) if spec and spec.loader else None
    except (ImportError, ValueError, AttributeError):
        return None
    if source is None:
        return None
    found = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function]
    return found[-1] if found else None


def _default(node):
    """The parameter's default as pydantic takes it: `...` (required) where there is none; the
    value where ast can read it; None (optional, not checked) where it is an expression."""
    if node is None or node is ...:
        return ...
    try:
        return Field(ast.literal_eval(node))
    except ValueError:
        return None


def _annotation(node) -> Any:
    """The annotation as a type when it is built from SIMPLE names; Any otherwise."""
    if node is None:
        return Any
    try:
        return eval(compile(ast.Expression(node), "<annotation>", "eval"), {"__builtins__": {}}, SIMPLE)  # noqa: S307
    except Exception:  # a type fedbench cannot see here (tuple[int, ...], a class): not checked
        return Any
