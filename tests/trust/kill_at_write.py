"""`python kill_at_write.py NAME N [fedbench args]`: the fedbench CLI, killed as by SIGKILL
(os._exit: no cleanup, no finally) just before its N-th rename onto a file called NAME, so that
file's new version lies written in its temp file and the rename never happened."""

from __future__ import annotations

import os
import sys

from benchmark.cli import main

name, n = sys.argv[1], int(sys.argv[2])
renames = 0
rename = os.replace


def killed_before_the_nth(src, dst):
    global renames
    if os.path.basename(dst) == name:
        renames += 1
        if renames == n:
            os._exit(137)
    rename(src, dst)


os.replace = killed_before_the_nth
sys.exit(main(sys.argv[3:]))
