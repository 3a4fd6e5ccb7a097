"""FEMNIST built from a generated NIST SD19 (official layout), checked against hand-computed values."""

from __future__ import annotations

import json
import urllib.error

import numpy as np
import pytest
from click.testing import CliRunner
from data_fixtures import write_leaf
from nist_fixture import IMAGES, LABELS, write_nist

from benchmark.cli import main
from benchmark.cli_data import data
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing
from leaf_data import femnist, nist
from leaf_data.sampling import LeafOptions

# writer -> labels in listing order (by_write member names sorted); f0002_17 also has the half-black 'A'
EXPECTED = {"f0000_14": [0, 10, 36], "f0001_41": [61, 9], "f0002_17": [35, 10]}
VALUE_OF_LABEL = {LABELS[cls]: value for _, _, cls, value in IMAGES if LABELS[cls] != 10} | {10: 80}


def read_split(out, split):
    users = {}
    for path in sorted((out / "data" / split).glob("*.json")):
        blob = json.loads(path.read_text())
        assert blob["num_samples"] == [len(blob["user_data"][u]["y"]) for u in blob["users"]]
        users.update({u: blob["user_data"][u] for u in blob["users"]})
    return users


@pytest.mark.parametrize("as_zip", [True, False])
def test_build_matches_writers_labels_and_pixels(tmp_path, as_zip):
    write_nist(tmp_path / "root", as_zip=as_zip)
    stats = femnist.build(tmp_path / "root", tmp_path / "out", LeafOptions(), show=femnist.quiet)
    assert (stats["writers"], stats["samples"], stats["unmatched"]) == (3, 7, 1)
    # every user has 2+ samples: max(1, int(0.9 n)) train (1 of 2), the rest test
    assert (stats["train_users"], stats["train_samples"], stats["test_samples"]) == (3, 4, 3)
    train, test = read_split(tmp_path / "out", "train"), read_split(tmp_path / "out", "test")
    for writer, labels in EXPECTED.items():
        assert sorted(train[writer]["y"] + test[writer]["y"]) == sorted(labels)
        for x, y in zip(train[writer]["x"] + test[writer]["x"], train[writer]["y"] + test[writer]["y"]):
            assert len(x) == 784
            if writer == "f0002_17" and y == 10:  # half black, half white: the sides keep 0 and 1
                assert x[0] == 0.0 and x[27] == 1.0 and x[28 * 27] == 0.0
            else:  # a uniform grey v becomes v / 255 everywhere, LEAF's scale (white = 1)
                assert set(x) == {VALUE_OF_LABEL[y] / 255}


def test_labels_follow_leaf_relabel():
    assert [nist.relabel(h) for h in ("30", "39", "41", "5a", "61", "7a")] == [0, 9, 10, 35, 36, 61]
    with pytest.raises(ValueError):
        nist.relabel("2e")


def test_min_samples_and_fraction(tmp_path):
    write_nist(tmp_path / "root")
    stats = femnist.build(tmp_path / "root", tmp_path / "k3", LeafOptions(min_samples=3), show=femnist.quiet)
    assert stats["train_users"] == 1 and stats["train_samples"] + stats["test_samples"] == 3  # only f0000_14
    stats = femnist.build(tmp_path / "root", tmp_path / "half", LeafOptions(fraction=0.5), show=femnist.quiet)
    assert stats["train_samples"] + stats["test_samples"] == 3  # int(0.5 * 7), the last user cut


def test_user_split_puts_each_user_on_one_side(tmp_path):
    write_nist(tmp_path / "root")
    femnist.build(
        tmp_path / "root", tmp_path / "out", LeafOptions(split="user", train_fraction=0.5), show=femnist.quiet
    )
    train, test = read_split(tmp_path / "out", "train"), read_split(tmp_path / "out", "test")
    assert len(train) == 1 and len(test) == 2 and not set(train) & set(test)  # int(0.5 * 3) train users


