"""LEAF's sample / remove_users / split_data steps on hand-made shards, with a generator whose draws
are written out, so every expected value is computed by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from leaf_data.leaf_json import PIXEL_TEXT, pixels_json, shard_text
from leaf_data.sampling import (
    LeafOptions,
    iid_divide,
    remove_small,
    sample_iid,
    sample_niid,
    shard,
    split_by_sample,
    split_shards,
)


class Reversing:
    """A stand-in for random.Random: shuffle reverses, sample(seq, k) takes the last k, last first."""

    def shuffle(self, items: list) -> None:
        items.reverse()

    def sample(self, population, k: int) -> list:
        return list(population)[::-1][:k]


def blob() -> dict:
    # user -> samples; x = "<user><i>", y = i
    sizes = {"a": 3, "b": 2, "c": 4}
    return shard({u: {"x": [f"{u}{i}" for i in range(n)], "y": list(range(n))} for u, n in sizes.items()})


def test_niid_takes_whole_users_in_shuffled_order_and_cuts_the_last():
    # 9 samples, fraction 0.6: int(5.4) = 5 wanted; users reversed: c (4), then b cut to 1
    out = sample_niid(blob(), 0.6, Reversing())
    assert out["users"] == ["c", "b"] and out["num_samples"] == [4, 1]
    assert out["user_data"]["b"] == {"x": ["b0"], "y": [0]}  # the cut user keeps its first samples
    assert sample_niid(blob(), 4 / 9, Reversing())["users"] == ["c"]  # int(4.0) = 4: c alone


def test_iid_divide_gives_the_small_groups_first():
    assert [list(r) for r in iid_divide(7, 3)] == [[0, 1], [2, 3], [4, 5, 6]]
    assert [list(r) for r in iid_divide(4, 4)] == [[0], [1], [2], [3]]


def test_iid_pools_samples_and_deals_them_to_new_users():
    # pool a0 a1 a2 b0 b1 c0..c3 (9); int(0.5 * 9) = 4 picked, the last 4 reversed: c3 c2 c1 c0;
    # round(0.67 * 3) = 2 users named from 10: two samples each
    out = sample_iid(blob(), 0.5, 0.67, Reversing(), first_id=10)
    assert out["users"] == ["10", "11"]
    assert out["user_data"]["10"]["x"] == ["c3", "c2"] and out["user_data"]["11"]["x"] == ["c1", "c0"]


def test_remove_keeps_users_with_at_least_k():
    assert remove_small(blob(), 3)["users"] == ["a", "c"]


def test_split_by_sample_keeps_original_order_and_one_of_two():
    train, test = split_by_sample(blob(), 0.9, Reversing())
    # a: max(1, int(2.7)) = 2 train = the last two; b: 1 of 2 = b1; c: int(3.6) = 3 = c1 c2 c3
    assert train["user_data"]["a"]["x"] == ["a1", "a2"] and test["user_data"]["a"]["x"] == ["a0"]
    assert train["user_data"]["b"]["x"] == ["b1"] and test["user_data"]["b"]["x"] == ["b0"]
    assert train["user_data"]["c"]["x"] == ["c1", "c2", "c3"] and test["num_samples"] == [1, 1, 1]


def test_user_split_draws_users_over_all_shards():
    pairs = list(split_shards([blob(), blob()], LeafOptions(split="user", train_fraction=0.5), counts=[3, 3]))
    train_users = sum(len(t["users"]) for t, _ in pairs)
    test_users = sum(len(s["users"]) for _, s in pairs)
    assert (train_users, test_users) == (3, 3)  # int(0.5 * 6) users train, across both shards


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        LeafOptions(split="writer")
    with pytest.raises(ValueError):
        LeafOptions(fraction=0)


def test_json_text_is_leafs():
    """LEAF writes json.dump of byte / 255 floats; the fast writer gives the same document."""
    x = np.array([[0, 1, 128, 255]], dtype=np.uint8)
    assert json.loads(pixels_json(x)) == [[0.0, 1 / 255, 128 / 255, 1.0]]
    assert PIXEL_TEXT[255] == "1.0" and PIXEL_TEXT[0] == "0.0"
    doc = shard({"u": {"x": x, "y": np.array([7])}})
    assert json.loads(shard_text(doc, pixels_json)) == {
        "users": ["u"],
        "num_samples": [1],
        "user_data": {"u": {"x": [[0.0, 1 / 255, 128 / 255, 1.0]], "y": [7]}},
    }


@pytest.mark.realdata
def test_leafs_own_femnist_pixels_are_bytes_over_255_on_white(data_root):
    """The shipped LEAF sample: every pixel is exactly byte / 255 (the format the NIST build writes)
    and the paper is white (1.0), the polarity the hub route is matched to."""
    from benchmark.data.leaf import leaf_location, read_leaf_split

    users = read_leaf_split(leaf_location(data_root, "femnist").path / "test")
    x = np.concatenate([np.asarray(d["x"], dtype=np.float64) for d in list(users.values())[:20]])
    assert np.array_equal(np.rint(x * 255) / 255, x)
    border = x.reshape(-1, 28, 28)[:, [0, -1]].mean()
    assert border > 0.95
