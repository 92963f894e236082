"""Why a request got no answer, as a typed kind the client's stages pass along with its
completion (`Answered`), so that none of them reads it back out of the error message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .backends import RawAnswer
from .request import Completion, Request

# The kind of a request never sent: the job was stopped, the run reached its budget or ran
# short of disk space, or its model had been stopped.
NOT_ATTEMPTED = "NotAttempted"
# Its claim could not be written to the cache: nothing was paid.
CACHE_UNWRITABLE = "CacheUnwritable"
# Another process held it past how long it may take.
WAITED_TOO_LONG = "WaitedTooLong"
# Its batch gave no usable answer, and it is not asked otherwise (the error is the batch's).
BATCH_FAILED = "BatchFailed"


@dataclass(frozen=True)
class Failure:
    """Why a failed completion failed. `kind`: the class name of the exception no retry got
    past, or one of the kinds above; all but BATCH_FAILED are what the error message begins
    with. Ordinary requests of one model failing with one kind in a row stop the model."""

    kind: str
    # Whether the request went as far as its claim: False for NOT_ATTEMPTED, which neither
    # counts towards a model's failures in a row nor is the failure a job reports first.
    attempted: bool = True


@dataclass(frozen=True)
class Answered:
    """A stage's result for one request: its completion, and its failure where it failed."""

    completion: Completion
    failure: Failure | None = None

    @property
    def not_attempted(self) -> bool:
        return self.failure is not None and not self.failure.attempted


def failed(request: Request, key: str, kind: str, message: str, **fields: Any) -> Answered:
    """A failed completion whose error is `<kind>: <message>` (`fields`: its other fields)."""
    return Answered(Completion(request=request, key=key, outcome="failed",
                               error=f"{kind}: {message}", **fields),
                    Failure(kind, attempted=kind != NOT_ATTEMPTED))


def not_attempted(request: Request, key: str, why: str, batch: bool = False) -> Answered:
    """A request never sent, and why."""
    return failed(request, key, NOT_ATTEMPTED, why, batch=batch)


class AttemptsExhausted(Exception):
    """No answer came of a request's attempts: `cause` is why, after `attempts` attempts."""

    def __init__(self, cause: Exception, attempts: int):
        super().__init__(str(cause))
        self.cause = cause
        self.attempts = attempts
        # what attempts answered without an answer to keep (empty, unreadable) were billed
        self.spent: RawAnswer | None = None
