"""LEAF's two seeds (--smplseed for the sampling draw, --spltseed for the train/test draw) and the order
the all_data shards are drawn from (issue 36 point 4). Expected values come from LEAF's algorithm
written out here with its own generator, random.Random(seed)."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from test_celeba_official import ROWS, write_official
from test_leaf_builder import RAW

from benchmark.cli import main
from leaf_data.femnist import all_data
from leaf_data.sampling import LeafOptions, sample_and_remove, shard, split_shards

# LEAF's published FEMNIST pair (its tutorial: preprocess.sh -s niid --sf 0.05 -k 0 -t sample --smplseed
# 1549786595 --spltseed 1549786796)
SMPLSEED, SPLTSEED = 1549786595, 1549786796


def shards(count: int) -> list[dict]:
    """`count` all_data shards of 4 users with 4 samples each; user 'sNuM' holds samples 'sN-uM-i'."""
    return [
        shard({f"s{s}u{u}": {"x": [f"s{s}-u{u}-{i}" for i in range(4)], "y": [0] * 4} for u in range(4)})
        for s in range(count)
    ]


def leaf_draw(blobs: list[dict], fraction: float, smplseed: int, spltseed: int) -> list[tuple[list, list]]:
    """LEAF's sample.py (niid) then split_data.py (by sample, --tf 0.9) over `blobs` in this order:
    (train x, test x) per shard. Users are whole here (4 samples each, fraction a multiple of 1/4)."""
    sampling, splitting = random.Random(smplseed), random.Random(spltseed)
    out = []
    for blob in blobs:
        users = list(blob["users"])
        sampling.shuffle(users)
        users = users[: round(fraction * len(users))]
        train, test = [], []
        for u in users:
            xs = blob["user_data"][u]["x"]
            chosen = set(splitting.sample(range(len(xs)), int(0.9 * len(xs))))
            train += [x for i, x in enumerate(xs) if i in chosen]
            test += [x for i, x in enumerate(xs) if i not in chosen]
        out.append((train, test))
    return out


def fedbench_draw(blobs: list[dict], opts: LeafOptions) -> list[tuple[list, list]]:
    kept = sample_and_remove(iter(blobs), opts)
    return [
        ([x for d in tr["user_data"].values() for x in d["x"]], [x for d in te["user_data"].values() for x in d["x"]])
        for tr, te in split_shards(kept, opts)
    ]


def test_each_seed_drives_its_own_draw_as_in_leaf():
    blobs = shards(3)
    opts = LeafOptions(fraction=0.5, sampling_seed=SMPLSEED, split_seed=SPLTSEED)
    assert fedbench_draw(blobs, opts) == leaf_draw(blobs, 0.5, SMPLSEED, SPLTSEED)
    other_split = fedbench_draw(blobs, LeafOptions(fraction=0.5, sampling_seed=SMPLSEED, split_seed=SPLTSEED + 1))
    other_sample = fedbench_draw(blobs, LeafOptions(fraction=0.5, sampling_seed=SMPLSEED + 1, split_seed=SPLTSEED))
    users = [sorted({x.rsplit("-", 1)[0] for x in tr + te}) for tr, te in fedbench_draw(blobs, opts)]
    assert [sorted({x.rsplit("-", 1)[0] for x in tr + te}) for tr, te in other_split] == users  # same users
    assert other_split != fedbench_draw(blobs, opts)  # another train/test draw
    assert [sorted({x.rsplit("-", 1)[0] for x in tr + te}) for tr, te in other_sample] != users


def test_the_shard_order_changes_the_draw_and_is_selectable(tmp_path):
    count = 12  # all_data_10 and _11 sort before _2 by name
    blobs = shards(count)
    for i, blob in enumerate(blobs):  # FEMNIST's all_data npz shards, as leaf_data.femnist writes them
        x = np.array([[i, u, k] for u in range(4) for k in range(4)], dtype=np.uint8)
        np.savez(tmp_path / f"all_data_{i}.npz", x=x, y=np.zeros(16), users=np.array(blob["users"]), counts=[4] * 4)
    by_name = LeafOptions(shard_order="name")
    assert by_name.ordered(count) == [0, 1, 10, 11, *range(2, 10)]
    assert [b["users"][0] for b in all_data(tmp_path, count, by_name)] == [f"s{i}u0" for i in by_name.ordered(count)]
    numeric = LeafOptions(fraction=0.5, sampling_seed=SMPLSEED, split_seed=SPLTSEED)
    named = LeafOptions(fraction=0.5, sampling_seed=SMPLSEED, split_seed=SPLTSEED, shard_order="name")
    draws = {}
    for opts in (numeric, named):
        ordered = [blobs[i] for i in opts.ordered(count)]
        draws[opts.shard_order] = dict(zip(opts.ordered(count), fedbench_draw(ordered, opts)))
        assert list(draws[opts.shard_order].values()) == leaf_draw(ordered, 0.5, SMPLSEED, SPLTSEED)
    assert draws["numeric"][10] != draws["name"][10]  # shard 10 is drawn 11th or 3rd
    with pytest.raises(ValueError, match="--shard-order must be one of"):
        LeafOptions(shard_order="listdir")


def test_prepare_runs_leafs_published_seed_pair_on_celeba(tmp_path):
    """The pair LEAF published runs through `data prepare`; the users and train/test images are LEAF's draw."""
    write_official(tmp_path)
    args = ["data", "prepare", "celeba", "--root", str(tmp_path), "-k", "5"]
    assert main([*args, "--smplseed", str(SMPLSEED), "--spltseed", str(SPLTSEED)]) == 0
    folder = tmp_path / "celeba" / "data"
    (train_file,) = (folder / "train").glob("*.json")
    assert train_file.name.endswith(f"_{SMPLSEED}_{SPLTSEED}_train.json")
    built = [json.loads(next((folder / s).glob("*.json")).read_text()) for s in ("train", "test")]
    celebs = {}
    for name, (celeb, _) in ROWS.items():
        celebs.setdefault(str(celeb), []).append(name)
    blob = shard({c: {"x": names, "y": [0] * len(names)} for c, names in celebs.items() if len(names) >= 5})
    ((train, test),) = leaf_draw([blob], 1.0, SMPLSEED, SPLTSEED)
    assert [x for d in built[0]["user_data"].values() for x in d["x"]] == train
    assert [x for d in built[1]["user_data"].values() for x in d["x"]] == test


