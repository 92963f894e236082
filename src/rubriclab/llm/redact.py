"""Secrets kept out of everything the model layer writes: logs, ledgers and attempts journals,
exception messages, stored endpoints.

The secrets are the values of the environment variables that hold keys (any variable whose
name ends in API_KEY, KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL(S): every provider key
litellm reads, and a few more) and the credentials of any configured `api_base`
(https://user:password@host/), registered when a client is made. A server that echoes a key
back (in a 401 body, say) then has it replaced by `[redacted]` wherever the model layer writes
the message. Values shorter than MIN_SECRET_CHARS are never taken for secrets (they would
redact ordinary words).

A leaf: only the standard library, so that the ledger, the backends and the logging set-up can
all use it.
"""

from __future__ import annotations

import logging
import os
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$",
                          re.IGNORECASE)
_registered: set[str] = set()
# Loggers whose own handlers (if they add any) get the filter too, besides the root's.
_LOGGERS = ("", "rubriclab", "LiteLLM", "litellm", "httpx", "openai", "anthropic")


def _forms(value: str) -> set[str]:
    """A secret as it may be written: as is, percent-encoded, percent-decoded."""
    return {v for v in (value, quote(value, safe=""), unquote(value))
            if len(v) >= MIN_SECRET_CHARS}


def register(*values: str | None) -> None:
    """Treat these values (configured credentials) as secrets from now on, in this process."""
    for value in values:
        if value:
            _registered.update(_forms(value))


def register_url_credentials(url: str | None) -> None:
    """The password (and user:password) of a URL's userinfo are secrets."""
    if not url or "@" not in url:
        return
    userinfo = urlsplit(url.strip()).netloc.rpartition("@")[0]
    if userinfo:
        user, _, password = userinfo.partition(":")
        register(userinfo, password or user)


def known_secrets() -> list[str]:
    """Every value to redact, longest first (so a key containing another is replaced whole)."""
    found = set(_registered)
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name) and value:
            found.update(_forms(value.strip()))
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every known secret replaced by [redacted]."""
    if not text:
        return text
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def contains_secret(text: str) -> bool:
    return any(secret in text for secret in known_secrets())


def strip_userinfo(url: str) -> str:
    """The URL without user:password@ (an endpoint's identity is its host, not who logs in)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query,
                       parts.fragment))


class RedactingFilter(logging.Filter):
    """Replaces known secrets in a record's message and traceback before any handler writes
    it (the message is formatted here, so secrets in its arguments are caught too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: leave it to the handler
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def install_log_filter() -> None:
    """Put the filter on every handler there is now (the root's and those of the model
    layer's and its libraries' loggers); idempotent. Called by each LLMClient and by
    rubriclab.runtime.configure_logging."""
    for name in _LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
