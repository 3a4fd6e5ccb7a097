"""`python kill_at_mlflow.py METHOD N [fedbench args]`: the fedbench CLI, killed as by SIGKILL (os._exit:
no cleanup) at its N-th call of MlflowClient.METHOD, before the call reaches the store."""

from __future__ import annotations

import os
import sys

import mlflow

from benchmark.cli import main

method, n = sys.argv[1], int(sys.argv[2])
calls = 0
original = getattr(mlflow.tracking.MlflowClient, method)


def killed_at_the_nth(self, *args, **kwargs):
    global calls
    calls += 1
    if calls == n:
        os._exit(137)
    return original(self, *args, **kwargs)


setattr(mlflow.tracking.MlflowClient, method, killed_at_the_nth)
sys.exit(main(sys.argv[3:]))
