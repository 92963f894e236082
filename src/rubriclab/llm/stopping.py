"""A model job's graceful stop on SIGINT or SIGTERM: no new request is sent, the calls in
flight get a bounded grace (`llm.stop_grace_s`) to be answered and stored, and the job ends
with `JobStopped` naming the signal. A second SIGINT (Ctrl-C twice) ends the calls in flight
at once; they were journaled before they were sent, so the bill counts them (cost unknown).

Why a grace rather than stopping at once: a provider answers and bills a call that is in
flight whether or not anyone reads the answer, so a job that drops it pays for it again on
the rerun; one that waits a few seconds more keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger("rubriclab.llm")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class JobStopped(RuntimeError):
    """The job was asked to stop (SIGINT or SIGTERM) while it was calling models: the answers
    of the calls in flight were stored, and no further request was sent."""


class StopSignals:
    """The stop signals of one `LLMClient.run`, caught while it runs (main thread only: a
    thread of another program that runs the client has no signals to catch).

    `signal_name` is set at the first signal; the event loop's main task is cancelled once
    the grace is over, or at a second SIGINT."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.signal_name: str | None = None
        self.in_flight_at_stop = 0
        self.cut_short = False  # the grace ran out, or a second SIGINT ended it
        self.abandoned = 0  # calls in flight when it was cut short
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._in_flight: Callable[[], int] = lambda: 0

    @property
    def stopped(self) -> bool:
        return self.signal_name is not None

    @contextlib.contextmanager
    def caught(self) -> Iterator[StopSignals]:
        """Catch SIGINT and SIGTERM within the block (the handlers before it come back at its
        end); outside the main thread, nothing is caught."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def watch(self, task: asyncio.Task, in_flight: Callable[[], int]) -> None:
        """The task a stop cancels when its grace is over; `in_flight()`: how many calls are
        in flight (for the messages)."""
        self._loop = task.get_loop()
        self._task = task
        self._in_flight = in_flight
        if self.stopped:  # a signal came before the task started
            self._schedule(self.grace_s)

    def _handle(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self.signal_name is None:
            self.signal_name = name
            self.in_flight_at_stop = self._in_flight()
            log.warning("received %s: sending no new request; waiting up to %g s "
                        "(llm.stop_grace_s) for the %d calls in flight, whose answers are "
                        "stored", name, self.grace_s, self.in_flight_at_stop)
            self._schedule(self.grace_s)
        elif signum == signal.SIGINT and self.signal_name == "SIGINT":
            log.warning("received SIGINT again: ending the calls in flight now (each is "
                        "billed as of unknown cost; a rerun asks it again)")
            self._schedule(0.0)
        # else: the same stop asked again (a supervisor's SIGTERM after Ctrl-C, say)

    def _schedule(self, delay_s: float) -> None:
        loop, task = self._loop, self._task
        if loop is None or task is None or loop.is_closed():
            return

        def cut_short() -> None:
            if not task.done():
                self.cut_short = True
                self.abandoned = self._in_flight()
                task.cancel()

        # From a signal handler, only call_soon_threadsafe may touch the loop (it wakes it).
        loop.call_soon_threadsafe(lambda: loop.call_later(delay_s, cut_short))

    def describe(self, not_sent: int) -> str:
        how = ("the calls in flight were ended before they were answered "
               f"({self.abandoned} of them: billed as of unknown cost)" if self.cut_short
               else f"the {self.in_flight_at_stop} calls in flight were answered and stored")
        return (f"stopped by {self.signal_name}: {how}; {not_sent} requests were not sent. "
                "A rerun asks only what is not in the cache")
