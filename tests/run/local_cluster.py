"""A real multi-node Ray cluster on this machine, for tests: one `ray start --block` process per
node, each with its own temp dir, working dir and $TMPDIR, and worker nodes on their own IP
(127.0.0.2, ...), so no path or address is shared by accident; each node's $FEDBENCH_DATA is an
empty folder and its $FEDBENCH_CACHE its own. Small (1 CPU, 80 MiB object store per node), on free ports, and
stopped by the PIDs it started (never `ray stop`, which would stop other users' Ray too)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import psutil

# Token auth would need a token file shared by the nodes; $HOME's is shared with other users.
NODE_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
STARTED = b"Ray runtime started"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a fresh node or driver gets: no fedbench on PYTHONPATH, no data root."""
    drop = ("PYTHONPATH", "FEDBENCH_DATA", "RAY_ADDRESS")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **NODE_ENV, **extra}


class Node:
    def __init__(self, base: Path, name: str, args: list[str]):
        self.name, self.dir = name, base / name
        for sub in ("wd", "tmp", "data", "cache"):
            (self.dir / sub).mkdir(parents=True)
        self.log = self.dir / "ray-start.log"
        cmd = [
            "ray",
            "start",
            "--block",
            "--disable-usage-stats",
            "--num-cpus",
            "1",
            "--object-store-memory",
            str(80 * 2**20),
            "--temp-dir",
            str(self.dir / "ray"),
            "--dashboard-agent-listen-port",
            str(free_port()),
            *args,
        ]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.dir / "wd",
                env=clean_env(
                    TMPDIR=str(self.dir / "tmp"),
                    FEDBENCH_DATA=str(self.dir / "data"),
                    FEDBENCH_CACHE=str(self.dir / "cache"),
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_started(self, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while STARTED not in self.log.read_bytes():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"ray node {self.name} did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.3)

    def processes(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.proc.pid)
            return root.children(recursive=True) + [root]
        except psutil.NoSuchProcess:
            return []

    def owns(self, pid: int) -> bool:
        return any(p.pid == pid for p in self.processes())

    def kill(self) -> None:
        """The node dies at once (SIGKILL to `ray start`, its raylet and every worker)."""
        procs = self.processes()
        _each(procs, psutil.Process.kill)
        psutil.wait_procs(procs, timeout=30)

    def stop(self) -> None:
        procs = self.processes()
        _each(procs, psutil.Process.terminate)
        _, alive = psutil.wait_procs(procs, timeout=15)
        _each(alive, psutil.Process.kill)


def _each(procs: list[psutil.Process], action) -> None:
    for p in procs:
        try:
            action(p)
        except psutil.NoSuchProcess:
            pass


class LocalCluster:
    """Head (on this machine's address; the driver joins through it) plus worker nodes on
    127.0.0.2, ..., each with 1 CPU."""

    def __init__(self, base: Path, workers: int = 1):
        self.base, self.nodes = base, []
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        try:
            head = Node(
                base,
                "head",
                [
                    "--head",
                    "--port",
                    str(port),
                    "--include-dashboard",
                    "false",
                    "--dashboard-port",
                    str(free_port()),
                    "--ray-client-server-port",
                    str(free_port()),
                ],
            )
            self.nodes.append(head)
            head.wait_started()
            for i in range(workers):
                ip = f"127.0.0.{i + 2}"
                self.nodes.append(Node(base, f"node{i + 2}", ["--address", self.address, "--node-ip-address", ip]))
            for node in self.nodes[1:]:
                node.wait_started()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
