"""CelebA as LEAF prepares and reads it (issue 36 point 4): LEAF's float labels, its resize (Pillow's
default filter in models/celeba/cnn.py) and its raw 0-255 pixels, each selectable; fedbench's defaults
(Lanczos, standardised pixels) are stated choices."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image
from test_celeba_official import ROWS, write_official

from benchmark.cli import main
from benchmark.data.source import load_dataset
from benchmark.engine.augment import image_preprocessor
from benchmark.errors import DatasetMissing
from benchmark.job.settings import AugmentConfig


@pytest.fixture
def built(tmp_path):
    """The official files with patterned 24x20 images (so resize filters differ), built as LEAF does."""
    write_official(tmp_path)
    rng = np.random.default_rng(0)
    for name in ROWS:
        Image.fromarray(rng.integers(0, 256, (24, 20, 3), dtype=np.uint8)).save(tmp_path / "img_align_celeba" / name)
    assert main(["data", "prepare", "celeba", "--root", str(tmp_path), "-k", "5"]) == 0
    return tmp_path


def leaf_json(root, split: str) -> dict:
    (path,) = (root / "celeba" / "data" / split).glob("*.json")
    return json.loads(path.read_text())


def test_labels_are_written_as_leafs_floats_and_read_back(built):
    labels = [y for d in leaf_json(built, "train")["user_data"].values() for y in d["y"]]
    assert labels and {type(y) for y in labels} == {float} and set(labels) == {0.0, 1.0}
    src = load_dataset("celeba", {"image_size": 8}, built)
    assert src.train_y.dtype == torch.int64 and sorted(src.train_y.tolist()) == sorted(int(y) for y in labels)


def test_a_label_that_is_not_0_or_1_is_refused(built):
    (path,) = (built / "celeba" / "data" / "train").glob("*.json")
    blob = json.loads(path.read_text())
    blob["user_data"][blob["users"][0]]["y"][0] = 0.5
    path.write_text(json.dumps(blob))
    with pytest.raises(DatasetMissing, match=r"labels must be 0/1 or LEAF's 0.0/1.0 \(smiling\), found \['0.5'\]"):
        load_dataset("celeba", {"image_size": 8}, built)


@pytest.mark.parametrize("resample", ["nearest", "bicubic", "lanczos"])
def test_each_resize_filter_is_pillows(built, resample):
    """nearest / bicubic: LEAF's `Image.open(f).resize((84, 84)).convert('RGB')` under Pillow < 7 / >= 7."""
    src = load_dataset("celeba", {"image_size": 8, "resample": resample}, built)
    names = [x for d in leaf_json(built, "train")["user_data"].values() for x in d["x"]]
    how = getattr(Image.Resampling, resample.upper())
    expected = [
        np.asarray(Image.open(built / "img_align_celeba" / n).resize((8, 8), how).convert("RGB")) for n in names
    ]
    assert np.array_equal(src.train_x.numpy(), np.stack(expected).transpose(0, 3, 1, 2))
    if resample == "bicubic":  # today's Pillow default, as LEAF's line calls it
        default = np.asarray(Image.open(built / "img_align_celeba" / names[0]).resize((8, 8)).convert("RGB"))
        assert np.array_equal(src.train_x[0].numpy(), default.transpose(2, 0, 1))


def test_raw_pixels_reach_the_model_as_leafs_0_to_255(built):
    job = SimpleNamespace(dataset=SimpleNamespace(augment=AugmentConfig()))
    raw = load_dataset("celeba", {"image_size": 8, "pixels": "raw"}, built)
    fed = image_preprocessor(raw, job)(raw.train_x, False, None)
    assert torch.allclose(fed, raw.train_x.float(), atol=1e-4)
    standard = load_dataset("celeba", {"image_size": 8}, built)
    fed = image_preprocessor(standard, job)(standard.train_x, False, None)
    assert fed.mean(dim=(0, 2, 3)).abs().max() < 1e-4  # the default: per-channel standardised


def test_an_unknown_filter_is_a_clear_error(built, tmp_path, capsys):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: celeba-bad\ndatasets:\n  - name: celeba\n    params: {resample: antialias}\nmethods: [fedavg]\n"
    )
    assert main(["plan", str(suite)]) == 2
    assert "resample" in capsys.readouterr().err
