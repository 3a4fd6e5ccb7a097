"""heartbeat.json in a running job's folder: which process runs it, the round it reached and
how fast it goes. `fedbench status` reads it to tell running jobs from interrupted ones and to
estimate what is left; the file is removed when the job ends (a killed process leaves a stale
one, recognised by its dead pid or its age)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from benchmark.store.job_dir import atomic_write_json

EVERY_S = 5.0  # at most one write per this many seconds (rounds of small models take milliseconds)
STALE_S = 120.0  # a heartbeat this much older than its own round time means its process is gone


class Heartbeat:
    def __init__(self, path: Path, rounds: int, start_round: int):
        self.path = path
        self.state = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "rounds": rounds,
            "start_round": start_round,
            "started": time.time(),
            "round": start_round,
        }
        self.written = 0.0
        self.beat(start_round, force=True)

    def beat(self, round_: int, record: dict | None = None, force: bool = False) -> None:
        self.state.update(round=round_, updated=time.time())
        if record:
            self.state.update(test_acc=record["test_acc"], ema_acc=record["ema_acc"])
        if force or self.state["updated"] - self.written >= EVERY_S:
            atomic_write_json(self.path, self.state, durable=False)  # a crash makes it stale anyway
            self.written = self.state["updated"]

    def stop(self) -> None:
        self.path.unlink(missing_ok=True)


def read_heartbeat(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def seconds_per_round(hb: dict) -> float | None:
    done = hb["round"] - hb["start_round"]
    return (hb["updated"] - hb["started"]) / done if done > 0 else None


def is_alive(hb: dict, now: float | None = None) -> bool:
    """Its process still runs: same host and the pid exists, or (another host) it beat recently."""
    now = time.time() if now is None else now
    if hb.get("host") == socket.gethostname():
        try:
            os.kill(int(hb["pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by someone else
    per_round = seconds_per_round(hb) or 0.0
    return now - hb["updated"] < max(STALE_S, 10 * per_round + EVERY_S)
