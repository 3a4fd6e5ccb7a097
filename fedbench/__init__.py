"""`import fedbench`: the public API (benchmark/api.py) under the distribution's own name, for
research code whose own `benchmark/` folder would shadow fedbench's package."""

from benchmark import __version__  # noqa: F401
from benchmark.api import *  # noqa: F403 (the API is benchmark.api.__all__, listed there once)
from benchmark.api import __all__  # noqa: F401
