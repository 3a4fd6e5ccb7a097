"""How far a round's training has come, for whoever shows progress within a long round
(run/progress.py): the trainers count clients and local steps into a `RoundTally`, which tells its
listener after each client (each chunk of clients when vectorised) and, within a long client or
chunk, at most every STEP_REPORT_S. Without a listener every count returns at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

STEP_REPORT_S = 1.0  # within a client (or chunk) the listener hears at most this often; clients always


@dataclass(frozen=True)
class ClientsDone:
    round: int  # the round being trained, counted from 1 as the logs count rounds
    done: int  # clients trained so far this round
    total: int  # clients chosen this round
    steps: int  # local steps taken so far this round, by every client (a step of a chunk of C clients: C)
    seconds: float  # since the round's training began


OnClients = Callable[[ClientsDone], None]


class RoundTally:
    """One round's counts; a trainer calls `step` per local step and `clients` per finished client or chunk."""

    def __init__(self, round_: int, total: int, listener: OnClients | None = None):
        self.round, self.total, self.listener = round_, total, listener
        self.done = self.steps = 0
        self.start = self.told = time.monotonic() if listener else 0.0

    def step(self, clients: int = 1) -> None:
        """A local step of `clients` clients at once was taken."""
        if self.listener is None:
            return
        self.steps += clients
        if time.monotonic() - self.told >= STEP_REPORT_S:
            self._tell()

    def clients(self, count: int) -> None:
        """`count` more clients finished their local training."""
        if self.listener is None:
            return
        self.done += count
        self._tell()

    def _tell(self) -> None:
        self.told = time.monotonic()
        self.listener(ClientsDone(self.round, self.done, self.total, self.steps, self.told - self.start))


SILENT = RoundTally(0, 0)  # nobody listens (tests and speed scripts that drive a trainer directly)
