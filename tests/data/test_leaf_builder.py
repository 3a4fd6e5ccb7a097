import gzip
import json

import pytest
import yaml
from fedtest import REPO

from benchmark.data.source import load_dataset
from leaf_data.__main__ import main as leaf_main
from leaf_data.shakespeare import (
    SEQ_LEN,
    BuildOptions,
    build,
    read_raw,
    sample_users,
    split_user,
)
from leaf_data.shakespeare_text import users_text

RAW = """Header of the etext, with a SMALL PRINT notice.

1609

THE SONNETS

by William Shakespeare

  From fairest creatures we desire increase,
  That thereby beauty's rose might never die,
THE END

<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC.>>

1600

A TINY PLAY

by William Shakespeare

ACT I. SCENE 1.
Enter HERO and FIRST LORD

  HERO. Now is the winter of our discontent made glorious summer by this sun,
    and all the clouds that lour'd upon our house in the deep bosom buried.
  FIRST LORD. What news? What news? What news? What news? What news?
    What news?
  Hero. A horse, a horse, my kingdom for a horse, and a stable, and some hay.
                                                           Exeunt

    Now, the last word.
  FIRST LORD. Away!
  PAGE. Two lines
    only.
THE END

1593

THE COMEDY OF ERRORS

by William Shakespeare

ACT I. SCENE 1

DUKE. Merchant of Syracuse, plead no more; I am not partial to infringe our laws,
  the enmity and discord which of late sprung
from the rancorous outrage of your duke.
AEGEON. Proceed, Solinus.
<<A NOTICE ENDS THE SPEECH>>
THE END
"""


def test_parses_plays_and_characters_by_leafs_rules():
    """Speakers upper-cased (Hero = HERO); indented lines stay with the speaker across a blank line,
    stage directions included; at most two lines: dropped (PAGE); The Comedy of Errors unindented;
    LEAF's read-back: every line ends in a space, runs of spaces collapse to one."""
    users = users_text(RAW)
    assert sorted(users) == [
        "A_TINY_PLAY_FIRST_LORD",
        "A_TINY_PLAY_HERO",
        "THE_COMEDY_OF_ERRORS_DUKE",
    ]  # AEGEON: 1 line
    hero = users["A_TINY_PLAY_HERO"]
    assert hero.startswith("Now is the winter") and "sun, and all the clouds" in hero
    assert hero.endswith("some hay. Exeunt Now, the last word. ") and "  " not in hero
    assert users["A_TINY_PLAY_FIRST_LORD"] == "What news? " * 6 + "Away! "
    assert users["THE_COMEDY_OF_ERRORS_DUKE"].startswith("Merchant of Syracuse")
    assert users["THE_COMEDY_OF_ERRORS_DUKE"].endswith("rancorous outrage of your duke. ")


# Two works with one title (their characters share ids) and a third that shares a name with them.
TWIN_TITLES = """First line, which LEAF skips.

THE SONNETS

by William Shakespeare

  One. Sonnet lines are not speeches.

TWIN

by William Shakespeare

  LORD. a
    b
    c
  FOOL. d
    e
  KING. f
THE END

TWIN

by William Shakespeare

  LORD. g
    h
    i
  FOOL. j
    k
  KING. l
    m
    n
THE END

OTHER

by William Shakespeare

  KING. o
    p
    q
  LORD. r
"""


def test_characters_sharing_an_id_share_a_user_and_the_two_line_rule_is_per_play():
    """TWIN's LORD in both works is one user, lines in order; FOOL has two lines in each work, so is
    dropped though four lines share the id; KING of OTHER stays apart from TWIN's KING."""
    assert users_text(TWIN_TITLES) == {"TWIN_LORD": "a b c g h i ", "TWIN_KING": "l m n ", "OTHER_KING": "o p q "}


def test_sample_split_follows_leafs_split_data():
    """n < 2: dropped; n = 2: one each side; otherwise max(1, int(tf * n)) train, test from 79 later."""

    def sizes(n, **opts):
        train, test = split_user(list(range(n)), list(range(n)), BuildOptions(**opts))
        return (train[1][0], train[1][-1], len(train[1])) if train[1] else None, test[1][:1] + test[1][-1:]

    assert sizes(1, test_gap=0) == (None, [])
    assert sizes(2, train_fraction=0.9, test_gap=0) == ((0, 0, 1), [1, 1])
    assert sizes(3, train_fraction=0.1, test_gap=0) == ((0, 0, 1), [1, 2])  # int(0.3) = 0 -> 1
    assert sizes(1000) == ((0, 899, 900), [979, 999])  # 900 train; 979..999 test
    assert sizes(100)[1] == []  # 90 train; the test would start at 169


def test_min_samples_keeps_users_with_at_least_k(tmp_path):
    raw = tmp_path / "works.txt"
    raw.write_text(RAW)
    hero = len(users_text(RAW)["A_TINY_PLAY_HERO"]) - SEQ_LEN
    opts = dict(train_fraction=0.5, test_gap=0)
    assert build(raw, tmp_path / "a", BuildOptions(min_samples=hero, **opts))["users_kept"] == 1  # HERO alone
    assert build(raw, tmp_path / "b", BuildOptions(min_samples=hero + 1, **opts))["users_kept"] == 0  # LEAF: >= k


