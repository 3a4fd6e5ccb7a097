"""Property-based tests: generated suite documents, command-line overrides and LEAF data files
fed to `plan` (and `run`) end either with exit 0 or with a clean exit 2 and a message: never an
exception out of main() (a traceback), never a hang, never a file under results/ from input
that was refused. Derandomized (the same examples on every machine) with bounded examples."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path

import yaml
from fedtest import tiny_suite
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from benchmark.cli import main

FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)


def examples(n: int) -> settings:
    return settings(FUZZ, max_examples=n)


SECONDS = 10  # one command on a generated input; the alias bomb took minutes before the bounded loader

# values a user might write anywhere: the types YAML gives, with the edges of each
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
# where in a suite: real setting paths (so values reach the validators) and made-up ones; never
# `plugins:`, which imports code
PATHS = [
    "name", "defaults.rounds", "defaults.seeds", "defaults.num_clients", "defaults.local.lr", "defaults.local.epochs",
    "defaults.local.steps", "defaults.local.batch_size", "defaults.participation.rate", "defaults.participation.mode",
    "defaults.metrics", "defaults.model.name", "defaults.model.params", "datasets", "datasets.0.params.num_users",
    "datasets.0.split", "datasets.0.split.kind", "datasets.0.split.alpha", "datasets.0.num_clients", "methods",
    "methods.0", "grid", "defaults.eval_every", "defaults", "defaults.execution", "datasets.0.name",
]  # fmt: skip
paths = st.sampled_from(PATHS) | st.text(alphabet="abcdefghijklmnopqrstuvwxyz._0", min_size=1, max_size=12).filter(
    lambda p: "plugins" not in p
)


def set_path(doc, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        if isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc.setdefault(part, {}) if isinstance(doc.get(part, {}), (dict, list)) else doc
        if not isinstance(doc, (dict, list)):
            return
    if isinstance(doc, dict):
        doc[last] = value
    elif last.isdigit() and int(last) < len(doc):
        doc[int(last)] = value


def fedbench(*args: str) -> tuple[int, str]:
    """main(args) in this process: its exit code and what it printed to stderr; an exception fails the test."""
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(args))
    assert time.perf_counter() - start < SECONDS, args
    event(f"{args[0]}: exit {code}")  # the outcome mix: pytest --hypothesis-show-statistics
    return code, err.getvalue()


def assert_clean(code: int, err: str) -> None:
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err
    if code == 2:
        assert "error" in err.lower() and len(err.strip()) > 10, err


@examples(40)
@given(edits=st.lists(st.tuples(paths, values), min_size=1, max_size=4))
def test_generated_suite_documents_plan_cleanly_and_refused_runs_write_nothing(tmp_path_factory, edits):
    tmp = tmp_path_factory.mktemp("doc")
    doc = tiny_suite()
    for path, value in edits:
        set_path(doc, path, value)
    suite = tmp / "suite.yaml"
    suite.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    code, err = fedbench("plan", str(suite))
    assert_clean(code, err)
    if code == 2:  # refused by plan: run refuses it too, before writing anything
        results = tmp / "results"
        assert fedbench("run", str(suite), "--no-tracking", "--results-dir", str(results))[0] == 2
        assert not results.exists()


@examples(40)
@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_arbitrary_suite_text_plans_cleanly(tmp_path_factory, text):
    suite = tmp_path_factory.mktemp("text") / "suite.yaml"
    suite.write_bytes(text.encode("utf-8", "surrogatepass") if text.isascii() else text.encode("latin-1", "replace"))
    assert_clean(*fedbench("plan", str(suite)))


option_values = st.text(max_size=20) | values.map(lambda v: yaml.safe_dump(v, default_flow_style=True).strip())


@examples(40)
@given(
    sets=st.lists(st.tuples(paths.map(lambda p: p.removeprefix("defaults.")), option_values), max_size=3),
    seeds=st.none() | st.text(alphabet="0123456789,- x", max_size=12),
    rounds=st.none() | st.integers(min_value=-5, max_value=2**40).map(str) | st.text(max_size=4),
)
def test_generated_overrides_plan_cleanly(tmp_path_factory, sets, seeds, rounds):
    suite = tmp_path_factory.mktemp("over") / "suite.yaml"
    suite.write_text(yaml.safe_dump(tiny_suite()))
    args = ["plan", str(suite)] + [a for p, v in sets for a in ("--set", f"{p}={v}")]
    args += ["--seeds", seeds] if seeds is not None else []
    args += ["--rounds", rounds] if rounds is not None else []
    assert_clean(*fedbench(*args))


pixel_rows = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=3).map(
    lambda row: (row * 262)[:784] if row else []
)
labels = st.one_of(
    st.integers(min_value=-3, max_value=70), st.floats(allow_nan=False, width=32), st.booleans(), st.text(max_size=2)
)
users = st.dictionaries(
    st.sampled_from(["u0", "u1"]),
    st.fixed_dictionaries(
        {"x": st.lists(pixel_rows, min_size=0, max_size=3), "y": st.lists(labels, min_size=0, max_size=3)}
    ),
    min_size=1,
    max_size=2,
)


@examples(25)
@given(train=users, test=users)
def test_generated_leaf_shards_load_or_are_named(tmp_path_factory, train, test):
    tmp = tmp_path_factory.mktemp("leaf")
    for split, shard in (("train", train), ("test", test)):
        (tmp / "femnist" / "data" / split).mkdir(parents=True)
        blob = {"users": list(shard), "user_data": shard}
        (tmp / "femnist" / "data" / split / "all_data_0.json").write_text(json.dumps(blob))
    suite = tmp / "suite.yaml"
    doc = {
        "name": "leaf",
        "defaults": {
            "rounds": 1,
            "num_clients": 1,
            "local": {"steps": 1, "batch_size": 2},
            "model": {"name": "femnist_cnn"},
        },
        "datasets": [{"name": "femnist", "root": str(tmp), "split": {"kind": "natural"}}],
        "methods": ["fedavg"],
    }
    suite.write_text(json.dumps(doc))
    code, err = fedbench("plan", str(suite), "--splits")
    assert_clean(code, err)
    if code == 2:
        assert "femnist" in err or str(Path(tmp)) in err, err