@pytest.mark.parametrize(
    "name, option, says",
    [
        ("celeba", ["--shard-order", "name"], "CelebA is one all_data shard"),
        ("shakespeare", ["--shard-order", "name"], "the Shakespeare text is one shard"),
    ],
)
def test_an_option_that_draws_nothing_for_the_dataset_is_refused(tmp_path, capsys, name, option, says):
    if name == "celeba":
        write_official(tmp_path)
    else:
        (tmp_path / "shakespeare-complete-works.txt").write_text("THE SONNETS\n")
    assert main(["data", "prepare", name, "--root", str(tmp_path), *option]) == 2
    assert says in capsys.readouterr().err


LEAF_SHAKESPEARE = ["-t", "sample", "--tf", "0.9", "--smplseed", "1550262838", "--spltseed", "1550262839"]


def test_shakespeare_takes_leafs_published_seeds_and_says_the_split_seed_draws_nothing(tmp_path, capsys):
    """LEAF's Shakespeare tutorial passes --smplseed 1550262838 --spltseed 1550262839; LEAF's own split of
    Shakespeare is by position, so its split seed draws nothing there either."""
    (tmp_path / "shakespeare-complete-works.txt").write_text(RAW)  # too short for LEAF's gap of 79 windows
    args = ["data", "prepare", "shakespeare", "--root", str(tmp_path), "--test-gap", "0"]
    assert main([*args, *LEAF_SHAKESPEARE]) == 0
    assert "spltseed draws nothing (the split is by position, as LEAF's)" in capsys.readouterr().out


@pytest.mark.realdata
def test_leafs_published_shakespeare_command_runs_on_the_complete_works(data_root, tmp_path, capsys):
    """The tutorial's whole command (--sf 0.05 -k 64 besides the seeds) on the text LEAF downloads."""
    args = ["data", "prepare", "shakespeare", "--root", str(data_root), "--dest", str(tmp_path)]
    assert main([*args, "--sf", "0.05", "-k", "64", *LEAF_SHAKESPEARE]) == 0
    out = capsys.readouterr().out
    assert int(re.search(r"users_kept (\d+)", out).group(1)) > 0 and "test examples ready" in out
