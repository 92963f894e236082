"""The storage interface of the model layer: what the client and the commands need of the
answer cache (`AnswerCache`) and of the batch store (`BatchStorage`), and the one place that
chooses their backend from the settings, and the run's bill's: a PostgreSQL server where
`LLMConfig.cache_url` names one (`cache_pg.PostgresCache`, `batch_pg.PostgresBatchStore`,
`budget_pg.PostgresSpendRecord`), else SQLite files in `LLMConfig.cache_dir`
(`cache.SQLiteCache`, `batch_store.BatchStore`; the bill beside the run's ledgers,
`budget.SpendRecord`). The backends never import this module. Their shared records and errors
are in `cache_records` and `batch_records`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .backends import RawAnswer
from .batch_pg import PostgresBatchStore
from .batch_records import BatchJob, BatchOutcome
from .batch_store import BatchStore
from .budget import SpendRecord, SpendRecordBase, spend_record_path
from .budget_pg import PostgresSpendRecord
from .cache import SQLiteCache
from .cache_pg import PostgresCache
from .cache_records import CachedAnswer, Claim, ImportReport
from .ratelimit import RateLimiter, SQLiteRateLimiter
from .ratelimit_pg import PostgresRateLimiter

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (Ed25519PrivateKey,
                                                                   Ed25519PublicKey)

    from .settings import LLMConfig


class AnswerCache(Protocol):
    """The answer cache as its users see it (`answer_store.AnswerStore` and its backends).

    Every backend has every method here. `claims_wait_for_server`: whether `claim` may wait
    out a lost server (PostgreSQL's: the client then asks for it from a thread)."""

    location: str
    claims_wait_for_server: bool

    def get(self, key: str) -> CachedAnswer | None: ...

    def put(self, answer: CachedAnswer) -> None: ...

    def close(self) -> None: ...

    def record_fingerprint(self, key: str, fingerprint: str) -> None: ...

    def earlier_version_entry(self, key: str) -> CachedAnswer | None: ...

    def claim(self, key: str, owner: str, lease_s: float,
              held_by_owner: bool = False) -> Claim: ...

    def renew_claims(self, owner: str, lease_s: float) -> None: ...

    def release(self, key: str, owner: str) -> None: ...

    def journal_sent(self, key: str, model: str, attempts: str | None = None,
                     rule: str | None = None, run: str | None = None,
                     batch: bool = False) -> None: ...

    def journal_closed(self, key: str) -> None: ...

    def counts_by_model(self) -> list[tuple[str, int]]: ...

    def models_without_fingerprint(self) -> list[str]: ...

    def paid_requests(self) -> tuple[int, int] | None: ...

    def __len__(self) -> int: ...

    def export_to(self, path: str | Path, fingerprints: Mapping[str, str] | None = None,
                  sign_with: Ed25519PrivateKey | None = None) -> int: ...

    def import_from(self, path: str | Path,
                    trusted: list[Ed25519PublicKey] | None = None) -> ImportReport: ...


class BatchStorage(Protocol):
    """The batch store as the batch runner sees it (`batch_store.BatchStoreBase`)."""

    location: str

    def close(self) -> None: ...

    def get(self, key: str) -> BatchJob | None: ...

    def save(self, job: BatchJob) -> BatchJob: ...

    def all(self) -> list[BatchJob]: ...

    def save_requests(self, key: str, request_keys: list[str]) -> None: ...

    def requests_of(self, key: str) -> set[str]: ...

    def save_answers(self, job: BatchJob, answers: dict[str, RawAnswer]) -> None: ...

    def kept_answers(self, model: str, keys: list[str]) -> dict[str, BatchOutcome]: ...

    def forget_answers(self, model: str, keys: list[str]) -> int: ...

    def clean_answers(self, cached: Callable[[str], bool]) -> int: ...

    def kept_count(self) -> int: ...

    def open_jobs(self, model: str) -> dict[str, set[str]]: ...


def open_cache(config: LLMConfig, read_only: bool = False) -> SQLiteCache | PostgresCache:
    """The cache `config` names: on the PostgreSQL server of `config.cache_url`, else the
    SQLite file in `config.cache_dir`. `read_only`: for counts and export, creating nothing
    (FileNotFoundError where there is no cache)."""
    if config.cache_url:
        if read_only:
            return PostgresCache.read_only(config.cache_url)
        return PostgresCache(config.cache_url, local_dir=config.local_dir,
                             reconnect_s=config.cache_reconnect_s)
    if read_only:
        return SQLiteCache.read_only(config.cache_path)
    return SQLiteCache(config.cache_path)


def open_batch_store(config: LLMConfig) -> BatchStorage:
    """The batch store beside the cache: on its PostgreSQL server, or a SQLite file."""
    if config.cache_url:
        return PostgresBatchStore(config.cache_url, reconnect_s=config.cache_reconnect_s)
    return BatchStore(config.cache_dir / BatchStore.FILE_NAME)


def open_rate_limiter(config: LLMConfig) -> RateLimiter:
    """The models' rate-limit schedule (`rubriclab.llm.ratelimit`): with a PostgreSQL cache, its
    rows in that database, shared by every host of the run; else the SQLite file in
    `config.local_dir`, shared by the processes of this host. Connected (or opened) at the
    first paid call."""
    if config.cache_url:
        return PostgresRateLimiter(config.cache_url, reconnect_s=config.cache_reconnect_s)
    return SQLiteRateLimiter(config.local_dir / SQLiteRateLimiter.FILE_NAME)


def batch_store_may_hold(config: LLMConfig) -> bool:
    """Whether the batch store `config` names may hold a batch, looked at without opening (or
    creating) a SQLite store: its file exists in `config.cache_dir`; on PostgreSQL, always
    (another host may have stored one; the store is opened to ask)."""
    return bool(config.cache_url) or (config.cache_dir / BatchStore.FILE_NAME).exists()


def open_spend_record(config: LLMConfig, ledger_path: str | Path,
                      run: str | None) -> SpendRecordBase:
    """The bill of the run (`rubriclab.llm.budget`): with a PostgreSQL cache, the row of the
    run named `run` (None: the unnamed run) in its database, shared by every host; else the
    SQLite spend record beside the ledger at `ledger_path`, shared by the jobs whose ledgers
    share its folder."""
    if config.cache_url:
        return PostgresSpendRecord(config.cache_url, run, reconnect_s=config.cache_reconnect_s)
    return SpendRecord(spend_record_path(ledger_path))
