"""What the answer cache stores and the errors its backends raise, shared by the SQLite and
PostgreSQL caches (`rubriclab.llm.cache`, `rubriclab.llm.cache_pg`) and everything that reads
them: an answer's record, a claim, an import's report, the errors of a database that refuses
or cannot be reached, and the free-disk-space guard before a paid call."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .request import Request

BUSY_TIMEOUT_S = 120.0
# An answer, journaled first, waits this long for the database's write lock (the job goes on,
# serving it from the journal, and stores it at the next write); the last try, at close,
# waits the whole busy timeout.
PUT_WAIT_S = 5.0


@dataclass(frozen=True)
class CachedAnswer:
    key: str
    model: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    request_json: str
    created_at: float
    model_fingerprint: str | None = None  # None: stored before fingerprints were recorded
    key_version: int | None = None  # None: stored before key versions were recorded


@dataclass(frozen=True)
class ImportReport:
    added: int
    already_present: int
    conflicting: int
    signed_by: str | None = None  # the id of the key whose signature verified, if signed


@dataclass(frozen=True)
class Claim:
    """The answer if there is one, else whether the key is now ours, else who holds it."""

    answer: CachedAnswer | None = None
    claimed: bool = False
    holder: str = ""
    # The claim's fencing token, where the backend gives one (PostgreSQL's): each claim made or
    # taken over gets a larger one, and only its holder's token renews or releases it.
    token: int | None = None


class CacheFileError(ValueError):
    """An export file refused, naming the file and, where there is one, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class CacheUnavailable(sqlite3.OperationalError):
    """A cache database (PostgreSQL's) that refused a write or could not be reached. A
    subclass of SQLite's refusal, so that whatever handles a locked SQLite cache (a claim that
    fails before anything is paid: `CacheUnwritable`) handles it alike."""


class CacheUnreachable(CacheUnavailable):
    """The cache database's server stayed out of reach for the whole reconnect window
    (`llm.cache_reconnect_s`): the job stops, its answers journaled, rather than failing each
    request (as a claim the server refuses does)."""


class DiskSpaceLow(RuntimeError):
    """Too little free disk space to store another paid answer: the run stops before paying."""


def free_space_problem(directories: list[Path], min_free_bytes: int) -> str | None:
    """Why no paid call should start, if one of `directories` (the first existing folder at
    or above each) has less than `min_free_bytes` free; None when all have room."""
    if min_free_bytes <= 0:
        return None
    seen: set[int] = set()
    for directory in directories:
        existing = Path(directory)
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        try:
            stat = os.statvfs(existing)
            device = os.stat(existing).st_dev
        except OSError:
            continue
        if device in seen:
            continue
        seen.add(device)
        free = stat.f_bavail * stat.f_frsize
        if free < min_free_bytes:
            return (f"{existing} has {free:,} bytes free, under the {min_free_bytes:,} kept "
                    "free so that every paid answer can be stored (llm.min_free_disk_mb); "
                    "free some space there, or move the cache (RUBRICLAB_CACHE) or the run, "
                    "then rerun: the answers paid so far are cached")
    return None


def request_json(request: Request) -> str:
    return json.dumps(asdict(request), sort_keys=True, ensure_ascii=False)


def make_answer(key: str, request: Request, text: str, prompt_tokens: int,
                completion_tokens: int, cost_usd: float | None,
                model_fingerprint: str | None = None) -> CachedAnswer:
    return CachedAnswer(
        key=key,
        model=request.model,
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        request_json=request_json(request),
        created_at=time.time(),
        model_fingerprint=model_fingerprint,
    )
