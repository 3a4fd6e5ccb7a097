"""Architecture details of the individual models (sizes, stage shapes, LEAF settings)."""

from __future__ import annotations

import pytest
import torch

from benchmark.models.registry import build_model

RESNET18_GN_PARAMS_10_CLASSES = 11_173_962  # ResNet-18 CIFAR variant; GN affine = BN affine count


@pytest.fixture(scope="module")
def resnet():
    return build_model("resnet18_gn", (3, 32, 32), 10, {}, "default", seed=0)


def test_resnet18_gn_parameter_count(resnet):
    assert sum(p.numel() for p in resnet.parameters()) == RESNET18_GN_PARAMS_10_CLASSES


def test_resnet18_gn_stage_shapes_at_32x32(resnet):
    logits, stages = resnet(torch.randn(1, 3, 32, 32), stages=True)
    assert logits.shape == (1, 10)
    assert [tuple(s.shape[1:]) for s in stages] == [(64, 32, 32), (64, 32, 32), (128, 16, 16), (256, 8, 8), (512, 4, 4)]


def test_resnet18_gn_takes_64x64_with_the_same_parameters():
    model = build_model("resnet18_gn", (3, 64, 64), 200, {}, "default", seed=0)
    logits, z = model(torch.randn(1, 3, 64, 64), features=True)
    assert logits.shape == (1, 200) and z.shape == (1, 512)
    assert sum(p.numel() for p in model.parameters()) == RESNET18_GN_PARAMS_10_CLASSES + 190 * 513


def test_resnet18_gn_uses_the_requested_group_count():
    model = build_model("resnet18_gn", (3, 8, 8), 10, {"groups": 4}, "default", seed=0)
    norms = [m for m in model.modules() if isinstance(m, torch.nn.GroupNorm)]
    assert len(norms) == 1 + 8 * 2 + 3  # stem, two per block, three downsampling shortcuts
    assert {m.num_groups for m in norms} == {4}


def test_same_seed_same_initial_weights():
    a = build_model("celeba_cnn", (3, 84, 84), 2, {}, "default", seed=3)
    b = build_model("celeba_cnn", (3, 84, 84), 2, {}, "default", seed=3)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)


def test_femnist_cnn_parameter_names_unchanged():
    model = build_model("femnist_cnn", (1, 28, 28), 62, {"norm": "group"}, "default", seed=0)
    names = [n for n, _ in model.named_parameters()]
    assert names == [
        "conv1.weight",
        "conv1.bias",
        "norm1.weight",
        "norm1.bias",
        "conv2.weight",
        "conv2.bias",
        "norm2.weight",
        "norm2.bias",
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    assert model.num_stages == 3


def test_shakespeare_lstm_matches_leaf_size_and_rejects_per_position_loss():
    model = build_model("shakespeare_lstm", (80,), 80, {}, "default", seed=0)
    # embedding 80*8, LSTM 4*256*(8+256+2), LSTM 4*256*(256+256+2), dense 256*80+80
    assert sum(p.numel() for p in model.parameters()) == 640 + 272_384 + 526_336 + 20_560
    with pytest.raises(ValueError, match="loss_on"):
        build_model("shakespeare_lstm", (80,), 80, {"loss_on": "all"}, "default", seed=0)


def test_shakespeare_lstm_rejects_float_inputs():
    model = build_model("shakespeare_lstm", (10,), 80, {}, "default", seed=0)
    with pytest.raises(ValueError, match="integer symbol ids"):
        model(torch.rand(2, 10))
