"""Tiny datasets in the real on-disk formats, written into a test's tmp_path."""

from __future__ import annotations

import gzip
import json
import pickle
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image


def rgb(seed: int, size: int = 8) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8))


def write_cifar_pickles(root: Path, per_batch: int = 4, cifar100: bool = False) -> np.ndarray:
    """The official python layout with `per_batch` examples per file; returns train labels."""
    rng = np.random.default_rng(0)
    folder = root / ("cifar-100-python" if cifar100 else "cifar-10-batches-py")
    folder.mkdir(parents=True)
    names = ["train", "test"] if cifar100 else [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    key = b"fine_labels" if cifar100 else b"labels"
    labels = []
    for name in names:
        y = rng.integers(0, 100 if cifar100 else 10, per_batch).tolist()
        batch = {
            b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
            key: y,
            b"batch_label": name.encode(),
        }
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)  # the archives are Python 2 protocol-2 pickles
        if "test" not in name:
            labels += y
    return np.array(labels)


def write_image_folder(base: Path, classes: list[str], per_class: int = 2, size: int = 8, fmt: str = "png") -> None:
    for split in ("train", "test"):
        for k, cls in enumerate(classes):
            (base / split / cls).mkdir(parents=True)
            for i in range(per_class):
                rgb(100 * k + i, size).save(base / split / cls / f"{i:04d}.{fmt}")


def write_tiny_imagenet(root: Path, with_train: bool = True, per_class: int = 1) -> list[str]:
    base = root / "tiny-imagenet-200"
    wnids = [f"n{k:08d}" for k in range(200)]
    (base / "val" / "images").mkdir(parents=True)
    (base / "wnids.txt").write_text("\n".join(reversed(wnids)) + "\n")
    lines = []
    for k, w in enumerate(wnids):
        for i in range(per_class):
            name = f"val_{k * per_class + i}.JPEG"
            rgb(k, 64).save(base / "val" / "images" / name, format="JPEG")
            lines.append(f"{name}\t{w}\t0\t0\t63\t63")
        if with_train:
            (base / "train" / w / "images").mkdir(parents=True)
            rgb(1000 + k, 64).save(base / "train" / w / "images" / f"{w}_0.JPEG", format="JPEG")
    (base / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    return wnids


def write_leaf(root: Path, name: str, train: dict, test: dict) -> None:
    """`<root>/<name>/data/{train,test}/shard.json` from {user: {"x": [...], "y": [...]}}."""
    for split, users in (("train", train), ("test", test)):
        folder = root / name / "data" / split
        folder.mkdir(parents=True)
        blob = {"users": list(users), "num_samples": [len(d["y"]) for d in users.values()], "user_data": users}
        (folder / f"all_data_0_{split}.json").write_text(json.dumps(blob))


def write_celeba(root: Path, size: int = 12) -> None:
    img_dir = root / "celeba" / "data" / "raw" / "img_align_celeba"
    img_dir.mkdir(parents=True)
    for i in range(6):
        rgb(i, size).resize((size, size + 4)).save(img_dir / f"{i:06d}.jpg")
    train = {
        "celeb_a": {"x": ["000000.jpg", "000001.jpg"], "y": [0, 1]},
        "celeb_b": {"x": ["000002.jpg", "000003.jpg"], "y": [1, 1]},
    }
    test = {"celeb_a": {"x": ["000004.jpg"], "y": [1]}, "celeb_b": {"x": ["000005.jpg"], "y": [0]}}
    write_leaf(root, "celeba", train, test)


def write_libsvm(path: Path, rows: list[tuple[int, dict[int, float]]], gz: bool = False) -> None:
    text = "".join(f"{y:+d} " + " ".join(f"{j}:{v:g}" for j, v in feats.items()) + " \n" for y, feats in rows)
    if gz:
        with gzip.open(path.with_name(path.name + ".gz"), "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def tar_gz(folder: Path, archive: Path) -> Path:
    """Pack `folder` (as its own name) into `archive`."""
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname=folder.name)
    return archive
