"""Multinomial logistic regression: exactly `fc.weight` and `fc.bias` (convex problems)."""

from __future__ import annotations

import math

from torch import nn

from benchmark.models.registry import register_model


class Logistic(nn.Module):
    def __init__(self, input_shape, num_classes: int):
        super().__init__()
        self.fc = nn.Linear(math.prod(input_shape), num_classes)

    def forward(self, x, features: bool = False):
        z = x.flatten(1)
        logits = self.fc(z)
        return (logits, z) if features else logits


@register_model("logistic")
def logistic(input_shape, num_classes: int) -> nn.Module:
    return Logistic(input_shape, num_classes)
