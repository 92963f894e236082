"""The call cache: successful answers only, keyed by `request.cache_key`, never expiring.

`CacheBackend` is the small interface the runner needs; `AnswerStore` is what every full
backend shares (the answer journal, export, import). `SQLiteCache` implements it in WAL mode
so that several Snakemake jobs on one machine can read and write at once (SQLite must not live
on NFS); `rubriclab.llm.cache_pg.PostgresCache` on a PostgreSQL server, for jobs on several
hosts. `open_cache` picks the one a config names (a postgresql:// URL, else the folder).

Beside the answers it keeps in-flight claims: the process about to pay for a request claims its
key for a lease it renews while it works; another process that needs the same answer waits for
it instead of paying again. A claim whose holder died (its process is gone, or its lease ran
out) is taken over.

An export (`export_to`) is one gzip JSON-lines file: a header line (format, rubriclab version,
key version, rows and models, a checksum over the rows), then one row per entry carrying what
its key is computed from (the request and the model's fingerprint) and its own checksum.
`import_from` recomputes every key and checksum and checks every field's type and plausibility,
and a signature where there is one (`rubriclab.llm.signing`), over the whole file before it adds
any of it, then adds it in short transactions.

Every answer is journaled (`rubriclab.llm.journal`) before it is written to the database, so an
answer the database refuses (locked past the busy timeout, a full disk) or a process killed
before it stored one loses nothing paid: the next open takes the journal over. See
docs/cache.md.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import math
import os
import re
import socket
import sqlite3
import threading
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from ..processes import process_running
from . import journal as answer_journal
from .request import (CACHE_KEY_VERSION, Request, cache_key, legacy_cache_keys,
                      request_from_dict)

if TYPE_CHECKING:
    from .settings import LLMConfig
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                                   Ed25519PublicKey)

log = logging.getLogger("rubriclab.llm")

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
# The key version an entry was stored under (`request.CACHE_KEY_VERSION`); NULL in entries
# made before versions were recorded, which are version 1's when they have no fingerprint.
_KEY_VERSION_COLUMN = "key_version"
_LATER_COLUMNS = {_FINGERPRINT_COLUMN: "TEXT", _KEY_VERSION_COLUMN: "INTEGER"}
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
            " created_at, model_fingerprint, key_version")

BUSY_TIMEOUT_S = 120.0
# An answer, journaled first, waits this long for the database's write lock (the job goes on,
# serving it from the journal, and stores it at the next write); the last try, at close,
# waits the whole busy timeout.
PUT_WAIT_S = 5.0
# An import writes this many rows per transaction, releasing the write lock between them.
IMPORT_BATCH_ROWS = 500
# Above these an answer's counts are not a model's (the longest context windows hold about
# two million tokens; re-asks and doublings add a few times that); an import refuses them.
MAX_PLAUSIBLE_PROMPT_TOKENS = 50_000_000
MAX_PLAUSIBLE_COMPLETION_TOKENS = 10_000_000
MAX_PLAUSIBLE_COST_USD = 10_000.0

EXPORT_FORMAT = "rubriclab-cache-export"
EXPORT_FORMAT_VERSION = 2
_ROW_FIELDS = ("key", "model", "model_fingerprint", "request", "text", "prompt_tokens",
               "completion_tokens", "cost_usd", "created_at", "sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Exports headed "cache_key_version": 1 were written before key version 2 was named, by a
# release that already computed its keys (exports began with version 2's derivation); every
# row's key is recomputed on import either way.
_READABLE_EXPORT_KEY_VERSIONS = (1, CACHE_KEY_VERSION)


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


class CacheBackend(Protocol):
    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, answer: CachedAnswer) -> None: ...


def request_json(request: Request) -> str:
    return json.dumps(asdict(request), sort_keys=True, ensure_ascii=False)


def open_wal_database(path: Path, schema: str, busy_timeout_s: float = BUSY_TIMEOUT_S,
                      **connect: object) -> sqlite3.Connection:
    """A SQLite file in WAL mode, safe for several processes at once, with `schema` applied.

    Autocommit: every write is its own transaction, so a killed process loses no stored row.
    A write waits up to `busy_timeout_s` for another process's write lock.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, **connect)
    _switch_to_wal(db, path)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
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
    return process_running(pid)


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


class CacheUnavailable(sqlite3.OperationalError):
    """A cache database (PostgreSQL's) that refused a write or could not be reached. A
    subclass of SQLite's refusal, so that whatever handles a locked SQLite cache (a claim that
    fails before anything is paid: `CacheUnwritable`) handles it alike."""


class CacheUnreachable(CacheUnavailable):
    """The cache database's server stayed out of reach for the whole reconnect window
    (`llm.cache_reconnect_s`): the job stops, its answers journaled, rather than failing each
    request (as a claim the server refuses does)."""


def open_cache(config: LLMConfig, read_only: bool = False) -> AnswerStore:
    """The cache `config` names: on the PostgreSQL server of `config.cache_url`, else the
    SQLite file in `config.cache_dir`. `read_only`: for counts and export, creating nothing
    (FileNotFoundError where there is no cache)."""
    if config.cache_url:
        from .cache_pg import PostgresCache

        if read_only:
            return PostgresCache.read_only(config.cache_url)
        return PostgresCache(config.cache_url, local_dir=config.local_dir,
                             reconnect_s=config.cache_reconnect_s)
    if read_only:
        return SQLiteCache.read_only(config.cache_path)
    return SQLiteCache(config.cache_path)


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


class AnswerStore:
    """What every backend of the cache shares: the answer journal (an answer is journaled
    before the database gets it, and served from memory until it does), export and import.
    A backend gives the database's part: `_fetch`, `_insert`, `_transaction`,
    `_busy_timeout`, `_stored_fingerprints`, `_all_answers`, `_close_db`, `journal_dir`,
    `location` (the cache as named in messages) and `_refusals` (the errors of a database
    that refuses a write for now)."""

    location: str
    busy_timeout_s: float = BUSY_TIMEOUT_S
    _refusals: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)
    _read_only = False

    def _start_journal(self) -> None:
        # Answers journaled and not yet in the database (its lock was held past the busy
        # timeout, or the disk was full): served from here, stored at the next write.
        self._pending: dict[str, CachedAnswer] = {}
        self._warned: set[str] = set()
        self._journal: answer_journal.AnswerJournal | None = None
        self.take_over_journals()

    @property
    def journal_dir(self) -> Path:
        raise NotImplementedError

    def _close_db(self) -> None:
        raise NotImplementedError

    def _fetch(self, key: str) -> CachedAnswer | None:
        raise NotImplementedError

    def _insert(self, answer: CachedAnswer) -> None:
        raise NotImplementedError

    def _store(self, answer: CachedAnswer) -> None:
        """Write one pending answer to the database (first writer wins)."""
        self._insert(answer)

    def _transaction(self, immediate: bool = False) -> contextlib.AbstractContextManager:
        raise NotImplementedError

    def _busy_timeout(self, seconds: float) -> contextlib.AbstractContextManager:
        raise NotImplementedError

    def _stored_fingerprints(self) -> Iterator[tuple[str, str]]:
        """(model, fingerprint) of every fingerprint recorded."""
        raise NotImplementedError

    def _all_answers(self) -> contextlib.AbstractContextManager[Iterator[CachedAnswer]]:
        """Every entry, by key, read from one snapshot of the database."""
        raise NotImplementedError

    def close(self) -> None:
        if self._read_only:
            self._close_db()
            return
        self._store_pending(self.busy_timeout_s)
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        self.take_over_journals()  # ours too, if it kept something for later
        self._close_db()

    def __enter__(self) -> AnswerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> CachedAnswer | None:
        pending = self._pending.get(key)
        if pending is not None:
            return pending
        return self._fetch(key)

    def put(self, answer: CachedAnswer) -> None:
        """Store an answer: journaled (fsynced) first, outside the database lock, then written
        to the database; if the database refuses (locked past the busy timeout, disk full) it
        stays journaled and served, and is stored at the next write or open."""
        if not answer.text.strip():
            raise ValueError(f"refusing to cache an empty answer for key {answer.key}")
        if answer.key in self._pending:
            return  # first writer wins
        if answer.key_version is None:
            answer = replace(answer, key_version=CACHE_KEY_VERSION)
        try:
            self._journal_for_writing().answer(answer.key, asdict(answer),
                                               durable=not answer.model.startswith("fake/"))
        except OSError as exc:
            log.error("could not journal the answer of %s (key %s) in %s: %s; it is kept in "
                      "memory until the cache database takes it", answer.model, answer.key,
                      self.journal_dir, exc)
        self._pending[answer.key] = answer
        self._store_pending(min(PUT_WAIT_S, self.busy_timeout_s))

    def _journal_for_writing(self) -> answer_journal.AnswerJournal:
        if self._journal is None:
            self._journal = answer_journal.AnswerJournal(self.journal_dir)
        return self._journal

    def _store_pending(self, wait_s: float | None = None) -> bool:
        """Write the pending answers to the database, waiting up to `wait_s` for its lock;
        False (they stay pending) if it refuses."""
        if not self._pending:
            return True
        with self._busy_timeout(self.busy_timeout_s if wait_s is None else wait_s):
            for key, answer in list(self._pending.items()):
                try:
                    self._store(answer)
                except self._refusals as exc:
                    if key not in self._warned:
                        self._warned.add(key)
                        log.warning("%s: could not store the answer of %s (key %s): %s; it is "
                                    "kept in the answer journal (%s) and stored at the next "
                                    "write or open", self.location, answer.model, key, exc,
                                    self.journal_dir)
                    return False
                del self._pending[key]
                if self._journal is not None:
                    self._journal.stored(key)
        return True

    def _insert_rows(self, rows: list[dict[str, Any]]) -> None:
        """Journaled answers into the database, a short transaction per batch of rows."""
        names = {f.name for f in fields(CachedAnswer)}
        answers = [CachedAnswer(**{k: v for k, v in row.items() if k in names}) for row in rows]
        for start in range(0, len(answers), IMPORT_BATCH_ROWS):
            with self._transaction(immediate=True):
                for answer in answers[start:start + IMPORT_BATCH_ROWS]:
                    self._insert(answer)

    def take_over_journals(self) -> int:
        """Store the answers of journals no open cache holds (a process that died or could
        not store them) and bill their unfinished requests; kept for later if the database
        refuses. Returns the journals taken."""
        own = [self._journal.path] if self._journal is not None else []
        try:
            return answer_journal.take_over(self.journal_dir, self._insert_rows, skip=own)
        except (*self._refusals, OSError) as exc:
            log.warning("%s: answer journals in %s kept for later: %s", self.location,
                        self.journal_dir, exc)
            return 0

    # --- what a client journals about its calls ---------------------------------------------

    def journal_sent(self, key: str, model: str, attempts: str | None = None,
                     rule: str | None = None, run: str | None = None,
                     batch: bool = False) -> None:
        """A paid request is about to go to its model, in a provider batch with `batch` (see
        `rubriclab.llm.journal`)."""
        self._journal_for_writing().sent(key, model, attempts, rule, run, batch)

    def journal_closed(self, key: str) -> None:
        """The request's ledger row is written."""
        if self._journal is not None:
            self._journal.closed(key)


    # --- export and import ------------------------------------------------------------------

    def export_to(self, path: str | Path, fingerprints: Mapping[str, str] | None = None,
                  sign_with: Ed25519PrivateKey | None = None) -> int:
        """Write every entry to one gzip JSON-lines file (header, then rows); returns the rows.

        Each row carries its request and its model's fingerprint, and its key is recomputed
        from them here. An entry stored before fingerprints were recorded gets the one (of
        those recorded for its model, `fingerprints` given here, and the fixed ones) that
        reproduces its key; an entry keyed before numbers were normalised gets its canonical
        key. Entries whose key nothing reproduces are refused, all of them named at once.
        `sign_with`: a private key whose ed25519 signature of the header goes into it
        (`rubriclab.llm.signing`).
        """
        self._store_pending()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        known: dict[str, set[str]] = defaultdict(set)
        for model, fingerprint in self._stored_fingerprints():
            known[model].add(fingerprint)
        for model, fingerprint in (fingerprints or {}).items():
            known[model].add(fingerprint)
        rows_tmp = path.with_name(path.name + ".rows.tmp")
        row_sums = hashlib.sha256()
        models: dict[str, Counter] = defaultdict(Counter)
        unverified: Counter = Counter()
        written: set[str] = set()
        count = 0
        with self._all_answers() as stored, gzip.open(rows_tmp, "wt", encoding="utf-8") as out:
            for answer in stored:
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
                f"{self.location}: no known fingerprint reproduces the keys of "
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
        if sign_with is not None:
            from .signing import SIGNATURE_FIELD, sign_header

            header[SIGNATURE_FIELD] = sign_header(header, sign_with)
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

    def import_from(self, path: str | Path,
                    trusted: list[Ed25519PublicKey] | None = None) -> ImportReport:
        """Add the entries of an exported file; on any error in it, none.

        The whole file is checked first (every row, its key and checksum, and the header's
        totals and signature), without the database lock; then its rows are written in short
        transactions of `IMPORT_BATCH_ROWS`, the lock released between them, so running jobs
        go on writing. `trusted`: public keys one of which must have signed the file (a
        signature present is always checked). Existing entries are kept and never
        overwritten: an entry whose answer differs from the file's is counted as conflicting.
        """
        path = Path(path)
        header, signer = self._check_file(path, trusted)
        added = present = conflicting = 0
        row_sums = hashlib.sha256()
        with open(path, "rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as src:
            lines = _lines(src, path)
            next(lines, None)
            batch: list[CachedAnswer] = []

            def write(batch: list[CachedAnswer]) -> None:
                nonlocal added, present, conflicting
                with self._transaction(immediate=True):
                    for entry in batch:
                        existing = self.get(entry.key)
                        if existing is None:
                            self._insert(replace(entry, key_version=CACHE_KEY_VERSION))
                            added += 1
                        elif existing.text == entry.text:
                            present += 1
                        else:
                            conflicting += 1

            for line_no, line in lines:
                try:
                    answer = _answer_from_row(line)  # again: the file may change meanwhile
                except ValueError as exc:
                    raise CacheFileError(path, f"{exc} (the file changed while it was imported;"
                                         f" {added} entries, each checked, were added)",
                                         line_no) from None
                row_sums.update(answer.sha256.encode() + b"\n")
                batch.append(answer.entry)
                if len(batch) >= IMPORT_BATCH_ROWS:
                    write(batch)
                    batch = []
            if batch:
                write(batch)
        if row_sums.hexdigest() != header["sha256"]:
            raise CacheFileError(path, f"the file changed while it was imported; {added} "
                                 "entries, each checked, were added", 1)
        return ImportReport(added=added, already_present=present, conflicting=conflicting,
                            signed_by=signer)

    @staticmethod
    def _check_file(path: Path, trusted: list[Ed25519PublicKey] | None
                    ) -> tuple[dict[str, Any], str | None]:
        """Check a whole export file; its header and the id of the key that signed it."""
        from .signing import SignatureRefused, verify_header

        with open(path, "rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as src:
            lines = _lines(src, path)
            header = _check_header(path, next(lines, (1, ""))[1])
            try:
                signer = verify_header(header, trusted)
            except SignatureRefused as exc:
                raise CacheFileError(path, str(exc), 1) from None
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
        return header, signer



class SQLiteCache(AnswerStore):
    def __init__(self, path: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout_s = busy_timeout_s
        self._db = open_wal_database(self.path, _SCHEMA, busy_timeout_s)
        self._db.execute(_CLAIMS)
        # The client's heartbeat thread renews claims on a connection of its own (a SQLite
        # connection serves only the thread that made it).
        self._renewals: sqlite3.Connection | None = None
        self._renewals_lock = threading.Lock()
        if not self._has_columns():
            # Immediate: two processes opening a new cache at once would otherwise both read
            # the columns, and the second to add one fails at once ("database is locked").
            with self._transaction(immediate=True):
                columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
                for column, kind in _LATER_COLUMNS.items():
                    if column not in columns:
                        self._db.execute(f"ALTER TABLE answers ADD COLUMN {column} {kind}")
        self._start_journal()

    def _has_columns(self) -> bool:
        """Whether the answers table has every later column (read only: no write lock)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
        return set(_LATER_COLUMNS) <= columns

    @property
    def journal_dir(self) -> Path:
        return answer_journal.journal_dir(self.path)

    def _close_db(self) -> None:
        with self._renewals_lock:
            if self._renewals is not None:
                self._renewals.close()
                self._renewals = None
        self._db.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def _transaction(self, immediate: bool = False) -> _Transaction:
        return _Transaction(self._db, immediate)

    def _fetch(self, key: str) -> CachedAnswer | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM answers WHERE key = ?", (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    def _stored_fingerprints(self) -> Iterator[tuple[str, str]]:
        yield from self._db.execute("SELECT DISTINCT model, model_fingerprint FROM answers"
                                    " WHERE model_fingerprint IS NOT NULL").fetchall()

    @contextlib.contextmanager
    def _all_answers(self) -> Iterator[Iterator[CachedAnswer]]:
        with self._transaction():
            yield (CachedAnswer(*row) for row in
                   self._db.execute(f"SELECT {_COLUMNS} FROM answers ORDER BY key"))

    @contextlib.contextmanager
    def _busy_timeout(self, seconds: float) -> Iterator[None]:
        if seconds == self.busy_timeout_s:
            yield
            return
        self._db.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
        try:
            yield
        finally:
            self._db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")

    def _insert(self, answer: CachedAnswer) -> None:
        # First writer wins: an entry, once written, never changes.
        self._db.execute(
            f"INSERT OR IGNORE INTO answers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (answer.key, answer.model, answer.text, answer.prompt_tokens,
             answer.completion_tokens, answer.cost_usd, answer.request_json, answer.created_at,
             answer.model_fingerprint, answer.key_version),
        )

    def record_fingerprint(self, key: str, fingerprint: str) -> None:
        """Fill in the fingerprint of an entry stored before fingerprints were recorded (its key
        is then known to be the current key version's too)."""
        try:
            self._db.execute("UPDATE answers SET model_fingerprint = ?, key_version = ?"
                             " WHERE key = ? AND model_fingerprint IS NULL",
                             (fingerprint, CACHE_KEY_VERSION, key))
        except sqlite3.OperationalError as exc:  # recorded at a later hit
            log.info("%s: could not record the fingerprint of %s: %s", self.path, key, exc)

    def earlier_version_entry(self, key: str) -> CachedAnswer | None:
        """The entry stored under `key` if an earlier key version stored it (none recorded:
        it predates key versions and fingerprints)."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM answers WHERE key = ? AND"
                               " model_fingerprint IS NULL AND key_version IS NULL",
                               (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    # --- in-flight claims -------------------------------------------------------------------

    def claim(self, key: str, owner: str, lease_s: float, held_by_owner: bool = False) -> Claim:
        """Claim `key` for `owner` unless it is answered or a live holder has it.

        `held_by_owner`: another task of the same owner is answering it (wait for that one).
        """
        now = time.time()
        pending = self._pending.get(key)
        if pending is not None:
            return Claim(answer=pending)
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
        """Extend the leases of `owner`'s claims (from any thread)."""
        try:
            with self._renewals_lock:
                if self._renewals is None:
                    self._renewals = sqlite3.connect(
                        self.path, timeout=min(PUT_WAIT_S, self.busy_timeout_s),
                        isolation_level=None, check_same_thread=False)
                self._renewals.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                                       (time.time() + lease_s, owner))
        except sqlite3.OperationalError as exc:  # renewed at the next beat, or the lease lapses
            log.warning("%s: could not renew this process's claims: %s", self.path, exc)

    def release(self, key: str, owner: str) -> None:
        try:
            with self._busy_timeout(min(PUT_WAIT_S, self.busy_timeout_s)):
                self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))
        except sqlite3.OperationalError as exc:
            # Left to lapse: its answer (if any) is served before any claim is looked at.
            log.warning("%s: could not release the claim of %s: %s", self.path, key, exc)

    @classmethod
    def read_only(cls, path: str | Path) -> SQLiteCache:
        """The cache at `path` for reading (counts, get, export) without writing anything to
        it or beside it; FileNotFoundError when there is none."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no cache at {path}")
        cache = cls.__new__(cls)
        cache.path = path
        cache.location = str(path)
        cache.busy_timeout_s = BUSY_TIMEOUT_S
        cache._db = _connect_read_only(path)
        cache._renewals, cache._renewals_lock = None, threading.Lock()
        # no journal is taken over or written: what it holds is stored by the next writer
        cache._pending, cache._warned, cache._journal = {}, set(), None
        cache._read_only = True
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
    if header.get("cache_key_version") not in _READABLE_EXPORT_KEY_VERSIONS:
        raise CacheFileError(path, f"keys of version {header.get('cache_key_version')!r}; this "
                             f"rubriclab reads versions {list(_READABLE_EXPORT_KEY_VERSIONS)}",
                             1)
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
    for name, most in (("prompt_tokens", MAX_PLAUSIBLE_PROMPT_TOKENS),
                       ("completion_tokens", MAX_PLAUSIBLE_COMPLETION_TOKENS)):
        if not _is_int(row[name]) or row[name] < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {row[name]!r}")
        if row[name] > most:
            raise ValueError(f"row of key {row['key']}: {name} {row[name]:,} is implausible "
                             f"(more than {most:,} for one answer); the row is refused")
    if row["cost_usd"] is not None and not (_is_number(row["cost_usd"]) and row["cost_usd"] >= 0):
        raise ValueError(f"cost_usd must be a number >= 0 or null, got {row['cost_usd']!r}")
    if row["cost_usd"] is not None and row["cost_usd"] > MAX_PLAUSIBLE_COST_USD:
        raise ValueError(f"row of key {row['key']}: cost_usd {row['cost_usd']:,} is implausible "
                         f"(more than ${MAX_PLAUSIBLE_COST_USD:,.0f} for one answer); the row "
                         "is refused")
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
