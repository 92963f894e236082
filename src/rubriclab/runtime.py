"""Process-level set-up shared by the workflow scripts and the command line."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import TracebackType

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(log_path: str | Path | None = None, level: int = logging.INFO) -> None:
    """Log to stderr (the terminal) and, when given, to the rule's log file."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=level, format=LOG_FORMAT, handlers=handlers, force=True)
    from rubriclab.llm.redact import install_log_filter

    install_log_filter()  # known keys never reach the terminal or the rule's log
    # litellm logs every request at INFO; our progress line already says what matters.
    for noisy in ("LiteLLM", "litellm", "httpx", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    sys.excepthook = _log_uncaught


def _log_uncaught(exc_type: type[BaseException], exc: BaseException,
                  tb: TracebackType | None) -> None:
    """Uncaught errors go to the rule's log as well as the terminal."""
    logging.getLogger("rubriclab").critical("%s: %s", exc_type.__name__, exc,
                                            exc_info=(exc_type, exc, tb))
