"""The `fedbench` command's entry point: the collector held off for the start-up (gc_startup.py), then the CLI."""

from __future__ import annotations

from benchmark import gc_startup


def main() -> int:
    gc_startup.hold()
    from benchmark.cli import main as cli_main

    return cli_main()
