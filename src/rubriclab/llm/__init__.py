"""The model layer: every model call of rubriclab goes through `LLMClient.run`.

Importing this package is cheap; litellm and llama-cpp-python are imported on first use.
"""

from .cache import SQLiteCache
from .client import LLMClient, ModelCallsFailed
from .ledger import Ledger
from .request import Completion, Message, Request, Usage, cache_key
from .settings import LLMConfig, ModelSettings

__all__ = [
    "Completion", "LLMClient", "LLMConfig", "Ledger", "Message", "ModelCallsFailed",
    "ModelSettings", "Request", "SQLiteCache", "Usage", "cache_key",
]
