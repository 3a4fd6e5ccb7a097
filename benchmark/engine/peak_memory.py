"""The peak bytes of tensor storage a piece of torch code allocates, on any device.

`PeakTensorMemory` is a TorchDispatchMode: every storage an op returns is counted while it lives
(a weak reference's callback uncounts it), and the peak of the live total is kept. It sees the
tensors of autograd's backward too (the dispatch mode travels with it), and functorch's vmap and
grad (their ops reach the mode unwrapped). It does not see workspace a kernel allocates inside
itself (an im2col buffer, a BLAS pack): vmap_chunk.py's safety fraction leaves room for that.
The same code measures on CPU, where torch keeps no allocation statistics, and on CUDA.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class PeakTensorMemory(TorchDispatchMode):
    """Within it: `live` bytes of the storages allocated since entering and still alive, `peak`
    their maximum. Storages that existed before (inputs, parameters) are not counted; an op that
    returns a view or writes in place allocates nothing."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._known: set[int] = set()  # data pointers of the storages counted and alive
        self._refs: list[weakref.ref] = []  # keep the weak references (and their callbacks) alive

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch would wrap __torch_dispatch__ in dynamo.disable, importing torch._dynamo on first
        # use (5 s on a loaded 2-core machine); nothing here is ever compiled (vectorised has no compile)
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {_pointer(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and _pointer(t) not in inputs:  # not a view of an input, not in place
                self._count(t.untyped_storage())
        return out

    def _count(self, storage: torch.UntypedStorage) -> None:
        ptr, size = storage.data_ptr(), storage.nbytes()
        if ptr in self._known or size == 0:
            return
        self._known.add(ptr)
        self.live += size
        self.peak = max(self.peak, self.live)
        self._refs.append(weakref.ref(storage, lambda _, ptr=ptr, size=size: self._forget(ptr, size)))

    def _forget(self, ptr: int, size: int) -> None:
        self._known.discard(ptr)
        self.live -= size


def _pointer(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()
