import io
import tarfile
import zipfile

import pytest
from data_fixtures import write_tiny_imagenet

from benchmark.data.archive import extract, locate
from benchmark.data.tiny_imagenet import TinyImageNetParams, load_split
from benchmark.errors import DatasetMissing


def test_extracts_once_into_the_cache_keyed_by_content(tmp_path, isolated_cache):
    (tmp_path / "src" / "thing").mkdir(parents=True)
    (tmp_path / "src" / "thing" / "a.txt").write_text("hello")
    with tarfile.open(tmp_path / "thing.tar.gz", "w:gz") as tf:
        tf.add(tmp_path / "src" / "thing", arcname="thing")
    assert locate(tmp_path, "other", ["other.tar.gz"]) is None
    found = locate(tmp_path, "thing", ["thing.tar.gz"])
    assert not (isolated_cache / "extracted").exists()  # nothing extracted until the files are needed
    assert found.path.is_relative_to(isolated_cache) and (found.path / "a.txt").read_text() == "hello"
    assert found.origin == tmp_path / "thing.tar.gz" and len(found.checksum()) == 64
    marker_time = (found.path.parent / ".fedbench-extracted").stat().st_mtime_ns
    assert locate(tmp_path, "thing", ["thing.tar.gz"]).path == found.path
    assert (found.path.parent / ".fedbench-extracted").stat().st_mtime_ns == marker_time  # not re-extracted


def test_corrupt_archive_names_the_file(tmp_path):
    (tmp_path / "cifar10-jpeg.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(DatasetMissing, match=r"cannot extract .*cifar10-jpeg.tar.gz"):
        extract(tmp_path / "cifar10-jpeg.tar.gz")


def test_member_escaping_the_folder_is_refused(tmp_path):
    with tarfile.open(tmp_path / "evil.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(DatasetMissing, match="cannot extract"):
        extract(tmp_path / "evil.tar.gz")
    assert not list(tmp_path.parent.rglob("escaped.txt"))


def test_archive_without_the_expected_folder(tmp_path):
    with tarfile.open(tmp_path / "femnist.tar.gz", "w:gz") as tf:
        tf.addfile(tarfile.TarInfo("README"), io.BytesIO(b""))
    with pytest.raises(DatasetMissing, match="does not contain femnist/data/"):
        locate(tmp_path, "femnist/data", ["femnist.tar.gz"]).path


def test_official_zip_layout(tmp_path):
    write_tiny_imagenet(tmp_path / "staging", with_train=False)
    (tmp_path / "root").mkdir()
    with zipfile.ZipFile(tmp_path / "root" / "tiny-imagenet-200.zip", "w") as zf:
        for path in (tmp_path / "staging").rglob("*"):
            zf.write(path, path.relative_to(tmp_path / "staging"))
    assert load_split(TinyImageNetParams(), tmp_path / "root", "val")["x"].shape == (200, 3, 64, 64)
