"""torch's CPU random streams drawn with numpy, bit for bit, so that a job whose numbers were defined by
torch's seeded draws (the FedAc protocol's samples and w₀) runs without importing torch (0.4 s of wall,
~1.2 s of CPU) and keeps its job id and its numbers. tests/foundation/test_torch_streams.py checks each
function against torch over many seeds, shapes and bounds.

What is reproduced (torch's ATen CPU source: CPUGeneratorImpl, DistributionTemplates.h, avx_mathfun.h):

- the generator is MT19937; `manual_seed(s)` runs the standard init_genrand on s's low 32 bits, as
  numpy's legacy seeding of `RandomState` does; `random()` is one 32-bit output;
- `randint(n, shape)` is a serial loop in C order of `random() % n` for n < 2²⁸, and of `random64() % n`
  above (random64 = the next two words, the first as the high half; found by testing, not in the brief);
- float32 `uniform_(a, b)`: x = (random() & (2²⁴ − 1)) · 2⁻²⁴, then x·(b − a) + a in float32 with the
  multiply-add fused (one rounding), a, b and b − a in float32;
- float32 `randn` of ≥ 16 contiguous values: every value drawn as a uniform in [0, 1) first, then
  Box-Muller on each block of 16 (pairs j, j + 8) with avx_mathfun's Cephes log and sincos, multiply-adds
  fused as the shipped wheels compile them; a size that is not a multiple of 16 redraws 16 fresh
  uniforms for a last, overlapping block. (Fewer than 16 values take another path: not reproduced.)
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32


class TorchGenerator:
    """`torch.Generator().manual_seed(seed)` on the CPU: its 32-bit words, drawn in order."""

    def __init__(self, seed: int):
        self._state = np.random.RandomState(seed & 0xFFFFFFFF)  # legacy seeding = init_genrand

    def words(self, count: int) -> np.ndarray:
        """The next `count` outputs of `random()`, as uint32."""
        return self._state._bit_generator.random_raw(count).astype(np.uint32)

    def randint(self, n: int, shape: tuple[int, ...]) -> np.ndarray:
        """`torch.randint(n, shape, generator=g)`, int64."""
        if not 0 < n < 1 << 63:
            raise ValueError(f"randint's bound {n} is outside 1..2^63 - 1")
        count = math.prod(shape)
        if n < 1 << 28:
            return (self.words(count).astype(np.int64) % n).reshape(shape)
        pairs = self.words(2 * count).astype(np.uint64)
        return (((pairs[0::2] << np.uint64(32)) | pairs[1::2]) % np.uint64(n)).astype(np.int64).reshape(shape)

    def uniform(self, shape: tuple[int, ...], low: float, high: float) -> np.ndarray:
        """`torch.empty(shape).uniform_(low, high, generator=g)`, float32."""
        return _uniform(self.words(math.prod(shape)), low, high).reshape(shape)

    def randn(self, shape: tuple[int, ...]) -> np.ndarray:
        """`torch.randn(shape, generator=g)`, float32, for 16 values or more."""
        size = math.prod(shape)
        if size < 16:
            raise ValueError(f"randn of {size} values: torch draws fewer than 16 another way, not reproduced here")
        data = _uniform(self.words(size), 0.0, 1.0)
        for i in range(0, size - 15, 16):
            data[i : i + 16] = _box_muller_16(data[i : i + 16])
        if size % 16:
            data[size - 16 :] = _box_muller_16(_uniform(self.words(16), 0.0, 1.0))
        return data.reshape(shape)


def _uniform(words: np.ndarray, low: float, high: float) -> np.ndarray:
    x = (words & np.uint32((1 << 24) - 1)).astype(F32) * F32(2.0**-24)
    a, b = F32(low), F32(high)
    return _fma(x, b - a, a)


def _fma(a, b, c) -> np.ndarray:
    """a·b + c rounded once to float32, as a fused multiply-add: float32 products are exact in float64."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(F32)


def _box_muller_16(u: np.ndarray) -> np.ndarray:
    radius = np.sqrt(F32(-2) * _cephes_log(F32(1) - u[:8]))  # [0, 1) → (0, 1] for the log
    sin, cos = _cephes_sincos(F32(2 * math.pi) * u[8:])
    return np.concatenate([radius * cos, radius * sin])


LOG_POLY = (
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)


def _cephes_log(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's log256_ps on positive float32."""
    bits = np.maximum(x, np.uint32(0x00800000).view(F32)).view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 0x7F).astype(F32) + F32(1)
    x = ((bits & ~np.uint32(0x7F800000)) | F32(0.5).view(np.uint32)).view(F32)  # mantissa in [0.5, 1)
    low = x < F32(0.707106781186547524)
    x = x - F32(1) + np.where(low, x, F32(0))
    e = np.where(low, e - F32(1), e)
    z = x * x
    y = np.full_like(x, F32(7.0376836292e-2))
    for c in LOG_POLY:
        y = _fma(y, x, F32(c))
    y = _fma(y * x, z, e * F32(-2.12194440e-4))
    y = _fma(z, F32(-0.5), y)
    return _fma(e, F32(0.693359375), x + y)


def _cephes_sincos(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's sincos256_ps on float32: (sin, cos)."""
    bits = theta.view(np.uint32)
    x = (bits & np.uint32(0x7FFFFFFF)).view(F32)
    octant = (x * F32(1.27323954473516)).astype(np.int32)  # 4/π, truncated
    octant = (octant + 1) & ~np.int32(1)
    q = octant.astype(F32)
    sign_sin = (bits & np.uint32(0x80000000)) ^ ((octant & 4).astype(np.uint32) << np.uint32(29))
    sign_cos = (~(octant - 2) & 4).astype(np.uint32) << np.uint32(29)
    for part in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):  # x − q·π/4, extended
        x = _fma(q, F32(part), x)
    z = x * x
    yc = _fma(F32(2.443315711809948e-5), z, F32(-1.388731625493765e-3))
    yc = _fma(yc, z, F32(4.166664568298827e-2))
    yc = _fma(yc * z, z, -(z * F32(0.5))) + F32(1)
    ys = _fma(F32(-1.9515295891e-4), z, F32(8.3321608736e-3))
    ys = _fma(ys, z, F32(-1.6666654611e-1))
    ys = _fma(ys * z, x, x)
    poly = (octant & 2) == 0
    sin, cos = np.where(poly, ys, yc), np.where(poly, yc, ys)
    return (sin.view(np.uint32) ^ sign_sin).view(F32), (cos.view(np.uint32) ^ sign_cos).view(F32)
