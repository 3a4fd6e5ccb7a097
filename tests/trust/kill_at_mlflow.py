"""`python kill_at_mlflow.py MODE TARGET N [fedbench args]`: the fedbench CLI, killed as by SIGKILL (os._exit:
no cleanup) at its N-th call of TARGET, before the call does anything. TARGET: a method of MlflowClient
(`create_run`) or of fedbench's batch writer (`SqlBatchWriter.write`, `SqlBatchWriter._inputs`: inside its
transaction). With $HANG_MARKER set the process writes that file there and sleeps instead, for the
test to kill it with a real SIGKILL. MODE `live`: every job's run is created when the job starts (LIVE_AFTER_S = 0); `batched`: as
fedbench runs short jobs, their runs written by the writer thread after they end."""

from __future__ import annotations

import os
import sys
import time

import mlflow

from benchmark.cli import main
from benchmark.run import mlflow_batch, mlflow_writer

mode, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "live":
    mlflow_writer.LIVE_AFTER_S = 0.0
owner_name, _, method = target.rpartition(".")
owner = getattr(mlflow_batch, owner_name) if owner_name else mlflow.tracking.MlflowClient
calls = 0
original = getattr(owner, method)


def killed_at_the_nth(*args, **kwargs):
    global calls
    calls += 1
    if calls == n:
        if marker := os.environ.get("HANG_MARKER"):
            open(marker, "w").close()
            time.sleep(600)
        os._exit(137)
    return original(*args, **kwargs)


setattr(owner, method, killed_at_the_nth)
sys.exit(main(sys.argv[4:]))
