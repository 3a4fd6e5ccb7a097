import dataclasses
import warnings

import numpy as np
import pytest
import torch
from data_fixtures import write_libsvm

from benchmark.data import a9a
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing


def test_sparse_text_becomes_dense_with_01_labels(tmp_path):
    write_libsvm(tmp_path / "a9a", [(-1, {1: 1, 123: 1}), (1, {5: 0.5})])
    write_libsvm(tmp_path / "a9a.t", [(1, {2: 1})], gz=True)
    src = load_dataset("a9a", {}, tmp_path)  # numpy arrays: the FedAc engine runs on them without torch
    assert src.train_x.shape == (2, 123) and src.train_x.dtype == np.float32 and src.kind == "vector"
    assert src.train_x[0, 0] == 1 and src.train_x[0, 122] == 1 and src.train_x[1, 4] == 0.5
    assert src.train_x.sum() == 2.5
    assert src.train_y.tolist() == [0, 1] and src.test_y.tolist() == [1] and src.num_classes == 2


def test_index_beyond_features_names_the_line(tmp_path):
    write_libsvm(tmp_path / "a9a", [(1, {1: 1}), (1, {124: 1})])
    write_libsvm(tmp_path / "a9a.t", [(1, {1: 1})])
    with pytest.raises(DatasetMissing, match=r"a9a:2: .*124 outside 1..123"):
        load_dataset("a9a", {}, tmp_path)


def test_missing_test_file_names_both_forms(tmp_path):
    write_libsvm(tmp_path / "a9a", [(1, {1: 1})])
    with pytest.raises(DatasetMissing, match=f"{tmp_path}/a9a.t or {tmp_path}/a9a.t.gz"):
        load_dataset("a9a", {}, tmp_path)


@pytest.mark.parametrize("name", ["a9a", "femnist", "cifar10", "tiny_imagenet"])
def test_without_a_root_messages_say_root_and_what_it_stands_for(name):
    with pytest.raises(DatasetMissing) as err:
        load_dataset(name, {}, None)
    text = str(err.value)
    assert "<root>" in text and "(unset)" not in text
    assert text.endswith("<root> is $FEDBENCH_DATA or the dataset's 'root:' in the suite; neither is set")


def _write_a9a(root, first_label=-1):
    write_libsvm(root / "a9a", [(first_label, {1: 1, 123: 1}), (1, {5: 0.5})])
    write_libsvm(root / "a9a.t", [(1, {2: 1})], gz=True)


def test_a9a_is_parsed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    _write_a9a(tmp_path)
    first = load_dataset("a9a", {}, tmp_path)
    monkeypatch.setattr(a9a, "read_libsvm", lambda *a: pytest.fail("parsed again despite the cached copy"))
    again = load_dataset("a9a", {}, tmp_path)
    assert np.array_equal(again.train_x, first.train_x) and np.array_equal(again.test_y, first.test_y)
    assert again.train_y.dtype == np.int64 and again.train_x.dtype == np.float32
    tensors = again.tensors()  # what every torch consumer gets (engine.sources.load_source), memory shared
    assert tensors.train_x.dtype == torch.float32 and tensors.train_y.dtype == torch.int64
    assert tensors.fingerprint() == again.fingerprint() and np.shares_memory(tensors.train_x.numpy(), again.train_x)


def test_a9a_changed_on_disk_is_parsed_again(tmp_path):
    _write_a9a(tmp_path)
    assert load_dataset("a9a", {}, tmp_path).train_y.tolist() == [0, 1]
    (tmp_path / "a9a").write_text("+1 1:1 123:1 \n+1 5:0.5 \n+1 7:1 \n")  # another size: another key
    assert load_dataset("a9a", {}, tmp_path).train_y.tolist() == [1, 1, 1]


def test_corrupted_a9a_cache_is_rebuilt_with_a_warning(tmp_path, isolated_cache):
    _write_a9a(tmp_path)
    first = load_dataset("a9a", {}, tmp_path)
    (cached,) = (isolated_cache / "arrays").glob("a9a-*.npz")
    cached.write_bytes(cached.read_bytes()[: cached.stat().st_size // 2])  # a copy cut short (a full disk)
    with pytest.warns(UserWarning, match=f"ignoring unreadable array cache {cached}.*rebuilding it"):
        rebuilt = load_dataset("a9a", {}, tmp_path)
    assert np.array_equal(rebuilt.train_x, first.train_x) and np.array_equal(rebuilt.test_x, first.test_x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten copy reads back cleanly
        assert np.array_equal(load_dataset("a9a", {}, tmp_path).train_y, first.train_y)


def test_the_cached_copy_carries_the_fingerprint_of_its_own_arrays(tmp_path):
    _write_a9a(tmp_path)
    load_dataset("a9a", {}, tmp_path)
    again = load_dataset("a9a", {}, tmp_path)  # read back from the cache: the fingerprint stored with it
    assert again.stored_fingerprint
    computed = a9a.as_source({n: getattr(again, n) for n in ("train_x", "train_y", "test_x", "test_y")})
    assert computed.stored_fingerprint is None and computed.fingerprint() == again.fingerprint()
    moved = dataclasses.replace(again, train_x=again.train_x * 2)  # other arrays: hashed, never the stored one
    assert moved.stored_fingerprint is None and moved.fingerprint() != again.fingerprint()


def test_a_flipped_bit_inside_the_cached_arrays_is_caught_not_fingerprinted(tmp_path, isolated_cache):
    _write_a9a(tmp_path)
    first = load_dataset("a9a", {}, tmp_path)
    (cached,) = (isolated_cache / "arrays").glob("a9a-*.npz")
    data = bytearray(cached.read_bytes())
    at = data.index(b"train_x.npy") + 200  # inside the stored array's bytes (its header is 128)
    data[at] ^= 1
    cached.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="Bad CRC-32.*rebuilding it"):
        rebuilt = load_dataset("a9a", {}, tmp_path)
    assert rebuilt.fingerprint() == first.fingerprint() and np.array_equal(rebuilt.train_x, first.train_x)
