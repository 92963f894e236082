"""The client's claim stage: before a request is paid for, its key is claimed in the answer
cache, so that a request another process (or task) is answering is waited for, not paid again.
A claim is a lease (`CLAIM_LEASE_S`) that a thread renews while the client answers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator

from .cache_records import CacheUnreachable, Claim
from .failures import CACHE_UNWRITABLE, Answered, failed
from .request import Request
from .settings import LLMConfig, ModelSettings
from .storage import AnswerCache

log = logging.getLogger("rubriclab.llm")

# An in-flight claim lasts this long unless its holder renews it (every third of it).
CLAIM_LEASE_S = 30.0


class Claiming:
    """The LLMClient's stage that claims, renews and releases keys. Mixed into LLMClient,
    whose state it reads."""

    config: LLMConfig
    cache: AnswerCache
    claim_lease_s: float
    _owner: str  # this client's name on the claims it holds
    _held: set[str]  # keys this client is answering now

    async def _claim_for_call(self, request: Request, key: str, shared: bool
                              ) -> tuple[Claim, Answered | None]:
        """Claim `key` before its call (`shared`: whether its model's answers are cached; an
        answer that is not cached is not shared: nothing to claim). A failed completion too
        where the claim could not be written (nothing was paid); CacheUnreachable, once the
        calls in flight are answered, where the server stayed lost."""
        try:
            if not shared:
                return Claim(claimed=True), None
            if not self.cache.claims_wait_for_server:
                return self._claim(key), None
            # It may wait out a lost server (llm.cache_reconnect_s): in a thread, so that the
            # calls in flight are answered meanwhile. The key counts as held while it is
            # claimed, so that another task asking it meanwhile waits for this one's answer.
            others = key in self._held
            self._held.add(key)
            try:
                return await asyncio.to_thread(self._claim, key, others), None
            finally:
                if not others:
                    self._held.discard(key)
        except sqlite3.OperationalError as exc:  # nothing paid yet
            if isinstance(exc, CacheUnreachable):
                # The server stayed lost past llm.cache_reconnect_s: the job stops (rather
                # than each request failing), once the calls in flight are answered and
                # journaled.
                longest = max(s.deadline_s for s in (
                    self.config.defaults, *self.config.per_model.values()))
                until = time.monotonic() + longest + 5
                while self._held and time.monotonic() < until:
                    await asyncio.sleep(0.1)
                raise
            return Claim(holder="the cache"), failed(
                request, key, CACHE_UNWRITABLE, f"could not claim it in the cache ({exc}); "
                "nothing was paid, a rerun asks it again")

    def _wait_limit_s(self, settings: ModelSettings) -> float:
        """How long to wait for a request another process holds: its deadline, or the longest
        wait for a batch when the model is batched (the holder may be collecting one)."""
        limit = settings.deadline_s
        if settings.batch:
            limit = max(limit, settings.batch_max_wait_s)
        return limit + 2 * self.claim_lease_s

    def _claim(self, key: str, held_by_owner: bool | None = None) -> Claim:
        """`held_by_owner`: whether another task of this client answers `key` (default: as
        `_held` says now)."""
        if held_by_owner is None:
            held_by_owner = key in self._held
        return self.cache.claim(key, self._owner, self.claim_lease_s,
                                held_by_owner=held_by_owner)

    def _release(self, key: str) -> None:
        self.cache.release(key, self._owner)

    @contextlib.contextmanager
    def _renewing_claims(self) -> Iterator[None]:
        """Renew the claims this client holds every third of their lease, from a thread of
        its own until the block ends.

        Not a task of the event loop: the loop can be busy for longer than a lease (claiming
        hundreds of keys and building a batch's file took 39 s on a loaded machine), and a
        lease that runs out lets another process pay for the same request."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.claim_lease_s / 3):
                if self._held:
                    try:
                        self.cache.renew_claims(self._owner, self.claim_lease_s)
                    except Exception as exc:  # noqa: BLE001 - tried again at the next beat
                        log.warning("could not renew this process's claims: %s", exc)

        heartbeat = threading.Thread(target=beat, name="rubriclab-claims", daemon=True)
        heartbeat.start()
        try:
            yield
        finally:
            stop.set()
            heartbeat.join(timeout=60)
