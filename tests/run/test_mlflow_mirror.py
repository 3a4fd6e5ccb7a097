"""The mirror's naming rules, by hand: metric names in MLflow's alphabet, params without Python
reprs, run names that start with the method."""

from __future__ import annotations

from fedtest import tiny_suite

from benchmark.run.mlflow_mirror import job_run_name, metric_key
from benchmark.suite.dotted import flatten
from benchmark.suite.expand import expand
from benchmark.suite.overrides import Overrides
from benchmark.suite.schema import Suite


def test_metric_names_follow_one_rule():
    assert metric_key("acc@60") == "acc_at_60" and metric_key("rounds_to@70.5") == "rounds_to_at_70.5"
    assert metric_key("bytes_to@60 (EMA)") == "bytes_to_at_60 _EMA_"  # space kept, brackets replaced
    assert metric_key("synthetic/FedACG[lam=0.9]/final_ema_acc") == "synthetic/FedACG_lam_0.9_/final_ema_acc"


def test_params_are_dotted_named_and_plain():
    config = {"metrics": ["acc@30", "rounds_to@60"], "method": {"client": [{"term": "prox", "mu": 0.01}]}, "x": None}
    assert flatten(config) == {
        "metrics": "acc@30, rounds_to@60",
        "method.client.prox.term": "prox",
        "method.client.prox.mu": "0.01",
    }


def test_run_names_start_with_the_method_and_its_settings():
    suite = tiny_suite(methods=[{"preset": "fedacg", "grid": {"server.lam": [0.9]}}])
    [job] = expand(Suite(**suite), overrides=Overrides.parse(("local.lr=0.1",), "3"))
    assert job_run_name(job) == f"FedACG lam=0.9 local.lr=0.1 · synthetic · s3 · {job.id[:6]}"
