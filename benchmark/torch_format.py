"""torch.save's file format written without torch, for numpy arrays and plain Python data: a job whose
engine imports no torch (the FedAc protocol's) still writes a final_model.pt and checkpoints that
`torch.load(path, weights_only=True)` reads as torch.save would have written them (arrays as CPU
tensors of the same dtype, shape and values; tests/foundation/test_torch_format.py loads them with torch).

The format (torch/serialization.py, `_save`): an uncompressed zip whose entries sit under one folder
(`archive/`): `data.pkl`, a protocol-2 pickle in which each tensor is
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())` and each
storage a persistent id `("storage", torch.<Type>Storage, key, "cpu", numel)` whose bytes are the entry
`data/<key>`; then `byteorder` and `version`.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from typing import IO

import numpy as np

STORAGES = {
    np.dtype(np.float32): "FloatStorage",
    np.dtype(np.float64): "DoubleStorage",
    np.dtype(np.float16): "HalfStorage",
    np.dtype(np.int64): "LongStorage",
    np.dtype(np.int32): "IntStorage",
    np.dtype(np.int16): "ShortStorage",
    np.dtype(np.int8): "CharStorage",
    np.dtype(np.uint8): "ByteStorage",
    np.dtype(np.bool_): "BoolStorage",
}
PLAIN = (str, int, float, bool, type(None))


def writable(obj) -> bool:
    """Whether `obj` is made only of numpy arrays of a dtype torch has, dicts, lists, tuples and scalars."""
    if isinstance(obj, np.ndarray):
        return obj.dtype in STORAGES and obj.dtype.byteorder in "=|<"
    if isinstance(obj, dict):
        return all(isinstance(k, PLAIN) and writable(v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return all(writable(v) for v in obj)
    return isinstance(obj, PLAIN)


def save(obj, f: IO[bytes]) -> None:
    """Write `obj` (see `writable`) to the binary file `f` as torch.save writes it."""
    if not writable(obj):
        raise TypeError("torch_format writes numpy arrays (of torch's dtypes), dicts, lists, tuples and scalars only")
    data = io.BytesIO()
    pickler = _TensorPickler(data)
    pickler.dump(obj)
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data.getvalue())
        z.writestr("archive/byteorder", "little")
        for key, array in enumerate(pickler.storages):
            z.writestr(f"archive/data/{key}", array.tobytes())
        z.writestr("archive/version", "3\n")


class _TensorPickler(pickle._Pickler):
    """The pure-Python pickler with numpy arrays written as torch tensors: its GLOBAL opcodes name
    torch's functions without importing torch (pickle's own save_global would import them)."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.storages: list[np.ndarray] = []

    def _global(self, module: str, name: str) -> None:
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())

    def save_array(self, array: np.ndarray) -> None:
        array = np.require(array, requirements="C")  # (np.ascontiguousarray makes a 0-d array 1-d)
        key = len(self.storages)
        self.storages.append(array)
        self._global("torch._utils", "_rebuild_tensor_v2")
        self.write(pickle.MARK)
        self.write(pickle.MARK)  # the storage, as a persistent id
        self.save("storage")
        self._global("torch", STORAGES[array.dtype])
        self.save(str(key))
        self.save("cpu")
        self.save(array.size)
        self.write(pickle.TUPLE + pickle.BINPERSID)
        self.save(0)  # offset
        self.save(tuple(array.shape))
        self.save(tuple(s // array.itemsize for s in array.strides))
        self.save(False)  # requires_grad
        self._global("collections", "OrderedDict")  # backward hooks: none
        self.write(pickle.EMPTY_TUPLE + pickle.REDUCE)
        self.write(pickle.TUPLE + pickle.REDUCE)

    dispatch[np.ndarray] = save_array
