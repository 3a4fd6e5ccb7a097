"""Batched device-side augmentation (benchmark/engine/augment.py) and the image preprocessor."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch.overrides import TorchFunctionMode

from benchmark.data.source import SourceData
from benchmark.engine import augment as aug
from benchmark.engine.fed_data import FederatedData
from benchmark.job.settings import AugmentConfig, LocalTraining

CIFAR_LIKE = AugmentConfig(crop_padding=2, flip=True, rotate_degrees=10)
MEAN, STD = (0.5, 0.4, 0.3), (0.25, 0.2, 0.1)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def images(n: int = 8, c: int = 3, h: int = 6, w: int = 6) -> torch.Tensor:
    """Distinct strictly positive pixels, so zeros can only come from padding."""
    return torch.arange(1, n * c * h * w + 1, dtype=torch.float32).view(n, c, h, w)


def preprocessor(cfg: AugmentConfig, mean=MEAN, std=STD):
    src = SourceData(torch.zeros(0), torch.zeros(0), torch.zeros(0), torch.zeros(0), 10, "image", mean=mean, std=std)
    return aug.image_preprocessor(src, SimpleNamespace(dataset=SimpleNamespace(augment=cfg)))


def test_same_seed_same_output_other_seed_differs():
    x = images(16)
    a, b, c = (aug.augment(x, CIFAR_LIKE, gen(s)) for s in (7, 7, 8))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_window_is_the_crop_of_the_zero_padded_image_then_the_mirror():
    x = images(2, 1, 4, 4)
    padded = torch.zeros(2, 1, 8, 8)
    padded[:, :, 2:6, 2:6] = x
    top, left = torch.tensor([0, 3]), torch.tensor([4, 1])
    out = aug.window(x, 2, top, left, torch.tensor([False, True]))
    assert torch.equal(out[0], padded[0, :, 0:4, 4:8])
    assert torch.equal(out[1], padded[1, :, 3:7, 1:5].flip(-1))
    # offset = padding, no mirror: the identity
    assert torch.equal(aug.window(x, 2, torch.tensor([2, 2]), torch.tensor([2, 2]), torch.tensor([False, False])), x)


def test_random_crop_picks_one_of_the_valid_windows_and_uses_them_all():
    p, x = 1, images(256, 2, 5, 5)
    out = aug.random_window(x, p, False, gen(0))
    no = torch.zeros(256, dtype=torch.bool)
    offsets = [(t, l) for t in range(2 * p + 1) for l in range(2 * p + 1)]
    candidates = torch.stack([aug.window(x, p, torch.full((256,), t), torch.full((256,), l), no) for t, l in offsets])
    matches = (candidates == out).flatten(2).all(-1)  # (offsets, N)
    assert torch.all(matches.sum(0) == 1)  # each image is exactly one padded window
    assert torch.all(matches.any(1))  # every offset occurs in 256 draws


def test_random_flip_mirrors_about_half_the_images_and_keeps_each_row_multiset():
    x = images(256)
    out = aug.random_window(x, 0, True, gen(0))
    flipped = (out == x.flip(-1)).flatten(1).all(1)
    assert torch.all(flipped | (out == x).flatten(1).all(1))
    assert 80 < int(flipped.sum()) < 176
    assert torch.equal(out.sort(-1).values, x.sort(-1).values)


def test_rotation_by_zero_is_the_identity_and_by_90_degrees_is_rot90():
    x = images(4, 3, 7, 7)
    assert torch.equal(aug.rotate(x, torch.zeros(4)), x)
    assert torch.equal(aug.rotate(x, torch.full((4,), math.pi / 2)), torch.rot90(x, 1, dims=(-2, -1)))


def test_rotation_is_rigid_in_pixels_on_non_square_images():
    x = images(2, 1, 8, 16)
    out = aug.rotate(x, torch.full((2,), math.pi / 2))
    # the central 8x8 square turns in place; what comes from outside the image is zero
    assert torch.equal(out[..., 4:12], torch.rot90(x[..., 4:12], 1, dims=(-2, -1)))
    assert torch.all(out[..., :4] == 0) and torch.all(out[..., 12:] == 0)


def test_random_rotation_moves_pixels_no_further_than_the_configured_angle_allows():
    n, size, degrees = 64, 9, 10.0
    x = images(n, 1, size, size)
    out = aug.random_rotate(x, degrees, gen(0))
    # pixel values are distinct: decode where each output pixel was taken from
    i, j = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    source = out[:, 0].long() - 1 - torch.arange(n).view(n, 1, 1) * size * size
    taken = out[:, 0] > 0  # zeros come from outside the image
    moved = torch.hypot((source // size - i).float(), (source % size - j).float())[taken]
    radius = torch.hypot(i - 4.0, j - 4.0).expand(n, size, size)[taken]
    # a rotation by a moves a pixel at radius r by 2 r sin(a/2); nearest sampling adds <= sqrt(0.5)
    assert torch.all(moved <= 2 * radius * math.sin(math.radians(degrees) / 2) + math.sqrt(0.5) + 1e-4)
    assert moved.max() >= 1  # it did rotate
    assert torch.equal(out[..., 4, 4], x[..., 4, 4])  # about the centre


def test_preprocessor_normalises_uint8_per_channel():
    x = torch.tensor([0, 51, 255], dtype=torch.uint8).view(1, 3, 1, 1).expand(2, 3, 4, 4).contiguous()
    out = preprocessor(AugmentConfig())(x, True, gen(0))
    expected = [(0 / 255 - MEAN[0]) / STD[0], (51 / 255 - MEAN[1]) / STD[1], (1 - MEAN[2]) / STD[2]]
    assert torch.allclose(out, torch.tensor(expected).view(1, 3, 1, 1).expand(2, 3, 4, 4), atol=1e-6)


def test_padding_is_black_before_normalisation():
    x = torch.full((4, 3, 4, 4), 255, dtype=torch.uint8)
    out = preprocessor(AugmentConfig(crop_padding=4))(x, True, gen(0))
    black = ((0 - torch.tensor(MEAN)) / torch.tensor(STD)).view(1, 3, 1, 1)
    white = ((1 - torch.tensor(MEAN)) / torch.tensor(STD)).view(1, 3, 1, 1)
    assert torch.all(torch.isclose(out, black) | torch.isclose(out, white))


def test_test_data_is_never_augmented():
    x = torch.randint(0, 256, (8, 3, 6, 6), dtype=torch.uint8)
    plain = preprocessor(AugmentConfig())(x, False, None)
    assert torch.equal(preprocessor(CIFAR_LIKE)(x, False, None), plain)
    with pytest.raises(ValueError, match="generator"):
        preprocessor(CIFAR_LIKE)(x, True, None)


def test_float_images_are_augmented_only_if_configured_and_not_renormalised():
    x = torch.rand(32, 1, 5, 5)
    assert torch.equal(preprocessor(AugmentConfig())(x, True, gen(0)), x)
    out = preprocessor(AugmentConfig(flip=True))(x, True, gen(0))
    same = (out == x).flatten(1).all(1)
    assert torch.all(same | (out == x.flip(-1)).flatten(1).all(1)) and not torch.all(same)


class OpCounter(TorchFunctionMode):
    """Counts torch function calls (a per-sample loop would multiply them)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_batch_costs_the_same_ops_as_one_image():
    """No per-sample Python: the number of tensor ops does not grow with the batch (4 vs 256)."""
    prep = preprocessor(CIFAR_LIKE)
    counts = []
    for n in (4, 256):
        x = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8)
        with OpCounter() as counter:
            out = prep(x, True, gen(0))
        assert out.shape == (n, 3, 8, 8) and out.dtype == torch.float32
        counts.append(counter.calls)
    assert counts[0] == counts[1]


def test_registered_for_images_and_reproducible_through_client_batches():
    from benchmark.engine.setup import PREPROCESSORS

    assert PREPROCESSORS["image"] is aug.image_preprocessor
    x = torch.randint(0, 256, (40, 3, 6, 6), dtype=torch.uint8)
    src = SourceData(x, torch.arange(40) % 10, x[:4], torch.arange(4), 10, "image", mean=MEAN, std=STD)
    data = FederatedData(src, [torch.arange(20), torch.arange(20, 40)], preprocessor(CIFAR_LIKE))
    local = LocalTraining(steps=3, batch_size=8)
    first, again = data.client_batches(0, 5, 1, local), data.client_batches(0, 5, 1, local)
    later = data.client_batches(0, 6, 1, local)
    assert all(torch.equal(a.x, b.x) for a, b in zip(first, again))
    assert not all(torch.equal(a.x, b.x) for a, b in zip(first, later))
