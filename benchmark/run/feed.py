"""How far a round's training has come reaches its listener (the progress display, a Ray relay) as data:
the engine puts each count into a queue (engine/round_tally.py) and a thread of the job runner hands it on,
so the engine never calls a function of the layers above it (issue 32 point 4, benchmarks/job_walk.py)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)
_END = object()


def _hand_on(items: queue.SimpleQueue, handle: Callable) -> None:
    while (item := items.get()) is not _END:
        try:
            handle(item)
        except Exception:  # a display that fails must not stop the job, nor the counts after it
            log.exception("showing how far a round has come failed")


@contextmanager
def fed(handle: Callable | None) -> Iterator[Callable | None]:
    """The `put` of a queue whose items `handle` is given, in order, on a thread of its own; None without a
    `handle`. Leaving waits until every item put was handled, so none arrives after the job's end."""
    if handle is None:
        yield None
        return
    items: queue.SimpleQueue = queue.SimpleQueue()
    thread = threading.Thread(target=_hand_on, args=(items, handle), name="fedbench-round-counts", daemon=True)
    thread.start()
    try:
        yield items.put
    finally:
        items.put(_END)
        thread.join()
