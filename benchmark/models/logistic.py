"""Logistic regression for convex problems: multinomial (`fc.weight`, `fc.bias`), and binary
without a bias (`fc.weight` only, FedAc's a9a protocol)."""

from __future__ import annotations

import math

import torch
from torch import nn


class Logistic(nn.Module):
    def __init__(self, input_shape, num_classes: int):
        super().__init__()
        self.fc = nn.Linear(math.prod(input_shape), num_classes)

    def forward(self, x, features: bool = False):
        z = x.flatten(1)
        logits = self.fc(z)
        return (logits, z) if features else logits


def logistic(input_shape, num_classes: int) -> nn.Module:
    return Logistic(input_shape, num_classes)


class BinaryLogistic(nn.Module):
    """One weight vector w, no bias; logits [0, xᵀw]. With class 1 = label +1, the softmax
    cross-entropy of these logits is exactly log(1 + exp(−y xᵀw)), y = ±1 (FedAc's objective)."""

    def __init__(self, input_shape, num_classes: int):
        super().__init__()
        if num_classes != 2:
            raise ValueError(f"binary_logistic needs a two-class dataset; this one has {num_classes} classes")
        self.fc = nn.Linear(math.prod(input_shape), 1, bias=False)

    def forward(self, x, features: bool = False):
        z = x.flatten(1)
        score = self.fc(z)
        logits = torch.cat([torch.zeros_like(score), score], 1)
        return (logits, z) if features else logits


def binary_logistic(input_shape, num_classes: int) -> nn.Module:
    return BinaryLogistic(input_shape, num_classes)
