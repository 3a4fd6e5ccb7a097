"""Where in the YAML files a problem of an extending suite was written: `methods[4].server.lam` of
the merged suite (the parent's four methods first) is the child's `methods[0].server.lam`, at a
line of the child's file. Read only on the error path (the files are composed again)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from benchmark.suite.safe_yaml import decode

ITEM = re.compile(r"^(methods|datasets)\[(\d+)\](.*)$")
SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def written_at(where: str, origins: dict) -> str:
    """`where` (a merged suite's YAML path) as `methods[0].server.lam (mine.yaml, line 7)`; unchanged
    where it names no method or dataset entry. A dataset entry merged over its parent's is placed in
    the first file (the child's first) that writes the path's deepest key."""
    match = ITEM.match(where or "")
    if not match or int(match[2]) >= len(origins.get(match[1], [])):
        return where
    key, rest = match[1], match[3]
    candidates = origins[key][int(match[2])]
    placed = [(file, index, *_line(file, key, index, rest)) for file, index in candidates]
    file, index, line, _ = next((p for p in placed if p[3]), placed[0])
    return f"{key}[{index}]{rest} ({file}" + (f", line {line})" if line else ")")


def _line(file: str, key: str, index: int, rest: str) -> tuple[int | None, bool]:
    """The line of the deepest node of `key[index]rest` in `file`, and whether all of it is there."""
    try:
        node = yaml.compose(decode(Path(file).read_bytes()), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError, ValueError):
        return None, False
    path = [key, index, *(name if name else int(i) for name, i in SEGMENT.findall(rest))]
    line, found = None, True
    for step in path:
        child = _child(node, step)
        if child is None:
            found = False
            break
        node, line = child, child.start_mark.line + 1
    return line, found


def _child(node, step):
    if isinstance(node, yaml.MappingNode):
        return next((value for name, value in node.value if name.value == str(step)), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
        return node.value[step]
    return None
