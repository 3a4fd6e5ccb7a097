"""A part's code fingerprint is remembered on disk with the files it was read from (run/code_parts.py):
a later run parses nothing while those files are unchanged, by (size, mtime) or else by their bytes,
and parses again when one of them changed, however quickly after the memo it was edited."""

from __future__ import annotations

import os
import time

import pytest

from benchmark.run import code_parts

RULE = """\
SCALE = 1.0


def helper(x):
    return x * SCALE


def rule(x):
    return helper(x) + 1
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module on the path, a cache of its own, and no fingerprint left in this process."""
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "memo_rule.py"
    path.write_text(RULE)
    yield path
    forget()


def forget() -> None:
    code_parts.definition_fingerprint.cache_clear()
    code_parts._module.cache_clear()
    code_parts._module_path.cache_clear()


def fingerprint() -> str:
    forget()
    return code_parts.definition_fingerprint("memo_rule", "rule")


def set_old_mtime(path, seconds_ago: float) -> None:
    then = time.time() - seconds_ago
    os.utime(path, (then, then))


def no_parsing(monkeypatch) -> None:
    monkeypatch.setattr(code_parts.ModuleCode, "__init__", lambda *a: 1 / 0)  # a parse now would fail


def test_a_remembered_fingerprint_equals_the_parse_and_parses_nothing(plugin, tmp_path, monkeypatch):
    set_old_mtime(plugin, 100)
    parsed = fingerprint()
    (memo,) = (tmp_path / "cache" / "code_fingerprints").glob("definition-*.json")
    with monkeypatch.context() as m:
        no_parsing(m)
        assert fingerprint() == parsed
    memo.write_text("{damaged")  # a damaged memo is parsed again, and rewritten
    assert fingerprint() == parsed and fingerprint() == parsed


def test_a_file_rewritten_as_it_was_keeps_its_memo_and_an_edit_is_parsed(plugin, monkeypatch):
    set_old_mtime(plugin, 100)
    parsed = fingerprint()
    plugin.write_text(RULE)  # a checkout that wrote it again: new mtime, same bytes
    set_old_mtime(plugin, 50)
    with monkeypatch.context() as m:
        no_parsing(m)
        assert fingerprint() == parsed
    plugin.write_text(RULE.replace("SCALE = 1.0", "SCALE = 0.5"))  # a constant the rule's helper reads
    assert fingerprint() != parsed


def test_an_edit_within_the_mtime_tick_of_the_memo_is_found(plugin):
    """Same size, same mtime: a file remembered just after it was written is checked by its bytes."""
    parsed = fingerprint()  # the file was written an instant ago: remembered as racy
    stat = plugin.stat()
    plugin.write_text(RULE.replace("SCALE = 1.0", "SCALE = 0.5"))
    os.utime(plugin, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert plugin.stat().st_size == stat.st_size
    assert fingerprint() != parsed
