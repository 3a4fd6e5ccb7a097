"""LEAF's FEMNIST CNN: two 5x5 conv layers (32, 64 channels, 'same' padding) each followed by
2x2 max-pool, a 2048-unit dense layer and the 62-way output. `norm: group` adds GroupNorm after
each convolution, as in the FedACG code's variant.

Stages (FedMLB levels, L = 3): conv block 1, conv block 2, fc1; the penultimate feature is the
2048-d fc1 output, the head is fc2."""

from __future__ import annotations

import torch
from torch import nn

from benchmark.models.staged import Stage, StagedModel


def _norm(kind: str, channels: int, groups: int) -> nn.Module:
    if kind == "group":
        return nn.GroupNorm(groups, channels)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"norm must be 'none' or 'group', got {kind!r}")


class FemnistCNN(StagedModel):
    def __init__(self, input_shape, num_classes: int = 62, norm: str = "none", groups: int = 2):
        super().__init__()
        channels, height, width = input_shape
        self.conv1 = nn.Conv2d(channels, 32, 5, padding=2)
        self.norm1 = _norm(norm, 32, groups)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.norm2 = _norm(norm, 64, groups)
        self.fc1 = nn.Linear(64 * (height // 4) * (width // 4), 2048)
        self.fc2 = nn.Linear(2048, num_classes)

    def _block1(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max_pool2d(torch.relu(self.norm1(self.conv1(x))), 2)

    def _block2(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max_pool2d(torch.relu(self.norm2(self.conv2(x))), 2)

    def _dense(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc1(x.flatten(1)))

    def stage_fns(self) -> list[Stage]:
        return [self._block1, self._block2, self._dense]

    def head(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.fc2(h), h


def femnist_cnn(input_shape, num_classes: int, norm: str = "none", groups: int = 2) -> nn.Module:
    return FemnistCNN(input_shape, num_classes, norm, groups)
