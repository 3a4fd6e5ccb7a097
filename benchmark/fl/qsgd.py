"""QSGD-style b-bit stochastic quantisation (FedPAQ), per tensor, with a real bit-packed payload.

For a tensor v and s = 2^b − 1 levels: Q(v)_j = ‖v‖·sign(v_j)·ξ_j/s with
ξ_j = ⌊s|v_j|/‖v‖⌋ + Bernoulli(s|v_j|/‖v‖ − ⌊·⌋), so E[Q(v)] = v.
Payload per quantised tensor: its norm as float32 and, per element, 1 sign bit + b level bits,
packed into bytes (padded to a whole byte per tensor). `keep_1d` sends 1-D tensors (biases, norm
affines) as float32 instead.
"""

from __future__ import annotations

from pydantic import Field

from benchmark.fl.base import Codec, StrictParams
from benchmark.fl.flat import ParamSpec
from benchmark.fl.presets import register_modifier, register_preset
from benchmark.fl.registry import CODECS
from benchmark.lazy import torch


class QsgdParams(StrictParams):
    bits: int = Field(4, ge=1, le=15, description="b: level bits per element (plus one sign bit)")
    keep_1d: bool = Field(False, description="send 1-D tensors (biases, norm affines) unquantised")


def pack_codes(codes: torch.Tensor, width: int) -> torch.Tensor:
    """Non-negative ints < 2^width -> uint8 bytes, `width` bits each, LSB first, zero-padded."""
    shifts = torch.arange(width, device=codes.device)
    bits = ((codes.unsqueeze(1) >> shifts) & 1).reshape(-1).to(torch.uint8)
    bits = torch.cat([bits, bits.new_zeros((-len(bits)) % 8)])
    return (bits.view(-1, 8) << torch.arange(8, device=codes.device, dtype=torch.uint8)).sum(1, dtype=torch.uint8)


def unpack_codes(packed: torch.Tensor, width: int, count: int) -> torch.Tensor:
    bits = (packed.unsqueeze(1).long() >> torch.arange(8, device=packed.device)) & 1
    bits = bits.reshape(-1)[: count * width].view(count, width)
    return (bits << torch.arange(width, device=packed.device)).sum(1)


def packed_size(count: int, width: int) -> int:
    return (count * width + 7) // 8


@CODECS.register
class Qsgd(Codec):
    name = "qsgd"
    Params = QsgdParams

    def _quantised(self, spec: ParamSpec) -> list[tuple[slice, bool]]:
        return [(sl, not (self.p.keep_1d and len(shape) == 1)) for (_, sl), shape in zip(spec.slices(), spec.shapes)]

    def encode(self, vec, spec, gen):
        b, levels = self.p.bits, 2**self.p.bits - 1
        norms, packed, raw = [], [], []
        for sl, quantise in self._quantised(spec):
            v = vec[sl].float()
            if not quantise:
                raw.append(v)
                continue
            norm = v.norm()
            scaled = v.abs() * levels / norm if norm > 0 else torch.zeros_like(v)
            floor = scaled.floor()
            u = torch.rand(v.shape, generator=gen, device=gen.device if gen is not None else v.device)
            xi = (floor + (u.to(v.device) < scaled - floor).float()).clamp(max=levels).long()
            negative = (v < 0).long()
            norms.append(norm)
            packed.append(pack_codes(xi | (negative << b), b + 1))
        return {
            "norms": torch.stack(norms) if norms else vec.new_zeros(0),
            "bits": torch.cat(packed) if packed else torch.zeros(0, dtype=torch.uint8, device=vec.device),
            "raw": torch.cat(raw) if raw else vec.new_zeros(0),
        }

    def decode(self, payload, spec):
        b, levels = self.p.bits, 2**self.p.bits - 1
        out = torch.empty(spec.total, device=payload["norms"].device)
        k = byte = raw_at = 0
        for sl, quantise in self._quantised(spec):
            n = sl.stop - sl.start
            if not quantise:
                out[sl] = payload["raw"][raw_at : raw_at + n]
                raw_at += n
                continue
            size = packed_size(n, b + 1)
            codes = unpack_codes(payload["bits"][byte : byte + size], b + 1, n)
            sign = 1.0 - 2.0 * (codes >> b).float()
            out[sl] = payload["norms"][k] * sign * (codes & levels).float() / levels
            k, byte = k + 1, byte + size
        return out


QSGD = {"codec": "qsgd", "bits": 4}
register_preset("fedpaq", "FedPAQ", {"rule": "average"}, uplink=dict(QSGD))
register_modifier("paq", "PAQ", uplink=dict(QSGD))
