"""The stage protocol of models/registry.py, written once for every staged model.

A staged model is a sequence of stages followed by a head. Subclasses provide `stage_fns()`
(callables run in order; bound methods are fine, so existing parameter names need not change)
and `head(h) -> (logits, penultimate feature)`. This class turns them into

  forward(x)                 -> logits
  forward(x, features=True)  -> (logits, penultimate feature)
  forward(x, stages=True)    -> (logits, [output of stage 0, ..., stage L-1])
  forward(h, start=k)        -> logits, h being the output of stage k-1
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

Stage = Callable[[torch.Tensor], torch.Tensor]


class StagedModel(nn.Module):
    def stage_fns(self) -> list[Stage]:
        raise NotImplementedError

    def head(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    @property
    def num_stages(self) -> int:
        return len(self.stage_fns())

    def forward(self, x: torch.Tensor, features: bool = False, stages: bool = False, start: int = 0):
        fns = self.stage_fns()
        if not 0 <= start <= len(fns):
            raise ValueError(f"start must be in 0..{len(fns)}, got {start}")
        if stages and (features or start):
            # one return shape per call: stage outputs are only defined for a full forward pass
            raise ValueError("stages=True cannot be combined with features=True or start>0")
        outputs = []
        h = x
        for fn in fns[start:]:
            h = fn(h)
            if stages:
                outputs.append(h)
        logits, feature = self.head(h)
        if stages:
            return logits, outputs
        return (logits, feature) if features else logits
