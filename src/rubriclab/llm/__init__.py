"""The model layer: every model call of rubriclab goes through `LLMClient.run`.

Importing this package is cheap; litellm and llama-cpp-python are imported on first use. The
names below are loaded on first use too, so that a module that needs only the standard-library
`formats` or `request` (the methods' `rubriclab correct` and `gate`, through verify and carry)
pulls in neither the cache, the client nor their dependencies (psutil, psycopg, ...): the light
install, `pip install rubriclab` without extras, has none of them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cache import SQLiteCache
    from .client import LLMClient, ModelCallsFailed
    from .ledger import Ledger
    from .request import Completion, Message, Request, Usage, cache_key
    from .settings import LLMConfig, ModelSettings

_LAZY = {
    "SQLiteCache": "cache", "LLMClient": "client", "ModelCallsFailed": "client",
    "Ledger": "ledger", "Completion": "request", "Message": "request", "Request": "request",
    "Usage": "request", "cache_key": "request", "LLMConfig": "settings",
    "ModelSettings": "settings",
}

__all__ = [
    "Completion", "LLMClient", "LLMConfig", "Ledger", "Message", "ModelCallsFailed",
    "ModelSettings", "Request", "SQLiteCache", "Usage", "cache_key",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
