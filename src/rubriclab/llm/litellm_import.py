"""The one place litellm is imported: below pricing, token counting, backends and batches, so
none of them imports another for it. Imported lazily (it takes seconds)."""

from __future__ import annotations

import os
from typing import Any


def import_litellm() -> Any:
    # litellm would otherwise fetch its price map from the network at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm
