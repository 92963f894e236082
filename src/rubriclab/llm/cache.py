"""The call cache: successful answers only, keyed by `request.cache_key`, never expiring.

`CacheBackend` is the small interface the runner needs; `SQLiteCache` implements it in WAL mode
so that several Snakemake jobs on one machine can read and write at once. (SQLite must not live
on NFS; a cluster run would put another backend behind the same interface.)

Beside the answers it keeps in-flight claims: the process about to pay for a request claims its
key for a lease it renews while it works; another process that needs the same answer waits for
it instead of paying again. A claim whose holder died (its process is gone, or its lease ran
out) is taken over.

An export (`export_to`) is one gzip JSON-lines file: a header line (format, rubriclab version,
key version, rows and models, a checksum over the rows), then one row per entry carrying what
its key is computed from (the request and the model's fingerprint) and its own checksum.
`import_from` recomputes every key and checksum and checks every field's type; it adds all of a
file or nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import socket
import sqlite3
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Protocol

from .request import (CACHE_KEY_VERSION, Request, cache_key, legacy_cache_keys,
                      request_from_dict)

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
# Added after the first version: NULL in entries made before it (see `export_to`).
_FINGERPRINT_COLUMN = "model_fingerprint"
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL
)
"""
_COLUMNS = ("key, model, text, prompt_tokens, completion_tokens, cost_usd, request_json,"
            " created_at, model_fingerprint")

EXPORT_FORMAT = "rubriclab-cache-export"
EXPORT_FORMAT_VERSION = 2
_ROW_FIELDS = ("key", "model", "model_fingerprint", "request", "text", "prompt_tokens",
               "completion_tokens", "cost_usd", "created_at", "sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")


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


@dataclass(frozen=True)
class ImportReport:
    added: int
    already_present: int
    conflicting: int


@dataclass(frozen=True)
class Claim:
    """The answer if there is one, else whether the key is now ours, else who holds it."""

    answer: CachedAnswer | None = None
    claimed: bool = False
    holder: str = ""


class CacheFileError(ValueError):
    """An export file refused, naming the file and, where there is one, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


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
    _switch_to_wal(db, path)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=120000")
    db.execute(schema)
    return db


def _switch_to_wal(db: sqlite3.Connection, path: Path, wait_s: float = 120.0) -> None:
    """Put a database in WAL mode. Switching a new file's journal mode takes an exclusive
    lock, and SQLite answers "database is locked" at once (its busy handler is not asked)
    while another process creates the same file, so the switch is retried, within a bound."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise sqlite3.OperationalError(f"{path}: {exc}") from exc
            time.sleep(0.05)


def _process_alive(host: str, pid: int) -> bool:
    if host != socket.gethostname():
        return True  # another machine's process: only its lease can tell
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """An existing cache opened for reading only (SQLite URI mode=ro): nothing is created,
    migrated or written, so a read-only file or folder can be read. In WAL mode SQLite reads
    through the -shm file, which a read-only folder without one cannot get; with no -wal file
    beside it, every row is in the database file itself, so it is then read as immutable."""
    uri = path.resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=120, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        db.close()
        if Path(str(path) + "-wal").exists():
            raise sqlite3.OperationalError(
                f"{path}: {exc} (its -wal file holds rows not yet in the database file, and "
                "the folder is not writable for the -shm file that reading them needs; open "
                "it once where it can be written)") from exc
        db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
    columns = {row[1] for row in db.execute("PRAGMA table_info(answers)")}
    if not columns:
        db.close()
        raise sqlite3.DatabaseError(f"{path} is not a rubriclab cache (it has no answers table)")
    if _FINGERPRINT_COLUMN not in columns:
        # A cache from before fingerprints were recorded, read as if the column were NULL
        # (a temporary view shadows the table; the file is not changed).
        db.execute(f"CREATE TEMP VIEW answers AS SELECT *, NULL AS {_FINGERPRINT_COLUMN}"
                   " FROM main.answers")
    return db


class SQLiteCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_wal_database(self.path, _SCHEMA)
        self._db.execute(_CLAIMS)
        # Immediate: two processes opening a new cache at once would otherwise both read the
        # columns, and the second to add one fails at once ("database is locked").
        with self._transaction(immediate=True):
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
            if _FINGERPRINT_COLUMN not in columns:
                self._db.execute(f"ALTER TABLE answers ADD COLUMN {_FINGERPRINT_COLUMN} TEXT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self, immediate: bool = False) -> _Transaction:
        return _Transaction(self._db, immediate)

    def get(self, key: str) -> CachedAnswer | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM answers WHERE key = ?", (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    def put(self, answer: CachedAnswer) -> None:
        if not answer.text.strip():
            raise ValueError(f"refusing to cache an empty answer for key {answer.key}")
        # First writer wins: an entry, once written, never changes.
        self._db.execute(
            f"INSERT OR IGNORE INTO answers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (answer.key, answer.model, answer.text, answer.prompt_tokens,
             answer.completion_tokens, answer.cost_usd, answer.request_json, answer.created_at,
             answer.model_fingerprint),
        )

    def record_fingerprint(self, key: str, fingerprint: str) -> None:
        """Fill in the fingerprint of an entry stored before fingerprints were recorded."""
        self._db.execute("UPDATE answers SET model_fingerprint = ? WHERE key = ?"
                         " AND model_fingerprint IS NULL", (fingerprint, key))

    # --- in-flight claims -------------------------------------------------------------------

    def claim(self, key: str, owner: str, lease_s: float, held_by_owner: bool = False) -> Claim:
        """Claim `key` for `owner` unless it is answered or a live holder has it.

        `held_by_owner`: another task of the same owner is answering it (wait for that one).
        """
        now = time.time()
        with self._transaction(immediate=True):
            answer = self.get(key)
            if answer is not None:
                return Claim(answer=answer)
            row = self._db.execute("SELECT owner, host, pid, expires_at FROM claims WHERE key = ?",
                                   (key,)).fetchone()
            if row is not None:
                holder, host, pid, expires_at = row
                live = expires_at > now and _process_alive(host, pid)
                if live and (holder != owner or held_by_owner):
                    return Claim(holder=f"process {pid} on {host}")
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                             (key, owner, socket.gethostname(), os.getpid(), now + lease_s))
        return Claim(claimed=True)

    def renew_claims(self, owner: str, lease_s: float) -> None:
        self._db.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                         (time.time() + lease_s, owner))

    def release(self, key: str, owner: str) -> None:
        self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    @classmethod
    def read_only(cls, path: str | Path) -> SQLiteCache:
        """The cache at `path` for reading (counts, get, export) without writing anything to
        it or beside it; FileNotFoundError when there is none."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no cache at {path}")
        cache = cls.__new__(cls)
        cache.path = path
        cache._db = _connect_read_only(path)
        return cache

    # --- counts -----------------------------------------------------------------------------

    def counts_by_model(self) -> list[tuple[str, int]]:
        return self._db.execute(
            "SELECT model, COUNT(*) FROM answers GROUP BY model ORDER BY model"
        ).fetchall()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def models_without_fingerprint(self) -> list[str]:
        return [m for (m,) in self._db.execute(
            "SELECT DISTINCT model FROM answers WHERE model_fingerprint IS NULL ORDER BY model")]

    # --- export and import ------------------------------------------------------------------

    def export_to(self, path: str | Path, fingerprints: Mapping[str, str] | None = None) -> int:
        """Write every entry to one gzip JSON-lines file (header, then rows); returns the rows.

        Each row carries its request and its model's fingerprint, and its key is recomputed
        from them here. An entry stored before fingerprints were recorded gets the one (of
        those recorded for its model, `fingerprints` given here, and the fixed ones) that
        reproduces its key; an entry keyed before numbers were normalised gets its canonical
        key. Entries whose key nothing reproduces are refused, all of them named at once.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        known: dict[str, set[str]] = defaultdict(set)
        for model, fingerprint in self._db.execute(
                "SELECT DISTINCT model, model_fingerprint FROM answers"
                " WHERE model_fingerprint IS NOT NULL"):
            known[model].add(fingerprint)
        for model, fingerprint in (fingerprints or {}).items():
            known[model].add(fingerprint)
        rows_tmp = path.with_name(path.name + ".rows.tmp")
        row_sums = hashlib.sha256()
        models: dict[str, Counter] = defaultdict(Counter)
        unverified: Counter = Counter()
        written: set[str] = set()
        count = 0
        with self._transaction(), gzip.open(rows_tmp, "wt", encoding="utf-8") as out:
            for stored in self._db.execute(f"SELECT {_COLUMNS} FROM answers ORDER BY key"):
                answer = CachedAnswer(*stored)
                resolved = _resolve_stored(answer, known[answer.model])
                if resolved is None:
                    unverified[answer.model] += 1
                    continue
                request, fingerprint = resolved
                key = cache_key(request, fingerprint)
                if key in written:  # an entry keyed before normalisation, stored again since
                    continue
                written.add(key)
                row = {"key": key, "model": answer.model,
                       "model_fingerprint": fingerprint, "request": asdict(request),
                       "text": answer.text, "prompt_tokens": answer.prompt_tokens,
                       "completion_tokens": answer.completion_tokens,
                       "cost_usd": answer.cost_usd, "created_at": answer.created_at}
                row["sha256"] = _row_sha256(row)
                row_sums.update(row["sha256"].encode() + b"\n")
                models[answer.model][fingerprint] += 1
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        if unverified:
            rows_tmp.unlink()
            named = ", ".join(f"{n} of {m!r}" for m, n in sorted(unverified.items()))
            raise ValueError(
                f"{self.path}: no known fingerprint reproduces the keys of "
                f"{sum(unverified.values())} entries ({named}), stored before fingerprints were "
                "recorded; "
                "name the fingerprint of their model (rubriclab cache export --fingerprint "
                "MODEL=FINGERPRINT) or leave them out of the export by deleting them")
        header = {
            "format": EXPORT_FORMAT, "format_version": EXPORT_FORMAT_VERSION,
            "rubriclab_version": _rubriclab_version(), "cache_key_version": CACHE_KEY_VERSION,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "rows": count,
            "models": {m: {"rows": sum(fps.values()), "fingerprints": sorted(fps)}
                       for m, fps in sorted(models.items())},
            "sha256": row_sums.hexdigest(),
        }
        # Two gzip members, header then rows, read back as one stream.
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.write(gzip.compress((json.dumps(header, ensure_ascii=False) + "\n").encode()))
            with open(rows_tmp, "rb") as rows:
                while chunk := rows.read(1 << 20):
                    out.write(chunk)
        rows_tmp.unlink()
        tmp.replace(path)
        return count

    def import_from(self, path: str | Path) -> ImportReport:
        """Add the entries of an exported file, all of them or (on any error) none.

        Existing entries are kept and never overwritten: an entry whose answer differs from the
        file's is counted as conflicting.
        """
        path = Path(path)
        added = present = conflicting = 0
        with open(path, "rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as src, \
                self._transaction(immediate=True):
            lines = _lines(src, path)
            header = _check_header(path, next(lines, (1, ""))[1])
            row_sums = hashlib.sha256()
            models: Counter = Counter()
            last = 1
            for line_no, line in lines:
                last = line_no
                try:
                    answer = _answer_from_row(line)
                except ValueError as exc:
                    raise CacheFileError(path, str(exc), line_no) from None
                row_sums.update(answer.sha256.encode() + b"\n")
                models[answer.entry.model] += 1
                existing = self.get(answer.entry.key)
                if existing is None:
                    self.put(answer.entry)
                    added += 1
                elif existing.text == answer.entry.text:
                    present += 1
                else:
                    conflicting += 1
            rows = last - 1
            if rows != header["rows"]:
                raise CacheFileError(path, f"the file holds {rows} rows, its header (line 1) "
                                     f"says {header['rows']}: rows are missing or were added",
                                     last + 1)
            declared = {m: v["rows"] for m, v in header["models"].items()}
            if dict(models) != declared:
                raise CacheFileError(path, f"rows per model {dict(sorted(models.items()))} differ "
                                     f"from the header's {declared}", 1)
            if row_sums.hexdigest() != header["sha256"]:
                raise CacheFileError(path, "the rows' checksums do not add up to the header's "
                                     "(rows reordered, replaced or altered after export)", 1)
        return ImportReport(added=added, already_present=present, conflicting=conflicting)


class _Transaction:
    """BEGIN ... COMMIT on an autocommit connection; ROLLBACK if the block raises."""

    def __init__(self, db: sqlite3.Connection, immediate: bool = False):
        self.db = db
        self.immediate = immediate

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")


def _rubriclab_version() -> str:
    from rubriclab import __version__

    return __version__


def _row_sha256(row: Mapping[str, Any]) -> str:
    body = {k: v for k, v in row.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _stored_request(answer: CachedAnswer) -> Request:
    """The request of a stored entry; fields added since it was stored take their defaults
    (which leave its key unchanged)."""
    stored = json.loads(answer.request_json)
    defaults = {f.name: f.default for f in fields(Request) if f.name not in stored
                and f.name not in ("model", "messages")}
    return request_from_dict({**defaults, **stored})


def _resolve_stored(answer: CachedAnswer, known: set[str]) -> tuple[Request, str] | None:
    request = _stored_request(answer)
    if answer.model_fingerprint is not None:
        candidates = [answer.model_fingerprint]
    else:
        fixed = [_fake_fingerprint(answer.model)] if answer.model.startswith("fake/") else []
        if not answer.model.startswith(("fake/", "local/")):
            fixed.append("")  # a remote model at its provider's own endpoint
        candidates = sorted(known) + fixed
    for fingerprint in candidates:
        if answer.key in [cache_key(request, fingerprint),
                          *legacy_cache_keys(request, fingerprint)]:
            return request, fingerprint
    return None


def _fake_fingerprint(model: str) -> str:
    from .fake import fake_fingerprint

    try:
        return fake_fingerprint(model)
    except ValueError:  # a fake model this version does not know
        return "fake-v1"


def _lines(src: IO[str], path: Path) -> Iterator[tuple[int, str]]:
    line_no = 0
    while True:
        try:
            line = src.readline()
        except gzip.BadGzipFile as exc:
            raise CacheFileError(path, f"not a gzip file ({exc}); an export of `rubriclab cache "
                                 "export` is gzip-compressed JSON lines") from None
        except EOFError:
            raise CacheFileError(path, "the file ends early (truncated): the compressed stream "
                                 "stops inside this line", line_no + 1) from None
        except (zlib.error, OSError, UnicodeDecodeError) as exc:
            raise CacheFileError(path, f"corrupt compressed data ({exc})", line_no + 1) from None
        if not line:
            return
        line_no += 1
        yield line_no, line


def _check_header(path: Path, line: str) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CacheFileError(path, f"not a cache export header ({exc})", 1) from None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        if isinstance(header, dict) and "request_json" in header:
            raise CacheFileError(path, "an export without a header (written before exports "
                                 "carried their provenance); export it again with this "
                                 "version of rubriclab", 1)
        raise CacheFileError(path, f"not a cache export: the first line must be a header with "
                             f"format {EXPORT_FORMAT!r}", 1)
    if header.get("format_version") != EXPORT_FORMAT_VERSION:
        raise CacheFileError(path, f"export format version {header.get('format_version')!r}; "
                             f"this rubriclab reads version {EXPORT_FORMAT_VERSION}", 1)
    if header.get("cache_key_version") != CACHE_KEY_VERSION:
        raise CacheFileError(path, f"keys of version {header.get('cache_key_version')!r}; this "
                             f"rubriclab computes version {CACHE_KEY_VERSION}", 1)
    models = header.get("models")
    if (not _is_int(header.get("rows")) or not isinstance(header.get("sha256"), str)
            or not isinstance(models, dict)
            or not all(isinstance(v, dict) and _is_int(v.get("rows")) for v in models.values())):
        raise CacheFileError(path, "the header lacks rows, models or sha256", 1)
    return header


@dataclass(frozen=True)
class _Row:
    entry: CachedAnswer
    sha256: str


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _answer_from_row(line: str) -> _Row:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON row ({exc})") from None
    if not isinstance(row, dict):
        raise ValueError(f"a row must be an object, got {type(row).__name__}")
    if set(row) != set(_ROW_FIELDS):
        missing, unknown = sorted(set(_ROW_FIELDS) - set(row)), sorted(set(row) - set(_ROW_FIELDS))
        raise ValueError(f"row fields differ from an export's (missing {missing}, unknown {unknown})")
    for name in ("key", "sha256"):
        if not isinstance(row[name], str) or not _SHA256.fullmatch(row[name]):
            raise ValueError(f"{name} must be 64 lower-case hex digits, got {row[name]!r}")
    for name in ("model", "model_fingerprint", "text"):
        if not isinstance(row[name], str):
            raise ValueError(f"{name} must be a string, got {row[name]!r}")
    if not row["text"].strip():
        raise ValueError("text is empty: an empty answer is never cached")
    for name in ("prompt_tokens", "completion_tokens"):
        if not _is_int(row[name]) or row[name] < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {row[name]!r}")
    if row["cost_usd"] is not None and not (_is_number(row["cost_usd"]) and row["cost_usd"] >= 0):
        raise ValueError(f"cost_usd must be a number >= 0 or null, got {row['cost_usd']!r}")
    if not _is_number(row["created_at"]):
        raise ValueError(f"created_at must be a number, got {row['created_at']!r}")
    if _row_sha256(row) != row["sha256"]:
        raise ValueError("the row's checksum does not match its content (altered after export)")
    try:
        request = request_from_dict(row["request"])
    except (ValueError, TypeError) as exc:
        raise ValueError(f"request: {exc}") from None
    if request.model != row["model"]:
        raise ValueError(f"model {row['model']!r} is not the request's ({request.model!r})")
    expected = cache_key(request, row["model_fingerprint"])
    if expected != row["key"]:
        raise ValueError(f"key {row['key']} does not match its request and model fingerprint "
                         f"(they give {expected})")
    entry = CachedAnswer(key=row["key"], model=row["model"], text=row["text"],
                         prompt_tokens=row["prompt_tokens"],
                         completion_tokens=row["completion_tokens"],
                         cost_usd=None if row["cost_usd"] is None else float(row["cost_usd"]),
                         request_json=request_json(request), created_at=float(row["created_at"]),
                         model_fingerprint=row["model_fingerprint"])
    return _Row(entry=entry, sha256=row["sha256"])


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
