"""What a batch is, as the runner and both batch stores keep it: a job's identity
(`job_key`), its stored row (`BatchJob`), the states in which it has ended, and what a batch
gave each request (`BatchOutcome`, `BatchOutcomes`). Shared by the batch runner
(`rubriclab.llm.batch`), its stores (`rubriclab.llm.batch_store`, `rubriclab.llm.batch_pg`)
and the provider adapters (`rubriclab.llm.batch_api`)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass

from .backends import RawAnswer

DONE = "completed"
# Ended without answering all; "gone": the provider no longer knows the batch (404); "lost":
# stored as being submitted by a job that was killed, and not found at the provider.
UNFINISHED = frozenset({"failed", "expired", "cancelled", "gone", "lost"})


def job_key(model: str, keys: list[str]) -> str:
    """The identity of a batch: its model and the set of request keys it answers."""
    payload = json.dumps([model, sorted(set(keys))], separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class BatchJob:
    job_key: str
    model: str
    requests: int
    input_file_id: str | None
    batch_id: str | None
    status: str
    updated_at: float



@dataclass(frozen=True)
class BatchOutcome:
    """What a batch gave one request: an answer, or why not. `running`: the batch had not
    ended when this run stopped waiting; it stays stored, so asking elsewhere would pay twice."""

    answer: RawAnswer | None
    error: str = ""
    batch_id: str | None = None
    running: bool = False
    # Never submitted: its batch would have taken the run's bill past its budget.
    over_budget: bool = False
    # Never submitted: too little free disk space to store its answers (llm.min_free_disk_mb).
    disk_low: bool = False
    # Never in a batch, nor to be: the model is no longer batched and no stored batch holds
    # it, so it is asked as an ordinary call.
    unsent: bool = False
    # Answers the batch gave this request that cannot be used, each possibly billed: the
    # different answers of a request its result file answers more than once.
    spent: tuple[RawAnswer, ...] = ()


class BatchOutcomes(dict[str, BatchOutcome]):
    """`BatchRunner.run`'s outcomes by request key, with `unusable_lines`: how many result
    lines of its batches were of no use, by kind (`rubriclab.llm.progress.UNUSABLE_BATCH_LINES`,
    which `Progress` reports at the end of a job): requests answered more than
    once with different answers, lines without a request id, lines whose id the batch did not
    hold, and requests a completed batch gave no line."""

    def __init__(self, outcomes: dict[str, BatchOutcome] | None = None):
        super().__init__(outcomes or {})
        self.unusable_lines: Counter[str] = Counter()
