"""The call cache: successful answers only, keyed by `request.cache_key`, never expiring.

`CacheBackend` is the small interface the runner needs; `SQLiteCache` implements it in WAL mode
so that several Snakemake jobs on one machine can read and write at once. (SQLite must not live
on NFS; a cluster run would put another backend behind the same interface.)
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from .request import Request

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL,
    request_json TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


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


@dataclass(frozen=True)
class ImportReport:
    added: int
    already_present: int
    conflicting: int


class CacheBackend(Protocol):
    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, answer: CachedAnswer) -> None: ...


def request_json(request: Request) -> str:
    return json.dumps(asdict(request), sort_keys=True, ensure_ascii=False)


def open_wal_database(path: Path, schema: str, **connect: object) -> sqlite3.Connection:
    """A SQLite file in WAL mode, safe for several processes at once, with `schema` applied.

    Autocommit: every write is its own transaction, so a killed process loses no stored row.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=120, isolation_level=None, **connect)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=120000")
    db.execute(schema)
    return db


class SQLiteCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_wal_database(self.path, _SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> CachedAnswer | None:
        row = self._db.execute(
            "SELECT key, model, text, prompt_tokens, completion_tokens, cost_usd, request_json,"
            " created_at FROM answers WHERE key = ?",
            (key,),
        ).fetchone()
        return CachedAnswer(*row) if row else None

    def put(self, answer: CachedAnswer) -> None:
        if not answer.text.strip():
            raise ValueError(f"refusing to cache an empty answer for key {answer.key}")
        # First writer wins: an entry, once written, never changes.
        self._db.execute(
            "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                answer.key,
                answer.model,
                answer.text,
                answer.prompt_tokens,
                answer.completion_tokens,
                answer.cost_usd,
                answer.request_json,
                answer.created_at,
            ),
        )

    def counts_by_model(self) -> list[tuple[str, int]]:
        return self._db.execute(
            "SELECT model, COUNT(*) FROM answers GROUP BY model ORDER BY model"
        ).fetchall()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def export_to(self, path: str | Path) -> int:
        """Write every entry to one gzip JSON-lines file; returns the number written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        count = 0
        with gzip.open(tmp, "wt", encoding="utf-8") as out:
            for row in self._db.execute(
                "SELECT key, model, text, prompt_tokens, completion_tokens, cost_usd,"
                " request_json, created_at FROM answers ORDER BY key"
            ):
                out.write(json.dumps(asdict(CachedAnswer(*row)), ensure_ascii=False) + "\n")
                count += 1
        tmp.replace(path)
        return count

    def import_from(self, path: str | Path) -> ImportReport:
        """Add the entries of an exported file; existing entries are kept and never overwritten."""
        added = present = conflicting = 0
        with gzip.open(path, "rt", encoding="utf-8") as src:
            for line_no, line in enumerate(src, start=1):
                try:
                    answer = CachedAnswer(**json.loads(line))
                except (json.JSONDecodeError, TypeError) as exc:
                    raise ValueError(f"{path}, line {line_no}: not a cache entry ({exc})") from exc
                existing = self.get(answer.key)
                if existing is None:
                    self.put(answer)
                    added += 1
                elif existing.text == answer.text:
                    present += 1
                else:
                    conflicting += 1
        return ImportReport(added=added, already_present=present, conflicting=conflicting)


def make_answer(key: str, request: Request, text: str, prompt_tokens: int,
                completion_tokens: int, cost_usd: float | None) -> CachedAnswer:
    return CachedAnswer(
        key=key,
        model=request.model,
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        request_json=request_json(request),
        created_at=time.time(),
    )
