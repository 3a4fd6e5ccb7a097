"""Suites read YAML as a person writes it: `on`, `off`, `yes`, `no`, `y`, `n` are those words (YAML
1.2), only true and false are booleans, and a word where a boolean is meant (or a boolean where a
string is) exits 2 naming the line and the fix."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from benchmark.cli import main
from benchmark.suite.expand import load_jobs
from benchmark.suite.safe_yaml import parse_yaml

SUITE = """\
name: words
defaults:
  rounds: 2
  num_clients: 4
  participation: {{rate: 1.0}}
  local: {{epochs: 1, batch_size: 8, lr: 0.05}}
  model: {{name: logistic}}
{extra}
datasets:
  - name: synthetic
    params: {{num_users: 4, dim: 5, num_classes: 3, max_samples: 40}}
    split: {{kind: natural}}
methods: [fedavg]
"""


def suite_file(tmp_path, extra: str, name: str = "words.yaml"):
    path = tmp_path / name
    path.write_text(SUITE.format(extra=textwrap.indent(textwrap.dedent(extra).strip(), "  ")))
    return path


def test_on_is_the_key_a_person_wrote(tmp_path, capsys):
    path = suite_file(tmp_path, "select: {on: validation, holdout: 0.1}")
    assert main(["plan", str(path)]) == 0, capsys.readouterr().err
    _, jobs = load_jobs(path)
    assert {(j.config.select.on, j.config.select.holdout) for j in jobs} == {("validation", 0.1)}


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "y", "n", "On", "OFF", "Yes", "NO"])
def test_yaml_1_1_boolean_words_are_strings_as_keys_and_values(word):
    assert parse_yaml(f"{word}: {word}\nlist: [{word}]\n") == {word: word, "list": [word]}


@pytest.mark.parametrize("text, value", [("true", True), ("True", True), ("TRUE", True), ("false", False)])
def test_true_and_false_are_the_booleans(text, value):
    assert parse_yaml(f"x: {text}") == {"x": value}


def test_pyyaml_safe_load_elsewhere_is_left_as_it_was():
    assert yaml.safe_load("on: yes") == {True: True}


@pytest.mark.parametrize(
    "extra, where, expected",
    [
        ("compile: yes", "defaults.compile: line 8:", "'yes' is a string: only true and false are booleans"),
        ("compile: off", "defaults.compile: line 8:", "'off' is a string"),
        (
            "select: {on: true}",
            "defaults.select.on: line 8:",
            "true is a boolean (YAML 1.2: true and false are); quote it for the word; allowed:",
        ),
    ],
)
def test_a_word_where_a_boolean_is_meant_names_its_line(tmp_path, capsys, extra, where, expected):
    path = suite_file(tmp_path, extra)
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{where} {expected}" in " ".join(err.split())


def test_a_method_parameter_word_names_its_line(tmp_path, capsys):
    path = suite_file(tmp_path, "")
    text = path.read_text().replace(
        "methods: [fedavg]",
        "methods:\n  - {label: mine, server: {rule: average}, client: [{term: prox, mu: 0.01, halved: no}]}",
    )
    path.write_text(text)
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    line = (
        text.splitlines().index(
            "  - {label: mine, server: {rule: average}, client: [{term: prox, mu: 0.01, halved: no}]}"
        )
        + 1
    )
    assert f"methods[0].client[0].halved: line {line}: 'no' is a string" in err


def test_an_extending_suite_names_no_line_it_does_not_hold(tmp_path, capsys):
    suite_file(tmp_path, "", name="parent.yaml")
    child = tmp_path / "child.yaml"
    child.write_text("name: child\nextends: parent.yaml\ndefaults:\n  compile: on\n")
    assert main(["plan", str(child)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "defaults.compile: line 4: 'on' is a string" not in err  # merged: paths are the merge's
    assert "defaults.compile: 'on' is a string" in err


def test_a_set_value_word_is_refused_with_the_fix(tmp_path, capsys):
    path = suite_file(tmp_path, "")
    assert main(["plan", str(path), "--set", "compile=on"]) == 2
    assert "--set compile: 'on' is a string" in " ".join(capsys.readouterr().err.split())