def test_an_interrupted_build_resumes_from_its_stages(tmp_path, monkeypatch):
    write_nist(tmp_path / "root")
    first = femnist.build(tmp_path / "root", tmp_path / "out", LeafOptions(), show=femnist.quiet)
    before = read_split(tmp_path / "out", "train")

    def no_decoding(png):
        raise AssertionError("a finished stage was redone")

    monkeypatch.setattr(nist, "to_pixels", no_decoding)
    monkeypatch.setattr(nist, "md5s", no_decoding)
    assert femnist.build(tmp_path / "root", tmp_path / "out", LeafOptions(), show=femnist.quiet) == first
    assert read_split(tmp_path / "out", "train") == before


def test_prepare_femnist_builds_from_the_zips_in_the_root(tmp_path):
    write_nist(tmp_path)
    result = CliRunner().invoke(data, ["prepare", "femnist", "--root", str(tmp_path), "--dest", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "writers 3, samples 7, unmatched 1" in result.output and "femnist: 4 train / 3 test" in result.output
    src = load_dataset("femnist", {}, tmp_path / "out")
    assert sorted(src.user_names) == sorted(EXPECTED) and src.train_x.shape == (4, 1, 28, 28)


def test_prepare_femnist_offline_names_the_nist_urls(tmp_path, monkeypatch, capsys):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr("urllib.request.urlopen", offline)
    assert main(["data", "prepare", "femnist", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert "s3.amazonaws.com/nist-srd/SD19/by_class.zip" in err and str(tmp_path / "by_class.zip") in err


def test_a_user_split_build_is_refused_by_the_loader_with_the_fix(tmp_path):
    write_nist(tmp_path / "root")
    femnist.build(tmp_path / "root", tmp_path / "femnist", LeafOptions(split="user"), show=femnist.quiet)
    with pytest.raises(DatasetMissing, match="rebuild with -t sample"):
        load_dataset("femnist", {}, tmp_path)


def test_the_thumbnail_is_one_lanczos_resize_as_when_leaf_published_its_data():
    from io import BytesIO

    from nist_fixture import half_black_png
    from PIL import Image

    png = half_black_png()
    with Image.open(BytesIO(png)) as img:
        once = np.asarray(img.convert("L").resize((28, 28), Image.Resampling.LANCZOS)).reshape(-1)
    assert np.array_equal(nist.to_pixels(png), once)


def test_prepare_refuses_options_femnist_does_not_take(tmp_path, capsys):
    write_nist(tmp_path)
    assert main(["data", "prepare", "femnist", "--root", str(tmp_path), "--test-gap", "3"]) == 2
    assert "--test-gap applies to shakespeare only" in capsys.readouterr().err
    assert main(["data", "prepare", "femnist", "--root", str(tmp_path), "--sf", "0"]) == 2
    assert "--sf must be in (0, 1]" in capsys.readouterr().err


def test_iid_deals_the_pooled_images_to_new_users(tmp_path):
    write_nist(tmp_path / "root")
    stats = femnist.build(
        tmp_path / "root", tmp_path / "out", LeafOptions(iid=True, iid_users=0.67), show=femnist.quiet
    )
    # 7 images, round(0.67 * 3 writers) = 2 users of 3 and 4; split 2 + 1 and 3 + 1
    assert (stats["train_users"], stats["train_samples"], stats["test_samples"]) == (2, 5, 2)
    assert sorted(read_split(tmp_path / "out", "train")) == ["0", "1"]


def test_prepare_on_existing_leaf_json_says_how_the_full_set_is_built(tmp_path):
    pixels = {"x": [[1.0] * 784] * 2, "y": [1, 2]}
    write_leaf(tmp_path, "femnist", {"w": pixels}, {"w": pixels})
    result = CliRunner().invoke(data, ["prepare", "femnist", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "by_class.zip and by_write.zip" in result.output and "2 train / 2 test" in result.output
