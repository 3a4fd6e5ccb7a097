"""Executors implement one protocol (run/executor_base.py) and `--executor NAME` finds them by name."""

from __future__ import annotations

from benchmark.cli import main
from benchmark.run.executor_base import EXECUTORS, ClusterOptions, Executor


def test_local_and_ray_are_registered_executors():
    assert {"local", "ray"} <= set(EXECUTORS.names())
    assert all(issubclass(EXECUTORS.get(name), Executor) for name in EXECUTORS.names())


def test_ray_resolves_the_workers_device_not_the_drivers():
    ray = EXECUTORS.get("ray")
    assert ray(ClusterOptions(gpus_per_job=0.5)).device("auto") == "cuda"
    assert ray().device("auto") == "cpu"


def test_an_unknown_executor_exits_2_listing_the_names(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ndatasets: [{name: synthetic}]\nmethods: [fedavg]\n")
    assert main(["run", str(path), "--executor", "rai", "--no-tracking", "--results-dir", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown executor 'rai'; allowed: local, ray" in err and "did you mean 'ray'" in err
    assert "Traceback" not in err