def test_niid_sampling_cuts_the_last_user_to_the_remainder():
    texts = {"a": "x" * 90, "b": "y" * 85}  # 10 and 5 windows
    sampled = sample_users(texts, BuildOptions(fraction=0.8, sampling_seed=3))  # int(0.8 * 15) = 12 windows
    counts = {u: len(y) for u, (_, y) in sampled.items()}
    assert sum(counts.values()) == 12 and sorted(counts.items()) in ([("a", 10), ("b", 2)], [("a", 7), ("b", 5)])


def test_build_writes_leaf_json_the_loader_reads(tmp_path):
    raw = tmp_path / "works.txt.gz"
    with gzip.open(raw, "wt") as f:
        f.write(RAW)
    stats = build(raw, tmp_path / "shakespeare", BuildOptions(min_samples=50, train_fraction=0.5, test_gap=0))
    assert stats["users"] == 2 and stats["users_kept"] == 2  # FIRST LORD's 72 characters make no window
    (train_file,) = (tmp_path / "shakespeare" / "data" / "train").glob("*.json")
    blob = json.loads(train_file.read_text())
    hero = blob["user_data"]["A_TINY_PLAY_HERO"]
    text = users_text(RAW)["A_TINY_PLAY_HERO"]
    assert hero["x"][0] == text[:80] and hero["y"][0] == text[80] and hero["x"][1] == text[1:81]
    assert blob["num_samples"][blob["users"].index("A_TINY_PLAY_HERO")] == (len(text) - 80) // 2
    src = load_dataset("shakespeare", {}, tmp_path)
    assert src.train_x.shape[1] == 80 and len(src.user_names) == 2


def test_default_gap_keeps_test_windows_off_the_training_text(tmp_path):
    raw = tmp_path / "works.txt"
    raw.write_text(RAW)
    build(raw, tmp_path / "out", BuildOptions(train_fraction=0.2))
    train = json.loads(next((tmp_path / "out" / "data" / "train").glob("*.json")).read_text())["user_data"]
    test = json.loads(next((tmp_path / "out" / "data" / "test").glob("*.json")).read_text())["user_data"]
    text = users_text(RAW)["A_TINY_PLAY_HERO"]
    n_train = len(train["A_TINY_PLAY_HERO"]["y"])
    assert test["A_TINY_PLAY_HERO"]["x"][0] == text[n_train + 79 : n_train + 159]  # LEAF: 79 windows later


def test_niid_fraction_samples_whole_users_and_is_seeded(tmp_path):
    raw = tmp_path / "works.txt"
    raw.write_text(RAW)
    a = build(raw, tmp_path / "a", BuildOptions(fraction=0.3, sampling_seed=1, train_fraction=0.5, test_gap=0))
    b = build(raw, tmp_path / "b", BuildOptions(fraction=0.3, sampling_seed=1, train_fraction=0.5, test_gap=0))
    assert a == b and 1 <= a["users_sampled"] < 3


def test_iid_pools_windows_and_deals_them_to_users(tmp_path):
    raw = tmp_path / "works.txt"
    raw.write_text(RAW)
    texts = users_text(RAW)
    opts = BuildOptions(iid=True, fraction=0.5, iid_users=4, sampling_seed=2)
    sampled = sample_users(texts, opts)
    total = sum(max(0, len(t) - 80) for t in texts.values())
    assert list(sampled) == [f"iid_{k:04d}" for k in range(4)]
    assert sum(len(y) for _, y in sampled.values()) == int(0.5 * total)
    for xs, ys in sampled.values():
        assert all(any(x + y in t for t in texts.values()) for x, y in zip(xs, ys))  # real window + next char
    assert sample_users(texts, opts) == sampled


def test_cli_missing_raw_file_exits_2(tmp_path, capsys):
    assert leaf_main(["shakespeare", "--raw", str(tmp_path / "nope.txt.gz"), "--out", str(tmp_path)]) == 2
    assert "nope.txt.gz does not exist" in capsys.readouterr().err


@pytest.mark.realdata
def test_complete_works_yield_leafs_user_counts(data_root):
    """LEAF's rules on the shipped text: 1,130 users, 4,226,206 samples (LEAF publishes 1,129 and
    4,226,158: one 48-sample user fewer, see leaf_data/README.md); 660 after the default sample split
    (train fraction 0.9, test from 79 windows on) — the count FedACG's Shakespeare suite runs."""
    texts = users_text(read_raw(data_root / "shakespeare-complete-works.txt.gz"))
    windows = [len(t) - SEQ_LEN for t in texts.values() if len(t) > SEQ_LEN]
    assert len(windows) == 1_130 and sum(windows) == 4_226_206  # LEAF reports 1,129 and 4,226,158
    opts = BuildOptions()  # `fedbench data prepare shakespeare` defaults
    kept = sum(all(part[1] for part in split_user(range(n), range(n), opts)) for n in windows)
    assert kept == 660
    suite = yaml.safe_load((REPO / "suites" / "papers" / "fedacg.leaf.yaml").read_text())
    (entry,) = [d for d in suite["datasets"] if d["name"] == "shakespeare"]
    assert entry["num_clients"] == kept  # the paper suite runs on what `data prepare` builds
