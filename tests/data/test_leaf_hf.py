"""The Flower Datasets route: local copies in the schema of flwrlabs/femnist, celeba and shakespeare."""

from __future__ import annotations

import random

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from fedtest import REPO, write_suite
from nist_fixture import half_black_png, write_nist
from PIL import Image
from test_celeba_official import write_official

from benchmark.cli import main
from benchmark.cli_data import data
from benchmark.data.source import load_dataset
from benchmark.errors import DatasetMissing
from leaf_data import nist

datasets = pytest.importorskip("datasets")


def save(root, name: str, columns: dict, features: dict, splits=("train",)) -> None:
    """A save_to_disk copy, every row in each of `splits` (Flower ships one train split)."""
    table = datasets.Dataset.from_dict(columns, features=datasets.Features(features))
    datasets.DatasetDict({s: table for s in splits}).save_to_disk(str(root / f"{name}-hf"))


def grey(value: int) -> Image.Image:
    return Image.fromarray(np.full((28, 28), value, dtype=np.uint8))


def femnist_table(root, images: list[Image.Image], writers: list[str], labels: list[int]) -> None:
    features = {
        "image": datasets.Image(),
        "writer_id": datasets.Value("string"),
        "character": datasets.ClassLabel(num_classes=62),
    }
    save(root, "femnist", {"image": images, "writer_id": writers, "character": labels}, features)


def test_femnist_users_split_as_leaf_does(tmp_path):
    writers = ["w_a"] * 10 + ["w_b"] * 2 + ["w_c"]  # w_c has one sample: LEAF drops it
    values = list(range(150, 163))  # light grey: paper-like, so no polarity change
    femnist_table(tmp_path, [grey(v) for v in values], writers, list(range(13)))
    src = load_dataset("femnist", {"format": "hf"}, tmp_path)
    assert src.user_names == ["w_a", "w_b"]
    # LEAF's split_data.py draws, users in order, from one random.Random(seed): w_a 9 of 10, w_b 1 of 2
    rng = random.Random(0)
    kept_a, kept_b = set(rng.sample(range(10), 9)), set(rng.sample(range(2), 1))
    assert src.train_y.tolist() == [i for i in range(10) if i in kept_a] + [10 + i for i in range(2) if i in kept_b]
    assert src.test_y.tolist() == [i for i in range(10) if i not in kept_a] + [
        10 + i for i in range(2) if i not in kept_b
    ]
    assert src.train_users.tolist() == [0] * 9 + [1]
    assert src.test_users.tolist() == [0, 1]  # one held-out example each
    assert src.train_x.dtype.is_floating_point and src.train_x.shape == (10, 1, 28, 28)
    for x, y in zip(src.train_x, src.train_y):
        assert set(x.flatten().tolist()) == {np.float32(values[int(y)] / 255)}


def test_femnist_pixels_match_the_nist_route(tmp_path):
    """The same 28x28 character through both routes: LEAF's JSON floats and the hub table's bytes."""
    leaf_bytes = nist.to_pixels(half_black_png())  # what the NIST build writes (as byte / 255)
    femnist_table(tmp_path, [Image.fromarray(leaf_bytes.reshape(28, 28))] * 2, ["w"] * 2, [3, 4])
    src = load_dataset("femnist", {"format": "hf"}, tmp_path)
    expected = (leaf_bytes / 255).astype(np.float32).reshape(1, 28, 28)
    assert np.array_equal(src.train_x[0].numpy(), expected) and np.array_equal(src.test_x[0].numpy(), expected)
    assert src.train_x[0, 0, 0, 0] == 0.0 and src.train_x[0, 0, 0, 27] == 1.0  # ink 0, paper 1


def test_femnist_dark_paper_is_inverted_with_a_warning(tmp_path):
    femnist_table(tmp_path, [grey(10)] * 2, ["w"] * 2, [1, 1])
    with pytest.warns(UserWarning, match="dark paper"):
        src = load_dataset("femnist", {"format": "hf"}, tmp_path)
    assert float(src.train_x.min()) == pytest.approx(1 - 10 / 255)


def test_celeba_table_resized_and_smiling_labels(tmp_path):
    images = [Image.fromarray(np.full((20, 16, 3), 30 * i, dtype=np.uint8)) for i in range(8)]
    celebs = [7, 7, 7, 9, 9, 9, 4, 4]  # celebrity 4: 2 rows per split, 4 in all, fewer than LEAF's 5
    smiling = [True, False, True, False, False, True, True, True]
    columns = {"image": images, "celeb_id": celebs, "Smiling": smiling}
    features = {"image": datasets.Image(), "celeb_id": datasets.Value("int64"), "Smiling": datasets.Value("bool")}
    save(tmp_path, "celeba", columns, features, splits=("train", "valid"))  # every split is pooled
    src = load_dataset("celeba", {"format": "hf", "image_size": 8}, tmp_path)
    assert src.user_names == ["7", "9"] and src.num_classes == 2
    assert src.train_x.shape[1:] == (3, 8, 8) and src.train_x.dtype.is_floating_point is False
    # each celebrity has 6 rows (3 per split): 5 train, 1 test
    assert len(src.train_y) == 10 and len(src.test_y) == 2 and src.mean is not None


