"""`python -m benchmark ...` is the `fedbench` command."""

import sys

from benchmark.cli import main

sys.exit(main())
