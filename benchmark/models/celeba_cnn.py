"""LEAF's CelebA CNN: four blocks of 3x3 'same' conv (32 channels) + norm + 2x2 max-pool +
ReLU, then a linear layer (2 classes: smiling or not). GroupNorm replaces LEAF's
BatchNorm (buffer-free). LEAF pools with TensorFlow's padding='same', which keeps the odd last
row/column: ceil_mode=True does the same, so 84 -> 42 -> 21 -> 11 -> 6 and the penultimate
feature has 32*6*6 = 1152 dims. Stages (FedMLB levels, L = 4): the four conv blocks.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from benchmark.models.staged import Stage, StagedModel

CHANNELS = 32
BLOCKS = 4


def conv_block(cin: int, groups: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, CHANNELS, 3, padding=1),
        nn.GroupNorm(groups, CHANNELS),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        nn.ReLU(),
    )


class CelebaCNN(StagedModel):
    def __init__(self, input_shape: tuple[int, ...], num_classes: int = 2, groups: int = 2):
        super().__init__()
        channels, height, width = input_shape
        self.blocks = nn.ModuleList(conv_block(channels if i == 0 else CHANNELS, groups) for i in range(BLOCKS))
        for _ in range(BLOCKS):
            height, width = math.ceil(height / 2), math.ceil(width / 2)
        self.fc = nn.Linear(CHANNELS * height * width, num_classes)

    def stage_fns(self) -> list[Stage]:
        return list(self.blocks)

    def head(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = h.flatten(1)
        return self.fc(z), z


def celeba_cnn(input_shape=(3, 84, 84), num_classes: int = 2, groups: int = 2) -> nn.Module:
    return CelebaCNN(tuple(input_shape), num_classes, groups)
