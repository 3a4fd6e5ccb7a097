"""Models as one flat parameter vector.

Server state, client state and messages are flat tensors, so aggregation is a single
weighted reduction and a codec sees the whole update. `ParamSpec` maps between the flat
vector and the named tensors that `torch.func.functional_call` needs (as views, so
gradients flow back to the flat vector).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.lazy import nn, torch


@dataclass(frozen=True)
class ParamSpec:
    names: tuple[str, ...]
    shapes: tuple[torch.Size, ...]

    @classmethod
    def of(cls, model: nn.Module) -> ParamSpec:
        if any(True for _ in model.buffers()):
            raise ValueError(
                f"{type(model).__name__} has buffers (e.g. BatchNorm statistics); fedbench models "
                "must be buffer-free (use GroupNorm) so a flat parameter vector is the whole state"
            )
        named = list(model.named_parameters())
        return cls(tuple(n for n, _ in named), tuple(p.shape for _, p in named))

    @property
    def numels(self) -> list[int]:
        return [int(torch.Size(s).numel()) for s in self.shapes]

    @property
    def total(self) -> int:
        return sum(self.numels)

    def slices(self) -> list[tuple[str, slice]]:
        out, start = [], 0
        for name, n in zip(self.names, self.numels):
            out.append((name, slice(start, start + n)))
            start += n
        return out

    def flatten(self, tensors: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([tensors[n].reshape(-1) for n in self.names])

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named views into `flat` (last dimension); leading batch dimensions are kept.

        One `split` rather than a slice per tensor: the backward of many slices materialises a
        full-size zero gradient per parameter tensor, which dominated ResNet-18's backward on CPU
        (benchmarks/README.md, "Measurements behind code comments").
        """
        lead = flat.shape[:-1]
        pieces = flat.split(self.numels, dim=-1)
        return {name: piece.reshape(*lead, *shape) for name, piece, shape in zip(self.names, pieces, self.shapes)}


def flat_params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
