"""The answer journal: every answer on disk the moment it arrives, whatever then becomes of its
write to the cache database (a write lock held past the busy timeout, a full disk, a kill).

Each open `SQLiteCache` that writes keeps one journal file of its own,
`<cache stem>.answers/<host>-<pid>-<token>.jsonl` beside the database, locked (`flock`) for as
long as it is open. One JSON object per line:

- `{"t": "sent", "key", "model", "attempts", "rule", "run", "at", "batch"}`: a paid request is
  about to go to its model (`attempts`: the stage's attempts journal, where its cost belongs;
  `batch`: it goes in a provider batch, whose answer a later run may still collect);
- `{"t": "closed", "key"}`: the request's ledger row is written, so its attempts journal holds
  what it cost;
- `{"t": "answer", "row": {...}}`: an answer to store, appended and fsynced before the database
  is asked (outside its lock).

A journal that no open cache holds (its process closed its cache, or died) is taken by the next
one that opens the cache or finishes: its answers are stored (first writer wins, in short
transactions), every request sent and never closed is written to its attempts journal (at the
cost of its answer where the journal holds one, else as "paid-unknown": a killed process's call
in flight may have been billed), and the file is deleted.

The file is preallocated (`RESERVE_BYTES` of zeros, renewed as it fills) and written at offsets
inside it, so that an answer that arrives just after the disk filled still has room; readers
stop at the first zero byte (JSON text never holds one).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("rubriclab.llm")

RESERVE_BYTES = 1 << 20
# Past this many bytes written, the records still outstanding move to a new file.
COMPACT_BYTES = 8 << 20
SUFFIX = ".jsonl"


def journal_dir(cache_path: Path) -> Path:
    return cache_path.parent / f"{cache_path.stem}.answers"


class AnswerJournal:
    """The journal file of one open cache (see the module docstring)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._lock = threading.Lock()
        # Outstanding records, by key: what a compaction carries into the next file.
        self._answers: dict[str, bytes] = {}
        self._sent: dict[str, list[bytes]] = {}
        self._outstanding_bytes = 0
        self._fd = -1
        self._open_file()

    # --- records --------------------------------------------------------------------------

    def answer(self, key: str, row: dict[str, Any], durable: bool = True) -> None:
        """Append an answer to store (fsynced if `durable`); OSError if the disk refuses it."""
        line = _line({"t": "answer", "row": row})
        with self._lock:
            self._write(line, durable)
            self._outstanding_bytes += len(line) - len(self._answers.get(key, b""))
            self._answers[key] = line

    def stored(self, key: str) -> None:
        """The answer of `key` is in the database: a compaction need not carry it."""
        with self._lock:
            self._outstanding_bytes -= len(self._answers.pop(key, b""))

    def sent(self, key: str, model: str, attempts: str | None, rule: str | None,
             run: str | None, batch: bool = False) -> None:
        line = _line({"t": "sent", "key": key, "model": model, "attempts": attempts,
                      "rule": rule, "run": run, "at": time.time(), "batch": batch})
        with self._lock:
            self._write(line, durable=False)  # a kill leaves it in the page cache
            self._sent.setdefault(key, []).append(line)
            self._outstanding_bytes += len(line)

    def closed(self, key: str) -> None:
        with self._lock:
            sent = self._sent.pop(key, None)
            if sent is not None:
                self._outstanding_bytes -= sum(map(len, sent))
                self._write(_line({"t": "closed", "key": key}), durable=False)

    @property
    def outstanding(self) -> bool:
        return bool(self._answers or self._sent)

    def close(self) -> None:
        """Close the file (deleted where nothing is outstanding: every answer stored, every
        request sent closed); the lock goes with it, so the next cache to open takes it."""
        with self._lock:
            if self._fd < 0:
                return
            if not self.outstanding:
                _unlink(self.path)
            os.close(self._fd)
            self._fd = -1

    # --- the file ---------------------------------------------------------------------------

    def _open_file(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}{SUFFIX}"
        self.path = self.directory / name
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._offset = 0
        self._size = 0
        self._grow(RESERVE_BYTES, required=False)

    def _grow(self, at_least: int, required: bool) -> None:
        size = max(RESERVE_BYTES, at_least)
        try:
            os.posix_fallocate(self._fd, self._size, size)
        except OSError as exc:
            if required:
                raise
            log.warning("answer journal %s: could not reserve %d bytes (%s)", self.path, size,
                        exc.strerror)
            return
        self._size += size

    def _write(self, line: bytes, durable: bool) -> None:
        if self._fd < 0:
            raise OSError(errno.EBADF, f"answer journal {self.path} is closed")
        if self._offset + len(line) > self._size:
            self._grow(self._offset + len(line) - self._size, required=True)
        written = os.pwrite(self._fd, line, self._offset)
        if written != len(line):
            raise OSError(errno.ENOSPC, f"answer journal {self.path}: short write")
        self._offset += len(line)
        if durable:
            os.fsync(self._fd)
        if self._size - self._offset < RESERVE_BYTES // 2:
            self._grow(RESERVE_BYTES, required=False)
        # Only where it frees at least half: answers the database keeps refusing stay.
        if self._offset > max(COMPACT_BYTES, 2 * self._outstanding_bytes):
            self._compact()

    def _compact(self) -> None:
        """Carry the outstanding records into a new file (made durable first), then delete
        this one; a failure keeps this one."""
        old_fd, old_path = self._fd, self.path
        lines = list(self._answers.values()) + [s for sent in self._sent.values() for s in sent]
        try:
            self._open_file()
            for line in lines:
                os.pwrite(self._fd, line, self._offset)
                self._offset += len(line)
            os.fsync(self._fd)
        except OSError as exc:
            log.warning("answer journal %s: could not compact (%s); kept as it is", old_path, exc)
            if self._fd != old_fd and self._fd >= 0:
                os.close(self._fd)
                _unlink(self.path)
            self._fd, self.path = old_fd, old_path
            return
        _unlink(old_path)
        os.close(old_fd)


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


