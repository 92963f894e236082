"""Display names for models: what every figure, table and caption calls a model.

A model string names a model to litellm ("anthropic/claude-sonnet-4-5-20250929",
"fake/hash?salt=haiku", "local//models/qwen.gguf"); a reader wants a short, stable name. The
config's `labels:` map gives one per model string; every other model gets its default label:

- the provider is kept ("anthropic/claude-sonnet-4-5-20250929" stays as it is), so two
  providers serving one model name stay apart;
- a query string is dropped and its values shown in parentheses: the salt bare, any other
  option as key=value ("fake/hash?salt=haiku" -> "fake/hash (haiku)",
  "fake/hash?delay_s=0" -> "fake/hash (delay_s=0)");
- a local GGUF given by path shows its file name ("local//m/qwen.gguf" -> "local/qwen.gguf").

Transfer's responders ("model|k", sample k of a model) read "<label> #k" for k > 0.
`in_text` names the models of a sentence (a note, a job's name) by their labels.
Two models that would read the same in one run are an error (`check_distinct`), raised before
the first job, naming both.
"""

from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterable, Mapping
from urllib.parse import parse_qsl

EXPERT = "expert"
# The papers' names of the datasets, for figure and table titles.
DATASET_TITLES = {"summedits": "SummEdits", "ragtruth": "RAGTruth", "recon": "Recon",
                  "healthbench": "HealthBench"}


def default_label(model: str) -> str:
    """The readable default display name of a model string (see the module docstring)."""
    model = str(model)
    name, _, query = model.partition("?")
    provider, _, rest = name.partition("/")
    if provider == "local" and rest.endswith(".gguf"):
        name = f"local/{rest.rstrip('/').rsplit('/', 1)[-1]}"
    options = parse_qsl(query, keep_blank_values=True)
    if not options:
        return name
    shown = [value if key == "salt" else f"{key}={value}" for key, value in options]
    return f"{name} ({', '.join(shown)})"


class ModelLabels:
    """Display names: the config's `labels:` entries, else default_label. Callable.

    A model the config's `stand_ins:` map names (model string -> the model a paper named, which
    no provider serves) reads "<label> (stand-in for <named model>)" wherever it is shown."""

    def __init__(self, overrides: Mapping[str, str] | None = None,
                 stand_ins: Mapping[str, str] | None = None):
        overrides = dict(overrides or {})
        for model, label in overrides.items():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"config key 'labels.{model}': a label must be a non-empty "
                                 f"string, got {label!r}")
        stand_ins = dict(stand_ins or {})
        for model, named in stand_ins.items():
            if not isinstance(named, str) or not named.strip():
                raise ValueError(f"config key 'stand_ins.{model}': the model a paper names, a "
                                 f"non-empty string, got {named!r}")
        self.overrides = overrides
        self.stand_ins = stand_ins

    def __call__(self, model: str) -> str:
        model = str(model)
        if model == EXPERT:
            return "Expert"
        base, bar, sample = model.rpartition("|")
        if model not in self.overrides and bar and sample.isdigit():  # sample k of a model
            label = self(base)
            return label if int(sample) == 0 else f"{label} #{sample}"
        label = self.overrides.get(model) or default_label(model)
        if model in self.stand_ins:
            label += f" (stand-in for {self.stand_ins[model]})"
        return label

    def mapping(self, models: Iterable[str]) -> dict[str, str]:
        """{model: label} for the given models (in their order, repeats once)."""
        return {model: self(model) for model in dict.fromkeys(str(m) for m in models)}

    def in_text(self, text: str, models: Iterable[str]) -> str:
        """`text` with each of `models` it names (a model string, or a responder "model|k")
        replaced by its label. A label already in the text stays: labels are matched too,
        longest first, so "fake/hash" inside "fake/hash (delay_s=0)" is not replaced again;
        a model string followed by more of one ("fake/hash" in "fake/hash?salt=b") is not
        replaced; one after a slash is ("carry_judge[recon/fake/hash]")."""
        models = [str(m) for m in models if str(m).strip()]
        if not text or not models:
            return text
        names = {self(m): False for m in models}
        names.update({m: True for m in models})  # a model string wins over a like label
        pattern = re.compile(
            r"(?<![\w.\-])("
            + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
            + r")(\|\d+)?(?![\w/?=&.\-]*[\w/?=&\-])")

        def name(match: re.Match) -> str:
            found, sample = match.group(1), match.group(2) or ""
            return self(found + sample) if names[found] else found + sample
        return pattern.sub(name, text)

    def check_distinct(self, models: Iterable[str]) -> None:
        """Raise ValueError when two of the models would be shown under one label."""
        seen: dict[str, str] = {}
        for model, label in self.mapping(_sample_zero_as_model(m) for m in models).items():
            if label in seen:
                raise ValueError(
                    f"models {seen[label]!r} and {model!r} would both be labelled {label!r} in "
                    f"figures and tables; give one of them its own name in the config's "
                    f"'labels:' map")
            seen[label] = model


def _sample_zero_as_model(model: str) -> str:
    """A responder "model|0" is the model itself."""
    base, bar, sample = str(model).rpartition("|")
    return base if bar and sample == "0" else str(model)


_IN_USE: ContextVar["ModelLabels | None"] = ContextVar("rubriclab_labels", default=None)


def current_labels() -> ModelLabels:
    """The labels of the figure or table being made (labels_in_use), else the defaults."""
    return _IN_USE.get() or ModelLabels()


@contextmanager
def labels_in_use(labels: ModelLabels | None):
    token = _IN_USE.set(labels)
    try:
        yield labels
    finally:
        _IN_USE.reset(token)


def with_labels(function):
    """Give a figure or table function a `labels=` keyword: the display names its helpers
    (short_name, judge_label, chain_label) use while it runs."""
    @functools.wraps(function)
    def wrapper(*args, labels: ModelLabels | None = None, **kwargs):
        with labels_in_use(labels or current_labels()):
            return function(*args, **kwargs)
    return wrapper
