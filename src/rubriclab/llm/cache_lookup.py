"""The client's first stage: is a request's answer cached? Under its key, or under a key
of the same request that an earlier release made (then stored under its key too); and a cached
answer served as a completion, parsed as a fresh one would be."""

from __future__ import annotations

import logging
from dataclasses import replace

from .backends import Backends
from .cache_records import CachedAnswer
from .formats import UnparseableAnswer, get_format
from .request import (CACHE_KEY_VERSION, Completion, Outcome, Request, Usage, cache_key,
                      legacy_cache_keys)
from .storage import AnswerCache

log = logging.getLogger("rubriclab.llm")


class CacheLookup:
    """The LLMClient's stage that looks requests up in the answer cache. Mixed into
    LLMClient, whose state it reads."""

    cache: AnswerCache
    backends: Backends
    _adopted: set[str]  # models served entries of an earlier key version

    def lookup(self, request: Request, key: str, migrate: bool = True) -> CachedAnswer | None:
        """The cached answer of `key`; or one stored under a key of the same request from
        before numbers were normalised, which is then stored under `key` too (unless
        `migrate` is False: the plan only reads the cache)."""
        hit = self.cache.get(key)
        fingerprint = self.backends.fingerprint(request.model)
        if hit is not None:
            if migrate and hit.model_fingerprint is None:
                self.cache.record_fingerprint(key, fingerprint)
            return hit
        earlier = [cache_key(request, fp) for fp in self.backends.credentialed_fingerprints(
            request.model)]
        for legacy in [*legacy_cache_keys(request, fingerprint), *earlier]:
            old = self.cache.get(legacy)
            if old is not None:
                migrated = replace(old, key=key, model_fingerprint=fingerprint,
                                   key_version=CACHE_KEY_VERSION)
                if migrate:
                    self.cache.put(migrated)
                return migrated
        # Stored under an earlier key version's fingerprint (by a release that recorded none).
        for earlier_fp in self.backends.earlier_fingerprints(request.model):
            for old_key in [cache_key(request, earlier_fp),
                            *legacy_cache_keys(request, earlier_fp)]:
                old = self.cache.earlier_version_entry(old_key)
                if old is None:
                    continue
                if request.model not in self._adopted:
                    self._adopted.add(request.model)
                    log.warning("%s: serving answers an earlier release cached (key version 1, "
                                "before a model's endpoint was part of its key; it recorded "
                                "none) as this endpoint's, stored again under this version's "
                                "keys", request.model)
                migrated = replace(old, key=key, model_fingerprint=fingerprint,
                                   key_version=CACHE_KEY_VERSION)
                if migrate:
                    self.cache.put(migrated)
                return migrated
        return None

    def _from_cache(self, request: Request, key: str, hit: CachedAnswer) -> Completion:
        fmt = get_format(request.response_format)
        outcome: Outcome
        try:
            parsed, outcome, error = fmt.parse(hit.text), "ok", ""
        except UnparseableAnswer as exc:  # cached under an older parser
            parsed, outcome, error = None, "unparseable", str(exc)
        return Completion(request=request, key=key, outcome=outcome, text=hit.text,
                          parsed=parsed, usage=Usage(hit.prompt_tokens, hit.completion_tokens),
                          cost_usd=hit.cost_usd, cached=True, error=error)
