"""Advisory file locks (fcntl.flock) between fedbench processes sharing a results folder.

The kernel releases a flock when its holder exits, however it exits (SIGKILL included), so a
killed run never leaves a job locked. A suite's lock lives in `results/<suite>/.locks/`, a job's in
`results/jobs/.locks/` (store/job_store.py: one lock per job id, whichever suite runs it).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from benchmark.store.layout import Store


class FileLock:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self, blocking: bool = True, shared: bool = False) -> bool:
        """Take the lock; False if `blocking` is off and another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:  # Ctrl-C while waiting
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def suite_lock(store: Store, suite: str) -> FileLock:
    """Held shared by every process running `suite`: whoever can take it exclusively is alone."""
    return FileLock(store.suite(suite).lock)
