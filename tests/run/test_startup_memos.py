"""What a run no longer pays before its first job: the engine's parsed fingerprint is remembered per
content (run/code_parts.py), and `--device auto` on a machine without a GPU driver needs no torch."""

from __future__ import annotations

import pytest

from benchmark.run import code_parts, executor_base


@pytest.fixture(autouse=True)
def forget_the_process_cache():
    yield
    code_parts.engine_fingerprint.cache_clear()  # no test's fingerprint outlives it


def fresh_engine_fingerprint() -> str:
    code_parts.engine_fingerprint.cache_clear()
    return code_parts.engine_fingerprint()


def test_the_engine_fingerprint_is_remembered_and_equals_the_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    parsed = fresh_engine_fingerprint()
    (memo,) = (tmp_path / "cache" / "code_fingerprints").iterdir()
    assert memo.read_text() == parsed
    monkeypatch.setattr(code_parts, "normalised", lambda source: 1 / 0)  # a parse now would fail
    assert fresh_engine_fingerprint() == parsed


def test_a_damaged_memo_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    parsed = fresh_engine_fingerprint()
    (memo,) = (tmp_path / "cache" / "code_fingerprints").iterdir()
    memo.write_text("not a fingerprint")
    assert fresh_engine_fingerprint() == parsed and memo.read_text() == parsed


def test_an_edited_engine_module_is_another_memo(tmp_path, monkeypatch):
    """The memo is keyed by the modules' bytes: an edit that changes the syntax tree changes the
    fingerprint, one that only adds a comment keeps it (under a new memo)."""
    root = tmp_path / "root"
    (root / "benchmark" / "engine").mkdir(parents=True)
    module = root / "benchmark" / "engine" / "step.py"
    module.write_text("def step(w, g):\n    return w - g\n")
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(code_parts, "ROOT", root)
    monkeypatch.setattr(code_parts, "ENGINE", ("benchmark/engine",))
    before = fresh_engine_fingerprint()
    module.write_text("def step(w, g):\n    return w - g  # a comment\n")
    assert fresh_engine_fingerprint() == before
    module.write_text("def step(w, g):\n    return w + g\n")
    assert fresh_engine_fingerprint() != before
    assert len(list((tmp_path / "cache" / "code_fingerprints").iterdir())) == 3


def test_auto_is_the_cpu_where_no_gpu_driver_is_installed(monkeypatch, tmp_path):
    monkeypatch.setattr(executor_base, "GPU_DRIVER_FILES", (str(tmp_path / "no-driver"),))
    assert executor_base.torch_device("auto") == "cpu"
