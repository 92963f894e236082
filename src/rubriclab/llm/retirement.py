"""When a provider stops serving a model: the day configured for it
(`llm.per_model.<model>.retires`), else the `deprecation_date` of litellm's price map, else none
known. `fake/` and `local/` models never retire.

A model is taken to be gone from the start of its day (UTC): retired once that day has come,
retiring within a horizon when the day comes before the horizon ends.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, time, timedelta, timezone
from functools import lru_cache

from .litellm_import import import_litellm
from .providers import provider_for

log = logging.getLogger("rubriclab.llm")

CONFIG, LITELLM = "config", "litellm"
RETIRED, RETIRING, FINE = "retired", "retiring", "fine"


def retires_key(model: str) -> str:
    return f"llm.per_model[{model!r}].retires"


def retirement_date(model: str, configured: date | None) -> tuple[date | None, str | None]:
    """(the day the model retires, where that day comes from: CONFIG or LITELLM), or
    (None, None) where neither dates it."""
    if not provider_for(model).priced:  # the embedded model and the fakes never retire
        return None, None
    if configured is not None:
        return configured, CONFIG
    mapped = _map_date(model)
    return (mapped, LITELLM) if mapped is not None else (None, None)


@lru_cache(maxsize=None)
def _map_date(model: str) -> date | None:
    litellm = import_litellm()
    # get_model_info resolves the provider prefix to the map's key ("openai/gpt-5" -> "gpt-5",
    # but "gemini/gemini-2.5-flash" stays as it is: the bare name is Vertex AI's entry), and
    # leaves deprecation_date out of what it returns.
    try:
        key = litellm.get_model_info(model=model).get("key") or model
    except Exception:  # noqa: BLE001 - litellm raises several kinds for a model not in its map
        key = model
    value = (litellm.model_cost.get(key) or {}).get("deprecation_date")
    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        log.warning("litellm's price map gives model %r (entry %r) the deprecation_date %r, "
                    "which is not a date (YYYY-MM-DD); taken as no date known (set "
                    "%s to date it)", model, key, value, retires_key(model))
        return None


def now_utc(today: date | None = None) -> datetime:
    """The moment to judge from: `today` (a date: its start, UTC) or now."""
    if today is None:
        return datetime.now(timezone.utc)
    if isinstance(today, datetime):
        return today if today.tzinfo else today.replace(tzinfo=timezone.utc)
    return datetime.combine(today, time(), timezone.utc)


def classify(retires: date | None, horizon_h: float, today: date | None = None) -> str:
    """RETIRED when the day has come, RETIRING when it comes within `horizon_h` hours, else
    FINE (so is a model no one dates)."""
    if retires is None:
        return FINE
    start = now_utc(today)
    if retires <= start.date():
        return RETIRED
    if retires <= (start + timedelta(hours=horizon_h)).date():
        return RETIRING
    return FINE


def source_text(model: str, source: str | None) -> str:
    return (f"config {retires_key(model)}" if source == CONFIG
            else "litellm's price map, deprecation_date" if source == LITELLM else "no date known")
