"""Each `fedbench check` as its own MLflow run, so a suite's checks form a history.

The run sits in the suite's experiment, tagged `fedbench.kind = check` (never found as the suite's
parent or as a job's run), with the verdict as tag and metric, the counts, each comparison's Δ,
value now and tolerance as metrics, and the check's JSON (and JUnit file) as artifacts. The jobs a
check trains are not mirrored: they are throwaway runs, and their numbers are in the check's JSON.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

STATUS = {"passed": "FINISHED", "failed": "FAILED", "error": "FAILED"}


def log_check(report: dict, files: list[Path], uri: str | None = None) -> str:
    """Log one check (`report`: check_output.as_json's dict) as a new run; its run id."""
    from mlflow.entities import Metric, Param, RunTag

    from benchmark.run.mlflow_mirror import metric_key
    from benchmark.run.tracking import bounded_client, experiment_id, provenance_tags, store_lock, store_uri

    uri = store_uri(uri)
    lock = store_lock(uri)
    if lock:
        lock.acquire()
    try:
        client = bounded_client(uri)
        experiment = experiment_id(client, report["suite"])
    finally:
        if lock:
            lock.release()
    tags = {"fedbench.kind": "check", "fedbench.suite": report["suite"], "fedbench.verdict": report["verdict"]}
    tags |= provenance_tags()
    if report["error"]:
        tags["fedbench.error"] = report["error"][:5000]
    run_id = client.create_run(experiment, run_name=f"check: {report['verdict']}", tags=tags).info.run_id
    now = int(time.time() * 1000)
    metrics = [
        Metric("passed", float(report["verdict"] == "passed"), now, 0),
        Metric("seconds", report["seconds"], now, 0),
    ]
    metrics += [Metric(k, float(v), now, 0) for k, v in report["counts"].items()]
    for row in report["rows"]:
        for name in ("delta", "now", "tolerance"):
            if row[name] is not None:
                metrics.append(Metric(metric_key(f"{row['group']}/{row['metric']}/{name}"), row[name], now, 0))
    params = [Param("baseline", str(report["baseline"])), Param("sides", report["test"]["sides"])]
    client.log_batch(
        run_id,
        metrics=metrics[:1000],
        params=params,
        tags=[RunTag("fedbench.schema_version", str(report["schema_version"]))],
    )
    for i in range(1000, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[i : i + 1000])
    with tempfile.TemporaryDirectory(prefix="fedbench-check-") as folder:
        saved = Path(folder) / "check.json"
        saved.write_text(json.dumps(report, indent=2))
        for f in [saved, *files]:
            client.log_artifact(run_id, str(f), "check")
    client.set_terminated(run_id, STATUS[report["verdict"]])
    return run_id
