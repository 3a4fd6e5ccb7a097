"""Suite files written to hurt: each is refused quickly with exit 2 and a message that says where and why."""

from __future__ import annotations

import time

import pytest
import yaml
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.suite.expand import load_jobs
from benchmark.suite.safe_yaml import MAX_DEPTH, MAX_NODES, YamlRefused, parse_yaml

# "billion laughs": 9 levels of 9 aliases = 9^9 strings once expanded, 776 bytes on disk
BOMB = "name: x\na: &a [" + ",".join(['"lol"'] * 9) + "]\n"
BOMB += "".join(f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n" for a, b in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize(
    "text, expected",
    [
        (BOMB, f"more than {MAX_NODES:,} values with its aliases expanded"),
        ("name: x\ndatasets: " + "[" * 50_000 + "]" * 50_000, f"nested deeper than {MAX_DEPTH} levels"),
        ("name: x\nmethods: [fedavg]\nname: y\n", "line 3, column 1: key 'name' given twice (first at line 1)"),
        (b"name: caf\xe9\n", "not UTF-8 text: byte 0xe9 at line 1"),
        ("name: !!python/object/apply:os.system [ls]\n", "could not determine a constructor"),
        ("1: x\n", "Keys should be strings"),
        ("- a\n- b\n", "a suite is a YAML mapping"),
        ("name: x\n\tdatasets: []\n", "not valid YAML: line 2"),
    ],
)
def test_hostile_suite_files_exit_2_quickly_with_the_reason(tmp_path, capsys, text, expected):
    path = tmp_path / "hostile.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    start = time.perf_counter()
    assert main(["plan", str(path)]) == 2
    assert time.perf_counter() - start < 5  # the bomb took minutes and the deep file a RecursionError
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in err
    assert expected in " ".join(err.split()), err


def test_aliases_and_merge_keys_within_the_budget_still_work():
    assert parse_yaml("base: &b {lr: 0.1, epochs: 2}\nother:\n  <<: *b\n  lr: 0.2\n") == {
        "base": {"lr": 0.1, "epochs": 2},
        "other": {"lr": 0.2, "epochs": 2},
    }
    assert parse_yaml("\ufeffa: 1") == {"a": 1}  # str input: the BOM is whitespace to YAML
    with pytest.raises(YamlRefused, match="key 'a' given twice"):
        parse_yaml("m:\n  a: 1\n  a: 2\n")


@pytest.mark.parametrize(
    "defaults, path, message",
    [
        ({"rounds": True}, "defaults.rounds", "valid integer"),  # ran 1 round
        ({"local": {"lr": float("inf")}}, "defaults.local.lr", "finite number"),
        ({"local": {"lr": float("nan")}}, "defaults.local.lr", "finite number"),
        ({"seeds": [2**70]}, "defaults.seeds[0]", "less than 4294967296"),
        ({"seeds": [-1]}, "defaults.seeds[0]", "greater than or equal to 0"),
        ({"num_clients": "5"}, "defaults.num_clients", "valid integer"),
    ],
)
def test_strict_types_in_suite_settings(tmp_path, defaults, path, message):
    suite = tiny_suite()
    suite["defaults"].update(defaults)
    with pytest.raises(Exception) as err:
        load_jobs(write_suite(tmp_path, suite))
    assert any(p.endswith(path) and message in m for p, m in err.value.problems), err.value.problems


def test_method_parameters_are_strict_too(tmp_path):
    suite = tiny_suite(methods=[{"preset": "fedprox", "client": [{"term": "prox", "mu": float("inf")}]}])
    path = write_suite(tmp_path, suite)
    assert "inf" in path.read_text() and yaml.safe_load(path.read_text())["methods"][0]["client"][0]["mu"] > 1e308
    with pytest.raises(Exception, match="finite number"):
        load_jobs(path)


def test_an_invalid_document_is_named_by_pyyamls_own_parser():
    """libyaml reads suites (4x faster); a document it refuses is read again by PyYAML's parser, whose
    message names the character and where the construct began."""
    with pytest.raises(YamlRefused, match=r"line 1, column 1: found character '\\t' that cannot start any token"):
        parse_yaml("\tname: x\n")
    with pytest.raises(YamlRefused, match="line 1, column 7: expected the node content, but found '<stream end>'"):
        parse_yaml("a: [1,")
