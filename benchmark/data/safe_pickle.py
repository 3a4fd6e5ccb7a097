"""Reading pickled datasets (the CIFAR python archives) without executing arbitrary code.

A pickle can name any importable callable; this unpickler admits only what a dict of numpy
arrays, lists and bytes needs and rejects everything else.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from benchmark.errors import DatasetMissing

_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
    ("builtins", "bytes"),
    ("builtins", "bytearray"),
    ("builtins", "str"),
    ("builtins", "int"),
    ("builtins", "float"),
    ("_codecs", "encode"),  # protocol-2 pickles written by Python 3 encode bytes this way
}


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def safe_load_pickle(path: Path) -> Any:
    """Unpickle `path` (Python 2 archives: bytes keys) admitting only data types."""
    try:
        with open(path, "rb") as f:
            return SafeUnpickler(f, encoding="bytes").load()
    except pickle.UnpicklingError as err:
        raise DatasetMissing(
            f"{path} is not a plain data pickle ({err}); it was not loaded. Re-download the official archive."
        ) from None
    except (EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise DatasetMissing(
            f"{path} is corrupt ({type(err).__name__}: {err}); re-download the official archive"
        ) from None
