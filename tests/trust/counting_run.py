"""`python counting_run.py LOG [fedbench args]`: the fedbench CLI, appending "<pid> <job id>" to
LOG each time a job's training starts (how the concurrency tests count trainings). With $LIVE_RUNS set, every
job's MLflow run is created when the job starts (mlflow_writer.LIVE_AFTER_S = 0), as a long job's is."""

from __future__ import annotations

import os
import sys

import benchmark.run.executor as executor
from benchmark.cli import main
from benchmark.run import mlflow_writer

if os.environ.get("LIVE_RUNS"):
    mlflow_writer.LIVE_AFTER_S = 0.0

log_path = sys.argv[1]
train = executor.run_job


def counted(job, *args, **kwargs):
    with open(log_path, "a") as log:
        log.write(f"{os.getpid()} {job.id}\n")
    return train(job, *args, **kwargs)


executor.run_job = counted
sys.exit(main(sys.argv[2:]))
