"""benchmark/torch_format.py writes what torch.load(weights_only=True) reads as torch.save's file of the
same data: a FedAc job's final_model.pt and checkpoints are written without torch."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from benchmark.torch_format import STORAGES, save, writable


def written(obj, tmp_path):
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        save(obj, f)
    return torch.load(path, map_location="cpu", weights_only=True)


def assert_same(loaded, expected):
    assert type(loaded) is type(expected)
    if isinstance(expected, torch.Tensor):
        assert (
            loaded.dtype == expected.dtype and loaded.shape == expected.shape and loaded.stride() == expected.stride()
        )
        assert torch.equal(loaded, expected) and not loaded.requires_grad
    elif isinstance(expected, dict):
        assert list(loaded) == list(expected)
        for key in expected:
            assert_same(loaded[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(loaded) == len(expected)
        for a, b in zip(loaded, expected):
            assert_same(a, b)
    else:
        assert loaded == expected


@pytest.mark.parametrize("dtype", sorted(STORAGES, key=str))
@pytest.mark.parametrize("shape", [(1, 123), (0,), (), (3, 4, 5), (7,)])
def test_an_array_loads_as_the_tensor_torch_save_writes(tmp_path, dtype, shape):
    rng = np.random.default_rng(0)
    array = np.asarray((rng.standard_normal(shape) * 100).astype(dtype))
    assert_same(written({"fc.weight": array}, tmp_path), {"fc.weight": torch.from_numpy(array.copy())})


def test_a_checkpoint_of_plain_data_and_several_arrays_loads_as_torch_saves_it(tmp_path):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    obj = {
        "simulation": {"round": 7, "engine": "fedac_batched", "ema": None, "ok": True, "lr": 0.05},
        "data_fingerprint": "0123abcd",
        "arrays": [a, a.T, np.float32([1.5, -2.0])],  # a non-contiguous view is written contiguous
        "pair": (1, "x"),
    }
    expected = {
        **obj,
        "arrays": [torch.from_numpy(a.copy()), torch.from_numpy(a.T.copy()), torch.tensor([1.5, -2.0])],
    }
    assert_same(written(obj, tmp_path), expected)
    buffer = io.BytesIO()
    torch.save(expected, buffer)  # torch's own file of it loads to the same
    assert_same(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True), written(obj, tmp_path))


def test_what_it_cannot_write_is_refused_before_anything_is_written(tmp_path):
    assert not writable({"w": torch.zeros(2)}) and not writable({"w": np.zeros(2, dtype=np.complex64)})
    assert not writable({"w": object()}) and writable({"w": np.zeros(2), "n": [1, 2.0, "s", None]})
    with pytest.raises(TypeError, match="numpy arrays"):
        save({"w": torch.zeros(2)}, io.BytesIO())
