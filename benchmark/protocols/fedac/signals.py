"""Signals held while the batched FedAc engine computes (engine.py), apart from its compiled kernel
(kernel.py) so that the methods that never call the kernel (one step a round) need not import numba."""

from __future__ import annotations

import signal
import threading


class HeldSignals:
    """Ctrl-C and SIGTERM while a batch computes are held, and delivered to the handler they were
    meant for by `deliver()` between kernel calls (or on leaving). Delivered inside a compiled
    call, the handler's KeyboardInterrupt comes out of numba as a SystemError, which would fail
    the batch's jobs instead of stopping the run. Handlers are swapped with both signals blocked,
    so none is lost or handled in between; only the main thread may set handlers."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.caught: list[int] = []
        self.previous: dict = {}

    def _hold(self, signum, frame) -> None:
        self.caught.append(signum)

    def _swap(self, handlers: dict) -> dict:
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)
        try:  # a handler set outside Python reads as None: restore the default then
            return {sig: signal.signal(sig, signal.SIG_DFL if h is None else h) for sig, h in handlers.items()}
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.SIGNALS)

    def __enter__(self) -> HeldSignals:
        if threading.current_thread() is threading.main_thread():
            self.previous = self._swap(dict.fromkeys(self.SIGNALS, self._hold))
        return self

    def deliver(self) -> None:
        """Hand what was held to the handlers it was meant for (which may raise KeyboardInterrupt);
        if none raises, hold again."""
        if not self.caught:
            return
        caught, self.caught = list(dict.fromkeys(self.caught)), []
        holding = bool(self.previous)
        if holding:
            self._swap(self.previous)
            self.previous = {}
        for sig in caught:
            signal.raise_signal(sig)
        if holding:
            self.previous = self._swap(dict.fromkeys(self.SIGNALS, self._hold))

    def __exit__(self, *exc) -> None:
        if self.previous:
            self._swap(self.previous)
            self.previous = {}
        if exc[0] is None:
            self.deliver()
