"""ResNet-18 with GroupNorm for small images (CIFAR 32x32, Tiny-ImageNet 64x64).

3x3 stride-1 stem and no max-pool (the usual CIFAR adaptation), four stages of two
BasicBlocks (64, 128, 256, 512 channels; stages 2-4 halve the resolution, with a 1x1 conv + GN
shortcut), global average pooling and a linear head. GroupNorm keeps the model buffer-free.
FedMLB levels: L = 5 stages (stem, 4 residual stages); penultimate feature = the pooled 512-d
vector.
"""

from __future__ import annotations

import torch
from torch import nn

from benchmark.models.staged import Stage, StagedModel

WIDTHS = (64, 128, 256, 512)


def conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, groups: int):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.norm1 = nn.GroupNorm(groups, cout)
        self.conv2 = conv3x3(cout, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.GroupNorm(groups, cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18GN(StagedModel):
    def __init__(self, input_shape: tuple[int, ...], num_classes: int, groups: int = 2):
        super().__init__()
        channels = input_shape[0]
        self.stem = nn.Sequential(conv3x3(channels, WIDTHS[0]), nn.GroupNorm(groups, WIDTHS[0]), nn.ReLU())
        cin, layers = WIDTHS[0], []
        for i, width in enumerate(WIDTHS):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, width, stride, groups), BasicBlock(width, width, 1, groups)))
            cin = width
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(WIDTHS[-1], num_classes)

    def stage_fns(self) -> list[Stage]:
        return [self.stem, self.layer1, self.layer2, self.layer3, self.layer4]

    def head(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = h.mean(dim=(2, 3))
        return self.fc(z), z


def resnet18_gn(input_shape, num_classes: int, groups: int = 2) -> nn.Module:
    return ResNet18GN(input_shape, num_classes, groups)