# --- taking a journal over ------------------------------------------------------------------

@dataclass
class Recovered:
    """What one journal nobody held gave: its answers, and its requests sent and never
    closed (with the answer the journal holds for them, if any)."""

    path: Path
    answers: list[dict[str, Any]] = field(default_factory=list)
    unclosed: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=list)


def read_records(data: bytes, path: Path) -> list[dict[str, Any]]:
    records = []
    for line_no, line in enumerate(data.split(b"\0", 1)[0].splitlines(), start=1):
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError):
            # Only the line a killed write left unfinished; its call is still counted through
            # its "sent" record.
            log.warning("answer journal %s, line %d: not a record (cut short); skipped",
                        path, line_no)
    return records


def _recovered(path: Path, records: Iterable[dict[str, Any]]) -> Recovered:
    found = Recovered(path)
    answers: dict[str, dict[str, Any]] = {}
    open_sents: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        kind = record.get("t")
        if kind == "answer":
            answers[record["row"]["key"]] = record["row"]
        elif kind == "sent":
            open_sents.setdefault(record["key"], []).append(record)
        elif kind == "closed":
            open_sents.pop(record["key"], None)
    found.answers = list(answers.values())
    for key, sents in open_sents.items():
        # One asking of a request that never reached its ledger: the answer (if any) carries
        # what all its askings cost, so it goes with the last one.
        for sent in sents[:-1]:
            found.unclosed.append((sent, None))
        found.unclosed.append((sents[-1], answers.get(key)))
    return found


def take_over(directory: Path, store: Callable[[list[dict[str, Any]]], None],
              skip: Iterable[Path] = ()) -> int:
    """Take every journal in `directory` that no open cache holds: `store` its answers (it
    raises to keep the journal for later), bill its unclosed requests to their attempts
    journals, delete it. Returns the journals taken."""
    try:
        names = sorted(p for p in directory.iterdir() if p.name.endswith(SUFFIX))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    skipped = {Path(p) for p in skip}
    taken = 0
    for path in names:
        if path in skipped:
            continue
        try:
            fd = os.open(path, os.O_RDWR)
        except (FileNotFoundError, PermissionError):
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its cache is open: its process stores its own answers
            try:
                if os.stat(path).st_ino != os.fstat(fd).st_ino:
                    continue  # taken and deleted by another process since we opened it
            except FileNotFoundError:
                continue
            data = _read_all(fd)
            found = _recovered(path, read_records(data, path))
            if found.answers:
                store(found.answers)
            if found.unclosed:
                _bill_unclosed(found)
            _unlink(path)
            taken += 1
        finally:
            os.close(fd)
    return taken


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)
        if b"\0" in chunk:
            return b"".join(chunks)


def _bill_unclosed(found: Recovered) -> None:
    from .ledger import append_attempts, recovered_attempt_row

    by_file: dict[str, list[dict[str, Any]]] = {}
    nowhere: Counter = Counter()
    for sent, answer in found.unclosed:
        if not sent.get("attempts"):
            nowhere[sent["model"]] += 1
            continue
        by_file.setdefault(sent["attempts"], []).append(recovered_attempt_row(sent, answer))
    for attempts, rows in by_file.items():
        append_attempts(Path(attempts), rows)
        unknown = sum(r["outcome"] == "paid-unknown" for r in rows)
        log.warning("answer journal %s: %d request(s) of a process that ended before their "
                    "ledger rows were written, billed to %s (%d at an unknown cost)",
                    found.path, len(rows), attempts, unknown)
    if nowhere:
        log.warning("answer journal %s: %s request(s) in flight when its process ended, of a "
                    "client without a ledger: they may have been billed (%s)", found.path,
                    sum(nowhere.values()), dict(nowhere))
