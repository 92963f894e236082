"""What every backend of the answer cache shares (`AnswerStore`): the answer journal, reads
and journal-first writes, export and import.

Every answer is journaled (`rubriclab.llm.journal`) before it is written to the database, so an
answer the database refuses (locked past the busy timeout, a full disk) or a process killed
before it stored one loses nothing paid: the next open takes the journal over. An export
(`export_to`) is one gzip JSON-lines file (`rubriclab.llm.cache_export`); `import_from`
recomputes every key and checksum and checks every field's type and plausibility, and a
signature where there is one (`rubriclab.llm.signing`), over the whole file before it adds any
of it, then adds it in short transactions. The backends: `rubriclab.llm.cache.SQLiteCache`
and `rubriclab.llm.cache_pg.PostgresCache`. See docs/cache.md.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import asdict, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from . import journal as answer_journal
from .cache_export import (EXPORT_FORMAT, EXPORT_FORMAT_VERSION, IMPORT_BATCH_ROWS,
                           _answer_from_row, _check_header, _lines, _resolve_stored,
                           _row_sha256, _rubriclab_version)
from .cache_records import (BUSY_TIMEOUT_S, PUT_WAIT_S, CachedAnswer, CacheFileError,
                            ImportReport)
from .providers import provider_for
from .request import CACHE_KEY_VERSION, cache_key

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                                   Ed25519PublicKey)

log = logging.getLogger("rubriclab.llm")


class AnswerStore:
    """What every backend of the cache shares: the answer journal (an answer is journaled
    before the database gets it, and served from memory until it does), export and import.
    A backend gives the database's part: `_fetch`, `_insert`, `_transaction`,
    `_busy_timeout`, `_stored_fingerprints`, `_all_answers`, `_close_db`, `journal_dir`,
    `location` (the cache as named in messages) and `_refusals` (the errors of a database
    that refuses a write for now); and the rest of `rubriclab.llm.storage.AnswerCache`: the
    in-flight claims (`claim`, `renew_claims`, `release`), `record_fingerprint`,
    `earlier_version_entry` and the counts."""

    location: str
    busy_timeout_s: float = BUSY_TIMEOUT_S
    # Whether a claim may wait out a lost server (PostgreSQL's `reconnect_s`), so that the
    # client asks for it from a thread; a SQLite file is never lost.
    claims_wait_for_server = False
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

    def paid_requests(self) -> tuple[int, int] | None:
        """(requests that reached a model, distinct requests among them) over the ledger rows
        the database holds; None where it holds none (a SQLite cache: its runs' ledgers are
        files, `ledger.calls_per_distinct_request` counts them)."""
        return None

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

    def __enter__(self) -> Self:
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
                                               durable=provider_for(answer.model).durable)
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
        except self._refusals + (OSError,) as exc:
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
                row: dict[str, Any] = {"key": key, "model": answer.model,
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
