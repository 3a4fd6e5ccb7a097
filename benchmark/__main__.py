"""`python -m benchmark ...` is the `fedbench` command."""

import os
import sys

# `python -m` puts the current folder first on sys.path, the `fedbench` script does not: without it,
# a suite's `plugins:` finds the same modules under both, never one that merely sits in the current
# folder (PYTHONPATH=. still puts it there on purpose). fedbench itself is imported already.
if not sys.flags.safe_path and sys.path and os.path.realpath(sys.path[0] or ".") == os.path.realpath(os.getcwd()):
    del sys.path[0]

from benchmark.launch import main  # noqa: E402

sys.exit(main())
