"""CelebA built from the official files (identity_CelebA.txt, list_attr_celeba.txt, img_align_celeba)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from benchmark.cli import main
from benchmark.cli_data import data
from benchmark.data.source import load_dataset

ATTRS = ["5_o_Clock_Shadow", "Arched_Eyebrows", "Smiling", "Young"]  # the real file has 40; Smiling is one
# image -> (celebrity, Smiling as in the file); celebrity 3 has 4 images, fewer than LEAF's 5
ROWS = {
    f"{i:06d}.jpg": (c, s) for i, (c, s) in enumerate([(1, 1)] * 4 + [(1, -1)] * 2 + [(2, -1)] * 5 + [(3, 1)] * 4, 1)
}


def write_official(root, zipped: bool = False) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "identity_CelebA.txt").write_text("".join(f"{n} {c}\n" for n, (c, _) in ROWS.items()))
    header = f"{len(ROWS)}\n{' '.join(ATTRS)}\n"
    rows = "".join(f"{n} -1  1 {s:2d}  1\n" for n, (_, s) in ROWS.items())
    (root / "list_attr_celeba.txt").write_text(header + rows)
    folder = root / "staging" / "img_align_celeba" if zipped else root / "img_align_celeba"
    folder.mkdir(parents=True)
    for i, name in enumerate(ROWS):
        Image.fromarray(np.full((24, 20, 3), 10 * i, dtype=np.uint8)).save(folder / name)
    if zipped:
        with zipfile.ZipFile(root / "img_align_celeba.zip", "w") as zf:
            for f in sorted(folder.iterdir()):
                zf.write(f, f"img_align_celeba/{f.name}")


@pytest.mark.parametrize("zipped", [False, True])
@pytest.mark.parametrize("elsewhere", [False, True])
def test_prepare_builds_users_labels_and_split(tmp_path, zipped, elsewhere):
    write_official(tmp_path, zipped)
    dest = tmp_path / "built" if elsewhere else tmp_path  # the images stay in the root: linked from dest
    result = CliRunner().invoke(data, ["prepare", "celeba", "--root", str(tmp_path), "--dest", str(dest), "-k", "5"])
    assert result.exit_code == 0, result.output
    assert "celebrities 2, images 11" in result.output  # celebrity 3 (4 images) is below LEAF's 5
    # celebrity 1: 6 images, int(0.9 * 6) = 5 train; celebrity 2: int(0.9 * 5) = 4 train
    assert "train_samples 9, test_samples 2" in result.output and "celeba: 9 train / 2 test" in result.output
    users = {}
    for split in ("train", "test"):
        for path in (dest / "celeba" / "data" / split).glob("*.json"):
            for u, d in json.loads(path.read_text())["user_data"].items():
                users.setdefault(u, []).extend(zip(d["x"], d["y"]))
    assert sorted(users) == ["1", "2"]
    for user, pairs in users.items():
        assert sorted(pairs) == sorted((n, (s + 1) // 2) for n, (c, s) in ROWS.items() if str(c) == user)
    src = load_dataset("celeba", {"image_size": 8}, dest)
    assert src.train_x.shape == (9, 3, 8, 8) and sorted(src.user_names) == ["1", "2"]


def test_prepare_without_the_files_says_what_to_fetch_by_hand(tmp_path, capsys):
    assert main(["data", "prepare", "celeba", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    for needed in ("img_align_celeba.zip", "list_attr_celeba.txt", "identity_CelebA.txt", "CelebA.html", str(tmp_path)):
        assert needed in err


def test_a_ray_node_is_sent_the_json_and_the_root_images(tmp_path):
    from benchmark.run.staging import dataset_files

    write_official(tmp_path)
    assert main(["data", "prepare", "celeba", "--root", str(tmp_path), "--dest", str(tmp_path / "b"), "-k", "5"]) == 0
    (tmp_path / "b" / "celeba" / "data" / "raw" / "img_align_celeba").unlink()  # JSON here, images in the root
    (tmp_path / "b" / "img_align_celeba").symlink_to(tmp_path / "img_align_celeba")
    _, files = dataset_files("celeba", tmp_path / "b")
    names = {f.name for f in files}
    assert set(ROWS) <= names and any(n.endswith("_train.json") for n in names)
