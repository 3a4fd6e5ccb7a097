"""`fedbench run --executor ray --ray-address` on a real two-node cluster started on this machine
(separate temp, working and scratch dirs; fedbench not on the nodes' PYTHONPATH): the local
executor's numbers, results only in the driver's folder, live MLflow, a node killed mid-job and
its job finished on the other node from its last checkpoint, a node without the data refused."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch
from fedtest import measured

from benchmark.run.executor import run_jobs
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

pytest.importorskip("ray")
from local_cluster import LocalCluster, clean_env

REPO = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"job (\w+) attempt \d+ runs on node (\S+) \w+ pid (\d+)")

SUITE = """
name: cluster
defaults:
  rounds: {rounds}
  eval_every: {eval_every}
  checkpoint_every: {checkpoint_every}
  num_clients: 8
  participation: {{rate: 0.5}}
  local: {{epochs: 1, batch_size: 10, lr: 0.05}}
  model: {{name: logistic}}
datasets:
  - name: {dataset}
    params: {params}
    split: {{kind: {split}}}
methods: [fedavg, fedacg]
"""
SYNTHETIC = "{num_users: 8, dim: 10, num_classes: 3, max_samples: 80}"


@pytest.fixture(scope="module")
def cluster():
    base = Path(tempfile.mkdtemp(prefix="fbray-"))  # short: Ray's socket paths must stay under 108 bytes
    try:
        cluster = LocalCluster(base, workers=1)  # stops what it started if it fails to start
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def write_suite(
    folder: Path, dataset: str = "synthetic", params: str = SYNTHETIC, split: str = "natural", **defaults
) -> Path:
    settings = {"rounds": 12, "eval_every": 1, "checkpoint_every": 4, **defaults}
    path = folder / "suite.yaml"
    path.write_text(SUITE.format(dataset=dataset, params=params, split=split, **settings))
    return path


def driver(cluster: LocalCluster, suite: Path, *extra: str, data: Path | None = None) -> subprocess.Popen:
    """`fedbench run` as a user runs it on the cluster, from its own folder, output piped;
    `data`: the driver's $FEDBENCH_DATA (default: none)."""
    cmd = [
        sys.executable,
        "-m",
        "benchmark.cli",
        "run",
        str(suite),
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        "--results-dir",
        "results",
        "--threads",
        "1",
        *extra,
    ]
    env = clean_env(PYTHONPATH=str(REPO), **({"FEDBENCH_DATA": str(data)} if data else {}))
    return subprocess.Popen(cmd, cwd=suite.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def local_reference(suite: Path, root: Path) -> dict[str, dict]:
    _, jobs = load_jobs(suite)
    return {job.id: summary for job, summary in zip(jobs, run_jobs(jobs, "cluster", Store(root)).values())}


def same_results(ours: JobDir, local: JobDir) -> None:
    drop = ("wall_time_s", "ray", "threads", "environment")  # where it ran
    assert {k: v for k, v in json.loads(ours.summary.read_text()).items() if k not in drop} == {
        k: v for k, v in json.loads(local.summary.read_text()).items() if k not in drop
    }
    assert measured(ours.read_metrics()) == measured(local.read_metrics())
    theirs = torch.load(local.model, weights_only=True)
    for name, tensor in torch.load(ours.model, weights_only=True).items():
        assert torch.equal(tensor, theirs[name]), name
    assert not ours.checkpoint.exists()


def no_results_on_nodes(cluster: LocalCluster) -> None:
    for node in cluster.nodes:
        assert not list((node.dir / "wd").iterdir()), f"{node.name} wrote into its working dir"
        assert not list((node.dir / "tmp").glob("fedbench-*")), f"{node.name} kept a job's scratch folder"


@pytest.mark.slow
def test_two_nodes_give_the_local_numbers_live_and_only_in_the_driver_folder(cluster, tmp_path):
    suite = write_suite(tmp_path)
    proc = driver(cluster, suite, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    out, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, out
    started = {m.group(1): m.group(2) for m in STARTED.finditer(out)}
    assert len(set(started.values())) == 2 and "127.0.0.2" in started.values(), out  # one job per node
    assert re.search(r"seed 0: round \d+/12, acc [\d.]+% \(ema [\d.]+%\)", out), out  # log lines, no TTY

    local = local_reference(suite, tmp_path / "local")
    assert len(local) == 2
    for job_id, summary in local.items():
        assert summary.status == "finished"
        ours = JobDir(Store(tmp_path / "results"), job_id)
        same_results(ours, JobDir(Store(tmp_path / "local"), job_id))
        attempts = json.loads(ours.summary.read_text())["ray"]["attempts"]
        assert [a["where"].split()[1] for a in attempts] == [started[job_id]]
        # the workers ran the driver's code, shipped by Ray: not an installed copy, not this checkout
        assert "runtime_resources" in attempts[0]["code"] and not attempts[0]["code"].startswith(str(REPO))
    no_results_on_nodes(cluster)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("cluster").experiment_id], "tags.`fedbench.kind` = 'job'")
    assert sorted(r.data.tags["fedbench.job_id"] for r in runs) == sorted(local)
    for run in runs:
        history = client.get_metric_history(run.info.run_id, "test_acc")
        assert [m.step for m in history] == list(range(1, 13))
        assert run.info.status == "FINISHED"
        stamps = [m.timestamp for m in history]  # when each round was measured on its node, not one replay time
        assert stamps == sorted(stamps) and len(set(stamps)) > 1 and stamps[-1] <= run.info.end_time


