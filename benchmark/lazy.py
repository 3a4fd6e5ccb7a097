"""torch bound on first use, so `fedbench --help`, `plan` and `status` never import it (most of
their start-up time otherwise: benchmarks/README.md, `startup_imports.py`).

The modules that validation imports (benchmark.fl, benchmark.data, the foundation) need torch
only inside their functions: they write `from benchmark.lazy import torch` (or `nn`, `F`)
instead of `import torch`. The name is a stand-in that imports the real module on the first
attribute read and keeps every attribute it has read, so later reads cost what a module
attribute does. Annotations are free (`from __future__ import annotations`); anything evaluated
when the module is imported (a base class `nn.Module`, `@torch.no_grad()`, a default
`dtype=torch.float32`) imports torch, and tests/cli/test_import_cost.py fails;
tests/test_layers.py rejects a plain `import torch` in these layers.

The stand-in is never put in sys.modules: any later `import torch` statement would then load it
(the import system reads its `__spec__`) and the saving would depend on import order.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module `name`; imported when an attribute is first read."""

    def __init__(self, name: str):
        self.__dict__["_module_name"] = name

    def __getattr__(self, attr: str):  # called only for attributes not read before
        value = getattr(importlib.import_module(self._module_name), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._module_name!r}>"


torch = LazyModule("torch")
nn = LazyModule("torch.nn")
F = LazyModule("torch.nn.functional")
