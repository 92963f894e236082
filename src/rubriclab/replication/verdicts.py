"""The verdict on one claim of the papers, from the run's evidence.

Two steps. What the numbers say (`as_measured`), whatever the models:
- arithmetic (follows from numbers the seed prints): "matches" or "differs" at the seed's
  printed precision (a sentence about those numbers: "matches" when every part holds);
- measured: "replicates" when the seed's value, or some of its range, lies in the run's
  statistical interval, widened by half the seed's printed precision (a value with no interval:
  when equal at that precision); "does not replicate" otherwise;
- qualitative: "holds" when every part of its sentence holds, "does not hold" when a part fails
  and every other part could be tested, "cannot tell" otherwise;
- "cannot tell" whenever the run cannot say: no value, NaN, a part that cannot be tested, or
  fewer items than the claim's `min_n`.
Then who answered (`verdict`): a measured or qualitative claim resting on a `fake/` or `local/`
model, or on a model the rehearsal's loopback server answered for (`make rehearse`), is "other
models", and one resting on a stand-in for the model the paper names (the
config's `stand_ins`) is "stand-in": the run's numbers are shown, never called a replication.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Mapping

from rubriclab.llm.providers import provider_for
from rubriclab.rehearsal import REHEARSAL_FINGERPRINT

from .evidence import Evidence

MATCHES, DIFFERS = "matches", "differs"
REPLICATES, DOES_NOT_REPLICATE = "replicates", "does not replicate"
HOLDS, DOES_NOT_HOLD = "holds", "does not hold"
CANNOT_TELL = "cannot tell"
OTHER_MODELS, STAND_IN = "other models", "stand-in"
NOT_COMPUTED = "not computed"
KINDS = ("arithmetic", "measured", "qualitative")


def printed_precision(seed: Any) -> float:
    """The step of the seed's last printed digit: 1 for 52, 0.01 for 0.83, 0.1 for 1.5."""
    exponent = Decimal(repr(seed)).normalize().as_tuple().exponent if isinstance(seed, float) \
        else 0
    return float(10 ** min(int(exponent), 0))


def _seed_range(entry: Mapping[str, Any]) -> tuple[float, float, float]:
    seed = entry["seed"]
    low, high = (seed if isinstance(seed, list) else (seed, seed))
    precision = float(entry.get("precision") or max(printed_precision(low),
                                                     printed_precision(high)))
    return float(low), float(high), precision


def as_measured(entry: Mapping[str, Any], evidence: Evidence) -> str:
    """What the run's numbers say of the claim, whoever the models were."""
    if evidence.cannot:
        return CANNOT_TELL
    kind = entry["kind"]
    if kind == "arithmetic" and evidence.parts:  # a sentence about the seed's own numbers
        answers = [part.holds for part in evidence.parts]
        if any(answer is None for answer in answers):
            return CANNOT_TELL
        return MATCHES if all(answers) else DIFFERS
    if kind == "qualitative":
        if not evidence.parts:
            return CANNOT_TELL
        if _too_few(entry, evidence):
            return CANNOT_TELL
        answers = [part.holds for part in evidence.parts]
        if any(answer is None for answer in answers):
            return CANNOT_TELL
        return HOLDS if all(answers) else DOES_NOT_HOLD
    if evidence.value is None or math.isnan(float(evidence.value)):
        return CANNOT_TELL
    low, high, precision = _seed_range(entry)
    half = precision / 2 * (1 + 1e-9)
    if kind == "arithmetic":
        return MATCHES if low - half <= float(evidence.value) <= high + half else DIFFERS
    if _too_few(entry, evidence):
        return CANNOT_TELL
    if evidence.low is not None and evidence.high is not None:
        if math.isnan(evidence.low) or math.isnan(evidence.high):
            return CANNOT_TELL
        meets = evidence.low <= high + half and low - half <= evidence.high
    else:
        meets = low - half <= float(evidence.value) <= high + half
    return REPLICATES if meets else DOES_NOT_REPLICATE


def _too_few(entry: Mapping[str, Any], evidence: Evidence) -> bool:
    floor = entry.get("min_n")
    return floor is not None and (evidence.n is None or evidence.n < int(floor))


def why_cannot_tell(entry: Mapping[str, Any], evidence: Evidence) -> str:
    """The reason behind a "cannot tell", in words."""
    if evidence.cannot:
        return evidence.cannot
    if _too_few(entry, evidence):
        return (f"{'no' if evidence.n is None else evidence.n} items behind the run's value, "
                f"fewer than the {entry['min_n']} this claim needs")
    untested = [f"{part.name}: {part.detail or 'cannot be tested'}" for part in evidence.parts
                if part.holds is None]
    if untested:
        return "; ".join(untested)
    if entry["kind"] == "qualitative" and not evidence.parts:
        return "no part of the sentence was tested"
    return "the run's value is missing or NaN"


def models_of(config: Mapping[str, Any], keys: list[str]) -> list[str]:
    """The model strings a claim rests on: the config's values at `keys` (a dotted path; the
    main judge / reviser where a list is not set)."""
    found: list[str] = []
    for key in keys:
        value: Any = config
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None and key == "models.revisers":
            value = [config["models"]["reviser"]]
        if value is None and key == "carry.judges":
            value = [config["models"]["judge"]]
        if value is None and key.startswith("transfer."):
            value = config["models"]["judge"]
        found += [value] if isinstance(value, str) else list(value or [])
    return list(dict.fromkeys(str(m).split("@", 1)[0] for m in found))


def rehearsed(config: Mapping[str, Any], model: str) -> bool:
    """Whether the run's answers for `model` came from the rehearsal's loopback server (which
    declares its own identity for every model it serves), not from the provider."""
    per_model = ((config.get("llm") or {}).get("per_model") or {})
    return any(str(key).split("@", 1)[0] == model
               and (settings or {}).get("fingerprint") == REHEARSAL_FINGERPRINT
               for key, settings in per_model.items())


def verdict(entry: Mapping[str, Any], evidence: Evidence, config: Mapping[str, Any]) -> str:
    """The page's verdict: what the numbers say, unless the models were not the paper's."""
    measured = as_measured(entry, evidence)
    if entry["kind"] == "arithmetic" or measured == CANNOT_TELL:
        return measured
    models = models_of(config, list(entry.get("models", [])))
    # the embedded model and the fakes (unpriced) are not the paper's models
    if any(not provider_for(model).priced or rehearsed(config, model) for model in models):
        return OTHER_MODELS
    stand_ins = config.get("stand_ins") or {}
    if any(model in stand_ins for model in models):
        return STAND_IN
    return measured
