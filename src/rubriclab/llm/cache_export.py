"""The file `rubriclab cache export` writes and `rubriclab cache import` reads, and the checks
of every part of it: one gzip JSON-lines file, a header line (format, rubriclab version, key
version, rows and models, a checksum over the rows), then one row per entry carrying what its
key is computed from (the request and the model's fingerprint) and its own checksum. Here: the
header's and each row's checks, and the resolution of a stored entry's request and fingerprint
(`rubriclab.llm.answer_store.AnswerStore.export_to` and `import_from` use them). See
docs/cache.md.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from .cache_records import CachedAnswer, CacheFileError, request_json
from .providers import provider_for
from .request import CACHE_KEY_VERSION, Request, cache_key, legacy_cache_keys, request_from_dict

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
        family = provider_for(answer.model)
        fixed = [_fake_fingerprint(answer.model)] if family.scripted else []
        if family.remote:
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