@pytest.mark.slow
def test_nodes_with_an_empty_data_root_stage_the_drivers_copy_and_give_the_local_numbers(cluster, tmp_path, data_root):
    suite = write_suite(tmp_path, dataset="a9a", params="{}", split="iid", rounds=3, checkpoint_every=3)
    proc = driver(cluster, suite, "--no-tracking", data=data_root)
    out, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, out
    assert re.search(r"dataset a9a: the driver's \S+a9a.gz \(0.\d MB\) is in Ray's object store", out), out
    staged = re.findall(r"node (\S+) \w+ pid \d+ staged dataset a9a \(0.\d MB, sha256 \w+\) from the driver's", out)
    assert "127.0.0.2" in staged and len(staged) == len(set(staged)), out  # the worker node, once

    local = local_reference(suite, tmp_path / "local")  # this process reads $FEDBENCH_DATA itself
    for job_id in local:
        same_results(JobDir(Store(tmp_path / "results"), job_id), JobDir(Store(tmp_path / "local"), job_id))
    for node in cluster.nodes:  # staged into each node's own cache, the data roots left empty
        assert not list((node.dir / "data").iterdir())
    worker_copy = next((cluster.nodes[1].dir / "cache" / "staged").glob("*/a9a.gz"))
    assert worker_copy.read_bytes() == (data_root / "a9a.gz").read_bytes()


@pytest.mark.slow
def test_nodes_fetch_a_dataset_from_the_uri_named_on_the_command_line(cluster, tmp_path, data_root):
    archive = tmp_path / "a9a-both.tar"  # the driver has no data: only the URI can serve it
    with tarfile.open(archive, "w") as tar:
        for name in ("a9a.gz", "a9a.t.gz"):
            tar.add(data_root / name, name)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    suite = write_suite(tmp_path, dataset="a9a", params="{}", split="iid", rounds=2, checkpoint_every=2)
    proc = driver(cluster, suite, "--no-tracking", "--data-uri", f"a9a=file://{archive}#sha256={sha}")
    out, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, out
    assert (
        f"staged dataset a9a ({archive.stat().st_size / 2**20:.1f} MB, sha256 {sha[:16]}) from file://{archive}" in out
    )
    local = local_reference(suite, tmp_path / "local")
    for job_id in local:
        same_results(JobDir(Store(tmp_path / "results"), job_id), JobDir(Store(tmp_path / "local"), job_id))


@pytest.mark.slow
def test_a_node_without_the_dataset_stops_the_suite_with_a_clear_error(cluster, tmp_path):
    suite = write_suite(tmp_path, dataset="a9a", params="{}", split="iid")
    proc = driver(cluster, suite, "--no-tracking")  # the driver has no copy to ship either
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    assert re.search(r"error: on node \S+ \w+ pid \d+: dataset 'a9a'", out), out
    assert "the driver did not ship it: the driver has no copy either" in out
    assert "fedbench data prepare a9a" in out and "--data-uri a9a=URI" in out


@pytest.mark.slow
def test_a_node_killed_mid_job_and_the_job_finished_on_the_other_from_its_checkpoint(cluster, tmp_path):
    """Last in this file: the worker node does not come back."""
    suite = write_suite(tmp_path, rounds=400, eval_every=10, checkpoint_every=20)
    proc = driver(cluster, suite, "--no-tracking")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        victim = None  # the job on the worker node: wait for it to start, then for its first checkpoint
        deadline = time.time() + 300
        while victim is None or not JobDir(Store(tmp_path / "results"), victim).checkpoint.exists():
            assert time.time() < deadline and proc.poll() is None, "".join(lines)
            for m in STARTED.finditer("".join(lines)):
                if cluster.nodes[1].owns(int(m.group(3))):
                    victim = m.group(1)
            time.sleep(0.05)
        cluster.nodes[1].kill()
        proc.wait(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=10)
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert re.search(rf"job {victim}: NodeDiedError .* resubmitted from its last checkpoint, attempt 2/3", out), out

    ours = JobDir(Store(tmp_path / "results"), victim)
    attempts = json.loads(ours.summary.read_text())["ray"]["attempts"]
    first, second = [a["where"].split()[1] for a in attempts]
    assert first == "127.0.0.2" and second != first  # the worker node, then the head
    local_reference(suite, tmp_path / "local")
    same_results(ours, JobDir(Store(tmp_path / "local"), victim))  # resumed, yet the same numbers
