"""Channels-last convolutions: where the flat forward (engine/local.make_forward) hands a model its
image batch and its 4-D convolution weights in NHWC memory order.

Only the forward's own copies change layout: the flat parameter vector, its NCHW views,
aggregation, checkpoints and job ids never see it, and the numbers differ from NCHW by float
rounding only (another reduction order inside the convolution kernels).

The rule, per device (measured: benchmarks/README.md, local_step_speed.py):
- CPU: every model with an nn.Conv2d. oneDNN runs NHWC convolutions without the reorders it
  wraps around NCHW ones, and CPU GroupNorm keeps the NHWC order. The weights are converted
  too: after a 1-channel image (FEMNIST), which fits both layouts and so leaves the first
  convolution NCHW, only the weights' layout makes the next convolutions run NHWC.
- CUDA and others: NCHW. GroupNorm, in every fedbench CNN, makes its input NCHW-contiguous off
  CPU (ATen's group_norm), so NHWC would add two transposes around every norm; not measured on
  a GPU yet.
"""

from __future__ import annotations

import torch
from torch import nn


def channels_last_pays(model: nn.Module, device: torch.device) -> bool:
    """Whether `model`'s forward on `device` should run channels-last (the rule above)."""
    return device.type == "cpu" and any(isinstance(m, nn.Conv2d) for m in model.modules())


def to_channels_last(t: torch.Tensor) -> torch.Tensor:
    """A 4-D tensor with NHWC strides (same values, a copy unless it already has them); as
    permutes, because Tensor.contiguous(memory_format=...) is refused under vmap."""
    return t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
