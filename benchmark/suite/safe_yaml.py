"""YAML for files and flags a user hands us: bounded before anything is built from it.

PyYAML's safe loader already refuses tags that build objects, but it happily expands aliases
(a 776-byte "billion laughs" document is 10^9 values once anything walks it), recurses once per
nesting level (RecursionError on a deep document) and lets a repeated key silently replace the
first. `parse_yaml` streams the document's events first — the event parser is not recursive —
and refuses it when its nesting, its size with every alias expanded, or a mapping's keys are
out of bounds; only then is it built.

Booleans are YAML 1.2's: only true and false (True, TRUE, ...). PyYAML follows YAML 1.1, where
`on`, `off`, `yes` and `no` are booleans too, so `select: {on: validation}` had a key True; here
such a word is the string a person wrote (docs/suites.md, "How suites read YAML").

A document is read with libyaml's parser where PyYAML has it (4x faster on the largest shipped suite,
95 kB: `plan` is timed by it); one it finds invalid is read again by PyYAML's own parser, whose
messages say more ("found character '\\t' that cannot start any token").
"""

from __future__ import annotations

import re

import yaml

from benchmark.params import format_loc

MAX_BYTES = 4 << 20  # the largest shipped suite is 16 kB
MAX_DEPTH = 64  # nesting of mappings/sequences; shipped suites reach 7
MAX_NODES = 200_000  # values with every alias expanded; the largest shipped suite holds 1,544


class YamlRefused(ValueError):
    """The document cannot be read safely or is not valid YAML; the message says where and why."""


def _where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _check_bounds(text: str, loader) -> None:
    """Nesting depth and the expanded size, in one pass over the events (each anchor's expanded
    size is known when its node ends, so an alias adds that size without being walked)."""
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = [(None, 0)]  # (anchor of the open node, its size so far)
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(stack) > MAX_DEPTH:
                raise YamlRefused(f"{_where(event.start_mark)}nested deeper than {MAX_DEPTH} levels")
            stack.append((event.anchor, 1))
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = stack.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, size = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                raise YamlRefused(f"{_where(event.start_mark)}alias *{event.anchor} refers to no complete anchor")
            anchor, size = None, sizes[event.anchor]
        else:
            continue
        if anchor is not None:
            sizes[anchor] = size
        parent_anchor, parent_size = stack[-1]
        stack[-1] = (parent_anchor, parent_size + size)
        if stack[-1][1] > MAX_NODES:
            raise YamlRefused(
                f"{_where(event.start_mark)}more than {MAX_NODES:,} values with its aliases expanded "
                "(an alias bomb, or a document far larger than a suite)"
            )


class _UniqueKeys:
    """Mixed into a safe loader: a key given twice in one mapping is refused (`<<` merges may still be overridden)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:
                    continue  # an unhashable key: the base class reports it
                if first is not key_node.start_mark:
                    raise YamlRefused(
                        f"{_where(key_node.start_mark)}key {key!r} given twice (first at line {first.line + 1})"
                    )
        return super().construct_mapping(node, deep)


class _UniqueKeyLoader(_UniqueKeys, yaml.SafeLoader):
    """PyYAML's own parser: slower, with the clearer messages."""


class _FastUniqueKeyLoader(_UniqueKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser (PyYAML's where it was built without it), PyYAML's constructor and resolver."""


BOOL_TAG = "tag:yaml.org,2002:bool"
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
for _loader in (_UniqueKeyLoader, _FastUniqueKeyLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeys.construct_mapping)
    _loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != BOOL_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _loader.add_implicit_resolver(BOOL_TAG, _YAML12_BOOL, list("tTfF"))


def parse_yaml(text: str) -> object:
    """The document's value; YamlRefused when it is not valid YAML or is out of bounds."""
    if len(text) > MAX_BYTES:
        raise YamlRefused(f"{len(text):,} characters, more than the {MAX_BYTES:,} a suite may have")
    try:
        return _parsed(text, _FastUniqueKeyLoader)
    except yaml.YAMLError:
        pass
    try:
        return _parsed(text, _UniqueKeyLoader)  # for its message (were the parsers to disagree: its value)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise YamlRefused(f"not valid YAML: {_where(mark)}{getattr(err, 'problem', None) or err}") from None


def _parsed(text: str, loader) -> object:
    _check_bounds(text, loader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass


def scalar_lines(text: str) -> dict[str, int]:
    """The line of every scalar value of a valid document, by its YAML path as errors name it
    (`methods[1].server.lam`)."""
    found: dict[str, int] = {}
    stack = [((), yaml.compose(text, Loader=_FastUniqueKeyLoader))]
    while stack:  # iterative: a document may nest up to MAX_DEPTH
        path, node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            found[format_loc(path)] = node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            stack += [((*path, i), item) for i, item in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            stack += [((*path, k.value), v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    return found


def decode(data: bytes) -> str:
    """UTF-8 text (a leading byte-order mark dropped); YamlRefused naming the first bad byte's line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise YamlRefused(
            f"not UTF-8 text: byte 0x{data[err.start]:02x} at line {line} (offset {err.start}); save the file as UTF-8"
        ) from None
