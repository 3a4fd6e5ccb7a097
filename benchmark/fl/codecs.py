"""Message codecs. `identity` sends float32 values as they are."""

from __future__ import annotations

from benchmark.fl.base import Codec
from benchmark.fl.registry import CODECS


@CODECS.register
class Identity(Codec):
    name = "identity"
