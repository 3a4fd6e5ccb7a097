"""Staging datasets on Ray nodes that lack them (benchmark/run/staging.py), without Ray: the
object store is a dict, the nodes are this process (and forked ones for the lock)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import multiprocessing
import tarfile
import threading
import time
from pathlib import Path

import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.data.source import load_dataset
from benchmark.data.uri import fetch, parse_data_uri
from benchmark.errors import DataInvalid, UserError
from benchmark.run.staging import STAGED_MARK, Offer, make_offers, on_node, parse_uri_options, stage
from benchmark.suite.expand import expand
from benchmark.suite.schema import Suite

TRAIN, TEST = "+1 1:1 3:1\n-1 2:1\n+1 1:1\n", "-1 3:1\n+1 2:1\n"


def a9a_root(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a9a").write_text(TRAIN)
    (folder / "a9a.t").write_text(TEST)
    return folder


def a9a_job(root: Path | None = None, uri: str | None = None):
    dataset = {
        "name": "a9a",
        "split": {"kind": "iid"},
        **({"root": str(root)} if root else {}),
        **({"uri": uri} if uri else {}),
    }
    suite = Suite(
        name="staging",
        defaults={"rounds": 1, "num_clients": 2, "model": {"name": "logistic"}},
        datasets=[dataset],
        methods=["fedavg"],
    )
    return expand(suite)[0]


class ObjectStore:
    """What the executor passes as `put` (ray.put) and `download` (ray.get) to staging."""

    def __init__(self):
        self.objects: dict[int, bytes] = {}

    def put(self, payload: bytes) -> int:
        self.objects[len(self.objects)] = payload
        return len(self.objects) - 1

    def download(self, offer: Offer, dest: Path) -> None:
        if offer.uri:
            fetch(offer.uri, dest)
        else:
            dest.write_bytes(self.objects[offer.ref])


@pytest.fixture
def node_without_data(monkeypatch, tmp_path):
    """This process as a node: no data root, an empty cache of its own."""
    monkeypatch.delenv("FEDBENCH_DATA", raising=False)
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "node-cache"))
    return tmp_path / "node-cache"


def test_the_drivers_copy_is_shipped_once_and_staged_once_per_node(tmp_path, node_without_data):
    root = a9a_root(tmp_path / "driver-data")
    job, other = a9a_job(root), a9a_job(root)
    store = ObjectStore()
    offers = make_offers([job, other], {}, 1e6, store.put)
    offer = offers["a9a", str(root)]
    assert len(store.objects) == 1 and offer.ref == 0
    assert offer.sha256 == hashlib.sha256(store.objects[0]).hexdigest()  # the content's hash names the folder
    root.rename(tmp_path / "elsewhere")  # the node has no such folder

    staged_job, record = on_node(job, offer, store.download)
    folder = node_without_data / "staged" / offer.sha256[:24]
    assert staged_job.config.dataset.root == str(folder) and staged_job.id == job.id
    assert (folder / "a9a").read_text() == TRAIN and (folder / "a9a.t").read_text() == TEST
    assert record["from"] == f"the driver's {root / 'a9a'}" and record["verified"] and (folder / STAGED_MARK).is_file()
    src = load_dataset("a9a", {}, Path(staged_job.config.dataset.root))
    assert src.train_y.tolist() == [1, 0, 1] and src.test_y.tolist() == [0, 1]

    store.objects.clear()  # a second job on the node finds the staged copy: nothing is fetched
    assert on_node(other, offer, store.download) == (staged_job, None)


def test_a_node_with_the_dataset_runs_the_job_unchanged(tmp_path, monkeypatch):
    root = a9a_root(tmp_path / "data")
    job = a9a_job(root)
    assert on_node(job, Offer("a9a", refused="never"), lambda *a: pytest.fail("fetched")) == (job, None)


def test_a_node_without_the_dataset_and_nothing_shipped_names_both_fixes(tmp_path, node_without_data):
    root = a9a_root(tmp_path / "driver-data")
    job = a9a_job(root)
    offer = make_offers([job], {}, 0, ObjectStore().put)["a9a", str(root)]
    assert offer.refused == "it is 0.0 MB, over --ship-max-mb 0"
    (root / "a9a").unlink()  # now the node (this process) lacks it too
    with pytest.raises(UserError) as err:
        on_node(job, offer, ObjectStore().download)
    message = str(err.value)
    assert "dataset 'a9a'" in message and "over --ship-max-mb 0" in message
    assert "fedbench data prepare a9a" in message and "--data-uri a9a=URI" in message


def test_a_named_uri_wins_over_shipping_and_an_archive_is_unpacked(tmp_path, node_without_data):
    source = a9a_root(tmp_path / "src")
    archive = tmp_path / "a9a-both.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source / "a9a", "a9a")
        tar.add(source / "a9a.t", "a9a.t")
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    job = a9a_job(uri=f"file://{archive}#sha256={sha}")
    store = ObjectStore()
    offer = make_offers([job], {}, 1e6, store.put)["a9a", None]
    assert not store.objects and offer.sha256 == sha and offer.source == f"file://{archive}"
    staged_job, record = on_node(job, offer, store.download)
    folder = Path(staged_job.config.dataset.root)
    assert sorted(p.name for p in folder.iterdir()) == sorted([STAGED_MARK, "a9a", "a9a.t"])
    assert record["sha256"] == sha and record["bytes"] == archive.stat().st_size


def test_a_corrupt_download_is_refused_and_nothing_is_staged(tmp_path, node_without_data):
    file = tmp_path / "a9a.gz"
    file.write_bytes(b"not what was pinned")
    offer = Offer("a9a", f"file://{file}", "a9a.gz", "0" * 64, uri=parse_data_uri(f"file://{file}#sha256={'0' * 64}"))
    with pytest.raises(DataInvalid, match=r"corrupt or changed download \(sha256 [0-9a-f]{64}, expected 0{64}\)"):
        stage(offer, ObjectStore().download)
    assert sorted(p.name for p in (node_without_data / "staged").iterdir()) == [f"{offer.key}.lock"]


def test_an_http_uri_is_fetched_with_urllib(tmp_path):
    (tmp_path / "a9a.t").write_text(TEST)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        fetch(parse_data_uri(f"{base}/a9a.t"), tmp_path / "got")
        with pytest.raises(UserError, match=r"cannot fetch .*/missing: HTTPError"):
            fetch(parse_data_uri(f"{base}/missing"), tmp_path / "none")
        server.shutdown()
    assert (tmp_path / "got").read_text() == TEST


def _stage_slowly(cache: str, payload: bytes, log: str, results) -> None:
    import os

    os.environ["FEDBENCH_CACHE"] = cache

    def download(offer: Offer, dest: Path) -> None:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # long enough for the other process to reach the lock
        dest.write_bytes(payload)

    offer = Offer("a9a", "test", "a9a", hashlib.sha256(payload).hexdigest())
    folder, record = stage(offer, download)
    results.put((str(folder), record is not None))


def test_two_processes_staging_one_dataset_download_it_once(tmp_path):
    ctx = multiprocessing.get_context("fork")
    results, log = ctx.Queue(), tmp_path / "downloads.log"
    procs = [
        ctx.Process(target=_stage_slowly, args=(str(tmp_path / "cache"), TRAIN.encode(), str(log), results))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=30)
    assert [p.exitcode for p in procs] == [0, 0]
    got = sorted(results.get(timeout=5) for _ in procs)
    assert len(log.read_text().splitlines()) == 1  # one download; the other process waited, then reused it
    assert got[0][0] == got[1][0] and [staged for _, staged in got] == [False, True]
    assert (Path(got[0][0]) / "a9a").read_text() == TRAIN


@pytest.mark.parametrize(
    "uri, problem",
    [
        ("/abs/data.tar.gz", "is not a URI: give a scheme"),
        ("file://data.tar.gz", "needs an absolute path, file:///abs/path"),
        ("https:///x.tar.gz", "no host"),
        ("file:///d.tar.gz#md5=abc", "the fragment must be #sha256=<64 hex digits>"),
        ("nosuchfs://bucket/d.tar.gz", "unknown scheme nosuchfs://"),
    ],
)
def test_bad_uris_are_refused_saying_why(uri, problem):
    with pytest.raises(ValueError, match=problem):
        parse_data_uri(uri)


def test_other_schemes_need_fsspec(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"s3:// URIs are read through fsspec, which is not installed"):
        parse_data_uri("s3://bucket/cifar.tar.gz")


def test_uri_options_name_their_dataset_unless_the_suite_has_one():
    assert parse_uri_options(["file:///d/a9a.tgz"], ["a9a"])["a9a"].url == "file:///d/a9a.tgz"
    assert parse_uri_options(["a9a=https://h/a.tgz?x=1"], ["a9a", "femnist"])["a9a"].url == "https://h/a.tgz?x=1"
    with pytest.raises(UserError, match="the suite uses 2 datasets .*--data-uri NAME=URI"):
        parse_uri_options(["file:///d/a9a.tgz"], ["a9a", "femnist"])
    with pytest.raises(UserError, match="unknown dataset 'nope'"):
        parse_uri_options(["nope=file:///x"], ["a9a"])


def test_a_bad_uri_on_the_command_line_or_in_the_suite_exits_2(tmp_path, capsys):
    path = write_suite(tmp_path, tiny_suite())
    assert main(["run", str(path), "--executor", "ray", "--data-uri", "nosuchfs://x", "--no-tracking"]) == 2
    err = capsys.readouterr().err
    assert "--data-uri: 'nosuchfs://x': unknown scheme" in err and "Traceback" not in err
    assert main(["run", str(path), "--data-uri", "file:///x.tgz", "--no-tracking"]) == 2
    assert "need --executor ray" in capsys.readouterr().err
    suite = tiny_suite()
    suite["datasets"][0]["uri"] = "data.tar.gz"
    assert main(["plan", str(write_suite(tmp_path, suite))]) == 2
    err = capsys.readouterr().err
    assert "datasets[0].uri" in err and "is not a URI" in err