def test_shakespeare_table_split_by_position(tmp_path):
    text = "abcdefghij" * 110  # 1,100 characters: 1,000 windows for one character
    xs = [text[i : i + 80] for i in range(1000)] + ["x" * 80] * 5
    ys = [text[i + 80] for i in range(1000)] + ["y"] * 5
    columns = {"character_id": ["HAMLET"] * 1000 + ["GHOST"] * 5, "x": xs, "y": ys}
    save(tmp_path, "shakespeare", columns, {k: datasets.Value("string") for k in columns})
    src = load_dataset("shakespeare", {"format": "hf"}, tmp_path)
    assert src.user_names == ["HAMLET"]  # GHOST's 5 windows leave no test window after the gap
    assert len(src.train_y) == 900 and len(src.test_y) == 1000 - 900 - 79  # LEAF: test from n_train + 79


def test_nothing_found_says_where_to_put_it(tmp_path):
    with pytest.raises(DatasetMissing, match="(?s)femnist/data.*femnist-hf.*format: hf \\(reads flwrlabs/femnist"):
        load_dataset("femnist", {}, tmp_path)


def test_format_hf_alone_reads_flowers_table_from_the_hub(tmp_path, monkeypatch):
    def offline(source):
        raise DatasetMissing(f"cannot load Hugging Face dataset {source}: offline")

    monkeypatch.setattr("benchmark.data.leaf_hf.open_hf", offline)
    with pytest.raises(DatasetMissing, match="flwrlabs/femnist: offline"):
        load_dataset("femnist", {"format": "hf"}, tmp_path)


def test_wrong_schema_names_the_missing_column(tmp_path):
    save(
        tmp_path,
        "femnist",
        {"image": [grey(1)], "label": [1]},
        {"image": datasets.Image(), "label": datasets.Value("int64")},
    )
    with pytest.raises(DatasetMissing, match="writer_id"):
        load_dataset("femnist", {"format": "hf"}, tmp_path)


def test_plan_splits_draws_the_leaf_suites_2000_femnist_clients_from_a_hub_copy(tmp_path, capsys):
    """FedACG's LEAF table asks for 2,000 FEMNIST writers: a hub copy with more writers gives them."""
    writers = [f"f{k:04d}_00" for k in range(2_050) for _ in range(2)]
    femnist_table(tmp_path, [grey(200)] * len(writers), writers, [k % 62 for k in range(len(writers))])
    suite = yaml.safe_load((REPO / "suites" / "papers" / "fedacg.leaf.yaml").read_text())
    (entry,) = [d for d in suite["datasets"] if d["name"] == "femnist"]
    suite["datasets"] = [entry | {"root": str(tmp_path)}]
    assert main(["plan", str(write_suite(tmp_path, suite)), "--splits", "--max-clients", "2"]) == 0
    out = capsys.readouterr().out
    assert "leaf.femnist: natural, split seed 0, 2000 clients" in out, out


def test_data_ls_shows_each_leaf_route(tmp_path):
    femnist_table(tmp_path, [grey(200)] * 2, ["w"] * 2, [1, 2])
    write_nist(tmp_path / "nist-only")
    write_official(tmp_path)  # celeba's official files
    lines = CliRunner().invoke(data, ["ls", "--root", str(tmp_path)]).output.splitlines()
    by_name = {line.split()[0]: line for line in lines if line and not line.startswith(" ")}
    assert "found" in by_name["femnist"] and "Flower's flwrlabs/femnist copy" in by_name["femnist"]
    assert "buildable" in by_name["celeba"] and "fedbench data prepare celeba" in by_name["celeba"]
    nist_only = CliRunner().invoke(data, ["ls", "--root", str(tmp_path / "nist-only")]).output
    assert "buildable   from" in nist_only and "fedbench data prepare femnist" in nist_only


def test_a_hub_id_is_read_when_no_local_copy_exists(tmp_path, monkeypatch):
    table = datasets.Dataset.from_dict(
        {"character_id": ["A"] * 900, "x": ["a" * 80] * 900, "y": ["b"] * 900},
    )
    opened = []
    monkeypatch.setattr("benchmark.data.leaf_hf.open_hf", lambda source: opened.append(source) or {"train": table})
    src = load_dataset("shakespeare", {"format": "hf", "hf_id": "flwrlabs/shakespeare"}, tmp_path)
    assert opened == ["flwrlabs/shakespeare"]
    assert len(src.train_y) == 810 and len(src.test_y) == 900 - 810 - 79


def test_a_table_without_any_splittable_user_is_a_clear_error(tmp_path):
    columns = {"character_id": ["GHOST"] * 5, "x": ["x" * 80] * 5, "y": ["y"] * 5}
    save(tmp_path, "shakespeare", columns, {k: datasets.Value("string") for k in columns})
    with pytest.raises(DatasetMissing, match="no user has samples for both training and testing"):
        load_dataset("shakespeare", {"format": "hf"}, tmp_path)
