"""What a model string is, and what follows from it: the one place that reads a model string's
prefix, so that no other module asks `startswith("fake/")` or `startswith("local/")`.

    <provider>/<name>     an API model, reached through litellm at its provider's endpoint
                          (or an api_base): priced, needs an API key, its endpoint is part of
                          its fingerprint, and its jobs hold open connections (api_calls)
    local/<name-or-path>  the embedded llama.cpp model (rubriclab.llm.embedded, local): run
                          in this process on this machine's cores, one request at a time,
                          fingerprinted by its GGUF's sha256, free
    fake/<behaviour>      deterministic fakes answered by rubriclab's own code
                          (rubriclab.llm.fake), among them the scripted models of packages
                          outside the model layer (the known-truth worlds)

`provider_for(model)` gives the model's `Provider`, whose fields answer the questions the model
layer, the planner and the workflow ask of a model (priced? remote? embedded? scripted? are its
answers worth keeping?).

Scripted models. A package registers a set of scripted `fake/<behaviour>` models under the entry
point group `rubriclab.scripted_models` (pyproject.toml), as a `ScriptedModels`: the model layer
finds them by behaviour (`scripted_model`), loading the entry points on first use, and never
imports the package itself (rubriclab.known_truth is the project's own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

SCRIPTED_MODELS_GROUP = "rubriclab.scripted_models"


@dataclass(frozen=True)
class Provider:
    """A family of model strings, and what the model layer does differently for it."""

    name: str
    prefix: str  # "" for the API models: every string that names no other family
    form: str  # how its model strings are written, for messages
    # A provider bills its calls (by its price map or llm.per_model.<model>.price), a failed
    # call perhaps too; the others cost $0.
    priced: bool
    # Reached over the network at an endpoint: it needs an API key, its endpoint (api_base) is
    # part of its fingerprint, and its jobs reserve the machine's api_calls. The others'
    # fingerprints are computed on this machine from the model itself.
    remote: bool
    # The embedded llama.cpp model: runs in this process on this machine's cores, one request
    # at a time (the local_llm resource); takes no reasoning effort, answers under a grammar.
    embedded: bool
    # Answered by rubriclab's own code from the prompt, without litellm or any model: instant,
    # and unusable by design where the script says so (fake/unparseable, the dry agent).
    scripted: bool
    # Its answers cost time or money to get again: always cached, journaled with fsync,
    # guarded by the free-disk check, and counted in paid / distinct. A scripted model's are
    # computed again alike for nothing (cached only with llm.cache_fake_answers).
    durable: bool

    @property
    def computes_fingerprint(self) -> bool:
        """Whether this machine computes the model's fingerprint from the model itself (a
        fake's version, a GGUF's sha256) rather than from a declared one or an endpoint."""
        return not self.remote

    @property
    def through_litellm(self) -> bool:
        """Whether a call goes through litellm (the embedded model as its custom provider)."""
        return not self.scripted

    def owns(self, model: str) -> bool:
        return bool(self.prefix) and model.startswith(self.prefix)

    def name_of(self, model: str) -> str:
        """The model string without this family's prefix ("local/default" -> "default")."""
        if not self.owns(model):
            raise ValueError(f"not a {self.name} model string: {model!r} (expected '{self.form}')")
        return model[len(self.prefix):]

    def model_string(self, model: str) -> str:
        """The full model string of a name given with or without this family's prefix
        (litellm hands a custom provider the name without it)."""
        return model if self.owns(model) else self.prefix + model


API = Provider("api", "", "<provider>/<model>", priced=True, remote=True, embedded=False,
               scripted=False, durable=True)
LOCAL = Provider("local", "local/", "local/<name-or-path>", priced=False, remote=False,
                 embedded=True, scripted=False, durable=True)
FAKE = Provider("fake", "fake/", "fake/<behaviour>", priced=False, remote=False, embedded=False,
                scripted=True, durable=False)
PROVIDERS = (LOCAL, FAKE, API)  # matched in this order; API takes every other string


def provider_for(model: str) -> Provider:
    """The family of a model string (by its prefix)."""
    return next(p for p in PROVIDERS if p.owns(model) or not p.prefix)


# --- scripted models -------------------------------------------------------------------------

@dataclass(frozen=True)
class ScriptedModels:
    """Scripted `fake/<behaviour>` models that a package outside the model layer answers,
    registered under the entry point group `rubriclab.scripted_models`."""

    behaviours: tuple[str, ...]
    # The model identity of their cache keys: raise its version when what they answer changes.
    fingerprint: str
    # (behaviour, model string, the names of its ?options): a ValueError naming the model
    # for an option the behaviour does not take or a value it cannot have.
    check_options: Callable[[str, str, set[str]], None]
    # (behaviour, model string, sample index, response format, messages) -> the answer text.
    answer: Callable[[str, str, int, str, list[dict[str, str]]], str]


@lru_cache(maxsize=1)
def scripted_behaviours() -> dict[str, ScriptedModels]:
    """Every registered scripted behaviour and who answers it, in registration order (loaded
    once per process)."""
    found: dict[str, ScriptedModels] = {}
    for entry in entry_points(group=SCRIPTED_MODELS_GROUP):
        models = entry.load()
        if not isinstance(models, ScriptedModels):
            raise TypeError(f"entry point {entry.name} = {entry.value!r} of the group "
                            f"{SCRIPTED_MODELS_GROUP} is a {type(models).__name__}, not a "
                            "rubriclab.llm.providers.ScriptedModels")
        for behaviour in models.behaviours:
            if behaviour in found:
                raise ValueError(f"the scripted model fake/{behaviour} is registered twice in "
                                 f"the entry point group {SCRIPTED_MODELS_GROUP} (again by "
                                 f"{entry.value!r})")
            found[behaviour] = models
    return found


def scripted_model(behaviour: str) -> ScriptedModels | None:
    """Who answers `fake/<behaviour>`, or None where no registered package does."""
    return scripted_behaviours().get(behaviour)
