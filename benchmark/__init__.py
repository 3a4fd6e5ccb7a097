"""fedbench: a declarative benchmark for federated optimisation."""

__version__ = "0.1.0"
