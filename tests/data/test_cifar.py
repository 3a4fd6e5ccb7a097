import os
import pickle
import shutil

import pytest
import torch
from data_fixtures import tar_gz, write_cifar_pickles, write_image_folder

from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing, UserError

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def test_cifar10_pickle_layout(tmp_path):
    labels = write_cifar_pickles(tmp_path)
    src = load_dataset("cifar10", {}, tmp_path)
    assert src.train_x.dtype == torch.uint8 and src.train_x.shape == (20, 3, 32, 32)
    assert src.test_x.shape == (4, 3, 32, 32) and src.kind == "image" and src.num_classes == 10
    assert src.train_y.tolist() == labels.tolist()
    assert len(src.mean) == 3 and all(0 < s < 1 for s in src.std)
    # pixels are the archive's rows reshaped to CHW
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_1", "rb") as f:
        first = pickle.load(f, encoding="bytes")[b"data"][0]
    assert torch.equal(src.train_x[0], torch.from_numpy(first.reshape(3, 32, 32)))


def test_cifar100_fine_labels_from_official_archive(tmp_path):
    data = tmp_path / "data"
    labels = write_cifar_pickles(tmp_path / "staging", cifar100=True)
    data.mkdir()
    tar_gz(tmp_path / "staging" / "cifar-100-python", data / "cifar-100-python.tar.gz")
    src = load_dataset("cifar100", {"format": "pickle"}, data)
    assert src.num_classes == 100 and src.train_y.tolist() == labels.tolist()
    assert sorted(p.name for p in data.iterdir()) == ["cifar-100-python.tar.gz"]  # nothing extracted into the root


def test_image_folder_layout_and_tensor_cache(tmp_path, isolated_cache):
    write_image_folder(tmp_path / "cifar10-jpeg", CLASSES, per_class=2, size=32, fmt="jpg")
    src = load_dataset("cifar10", {}, tmp_path)
    assert src.train_x.shape == (20, 3, 32, 32) and src.test_x.shape == (20, 3, 32, 32)
    assert src.train_y.tolist() == [k for k in range(10) for _ in range(2)]
    cached = list((isolated_cache / "tensors").glob("cifar10-*.pt"))
    assert len(cached) == 1
    again = load_dataset("cifar10", {}, tmp_path)
    assert torch.equal(again.train_x, src.train_x)
    # changing a source file changes the key, so the cache is not reused
    img = tmp_path / "cifar10-jpeg" / "train" / "bird" / "0000.jpg"
    os.utime(img, ns=(0, 0))
    load_dataset("cifar10", {}, tmp_path)
    assert len(list((isolated_cache / "tensors").glob("cifar10-*.pt"))) == 2


def test_image_folder_from_archive(tmp_path):
    write_image_folder(tmp_path / "staging" / "cifar10-jpeg", CLASSES[:10], per_class=1, size=32)
    (tmp_path / "root").mkdir()
    tar_gz(tmp_path / "staging" / "cifar10-jpeg", tmp_path / "root" / "cifar10-jpeg.tar.gz")
    src = load_dataset("cifar10", {"format": "folder"}, tmp_path / "root")
    assert src.train_x.shape == (10, 3, 32, 32)


def test_cached_archive_load_does_not_extract_again(tmp_path, isolated_cache):
    write_image_folder(tmp_path / "staging" / "cifar10-jpeg", CLASSES, per_class=1, size=32)
    (tmp_path / "root").mkdir()
    tar_gz(tmp_path / "staging" / "cifar10-jpeg", tmp_path / "root" / "cifar10-jpeg.tar.gz")
    first = load_dataset("cifar10", {}, tmp_path / "root")
    shutil.rmtree(isolated_cache / "extracted")
    again = load_dataset(
        "cifar10", {}, tmp_path / "root"
    )  # keyed by the archive's sha256: served from the tensor cache
    assert torch.equal(first.train_x, again.train_x) and not (isolated_cache / "extracted").exists()


def test_nothing_found_lists_every_expected_place(tmp_path):
    with pytest.raises(DatasetMissing) as err:
        load_dataset("cifar10", {}, tmp_path)
    msg = str(err.value)
    assert f"{tmp_path}/cifar-10-batches-py/" in msg and "data_batch_1" in msg and "test_batch" in msg
    assert f"{tmp_path}/cifar-10-python.tar.gz" in msg
    assert f"{tmp_path}/cifar10-jpeg/" in msg and f"{tmp_path}/cifar10-hf/" in msg


def test_missing_batch_file_is_named(tmp_path):
    write_cifar_pickles(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(DatasetMissing, match="data_batch_3"):
        load_dataset("cifar10", {}, tmp_path)


def test_truncated_pickle_is_reported(tmp_path):
    write_cifar_pickles(tmp_path)
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DatasetMissing, match="test_batch"):
        load_dataset("cifar10", {}, tmp_path)


def test_unknown_param_is_rejected(tmp_path):
    write_cifar_pickles(tmp_path)
    with pytest.raises(ValueError, match="colour"):
        load_dataset("cifar10", {"colour": True}, tmp_path)


def test_hf_format_without_datasets_package_says_how_to_install(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    (tmp_path / "cifar10-hf").mkdir()
    (tmp_path / "cifar10-hf" / "train-00000.parquet").write_bytes(b"PAR1")
    with pytest.raises(UserError, match=r"pip install 'fedbench\[hf\]'"):
        load_dataset("cifar10", {"format": "hf"}, tmp_path)


def test_corrupt_tensor_cache_is_rebuilt(tmp_path, isolated_cache):
    write_cifar_pickles(tmp_path)
    first = load_dataset("cifar10", {}, tmp_path)
    (cached,) = (isolated_cache / "tensors").glob("cifar10-*.pt")
    cached.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="unreadable tensor cache"):
        again = load_dataset("cifar10", {}, tmp_path)
    assert torch.equal(first.test_x, again.test_x)
