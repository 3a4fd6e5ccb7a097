import numpy as np
import pytest
import torch

from benchmark.data.partition import partition
from benchmark.data.source import SourceData
from benchmark.job.settings import SplitConfig


def labelled(n: int = 2000, classes: int = 10, users: int | None = None) -> SourceData:
    y = torch.arange(n) % classes
    owners = torch.arange(n) % users if users else None
    return SourceData(torch.zeros(n, 1), y, torch.zeros(1, 1), y[:1], classes, "vector", owners)


def label_skew(src: SourceData, clients: list[torch.Tensor]) -> float:
    """Mean over clients of the total-variation distance between client and global label histograms."""
    c = src.num_classes
    glob = torch.bincount(src.train_y, minlength=c).double()
    glob /= glob.sum()
    tvs = []
    for idx in clients:
        h = torch.bincount(src.train_y[idx], minlength=c).double()
        tvs.append(0.5 * (h / h.sum() - glob).abs().sum().item())
    return float(np.mean(tvs))


def test_iid_equal_disjoint_shares():
    src = labelled(1005)
    clients = partition(src, 10, SplitConfig(kind="iid"))
    assert [len(c) for c in clients] == [100] * 10
    assert len(torch.cat(clients).unique()) == 1000


def test_balanced_dirichlet_equal_sizes_and_skew_grows_as_alpha_shrinks():
    src = labelled()
    skews = []
    for alpha in (100.0, 1.0, 0.1):
        clients = partition(src, 20, SplitConfig(kind="dirichlet", alpha=alpha, seed=3))
        assert [len(c) for c in clients] == [100] * 20
        assert len(torch.cat(clients).unique()) == 2000
        skews.append(label_skew(src, clients))
    assert skews[0] < 0.15 < skews[1] < skews[2], skews


def test_unbalanced_dirichlet_respects_min_size_and_covers_everything():
    src = labelled()
    cfg = SplitConfig(kind="dirichlet_unbalanced", alpha=0.3, min_size=30, seed=1)
    clients = partition(src, 20, cfg)
    sizes = [len(c) for c in clients]
    assert min(sizes) >= 30 and len(set(sizes)) > 1
    assert sorted(torch.cat(clients).tolist()) == list(range(2000))  # every example, once
    assert [c.tolist() for c in partition(src, 20, cfg)] == [c.tolist() for c in clients]  # seeded
    assert label_skew(src, clients) > label_skew(src, partition(src, 20, SplitConfig(kind="iid")))


def test_unbalanced_dirichlet_impossible_min_size_is_a_clear_error():
    with pytest.raises(ValueError, match="min_size"):
        partition(labelled(100), 10, SplitConfig(kind="dirichlet_unbalanced", alpha=0.01, min_size=10))
    with pytest.raises(ValueError, match="training examples"):
        partition(labelled(100), 10, SplitConfig(kind="dirichlet_unbalanced", alpha=1, min_size=11))


def test_natural_random_is_seeded_and_differs_from_first():
    src = labelled(600, users=30)
    first = partition(src, 5, SplitConfig(kind="natural"))
    rand = partition(src, 5, SplitConfig(kind="natural", select="random", seed=4))
    again = partition(src, 5, SplitConfig(kind="natural", select="random", seed=4))
    other = partition(src, 5, SplitConfig(kind="natural", select="random", seed=5))

    def owners(clients):
        return [int(src.train_users[c[0]]) for c in clients]

    assert owners(first) == [0, 1, 2, 3, 4]
    assert owners(rand) == owners(again) and owners(rand) != owners(first) and owners(rand) != owners(other)
    assert all(bool((src.train_users[c] == src.train_users[c[0]]).all()) for c in rand)
