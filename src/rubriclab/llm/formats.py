"""Response formats: how an answer is parsed strictly, re-asked, and constrained on local models.

This module holds the machinery (`ResponseFormat`, `UnparseableAnswer`, the strict JSON reader
the works' formats build on), the generic formats every work may ask for ("text", "yes_no"),
and `get_format`, which finds a format by name. The formats of one work live beside that work
(rubriclab.carry.formats, rubriclab.verify.formats, rubriclab.transfer.formats); each work
registers a function `response_format(name) -> ResponseFormat | None` under the entry-point
group "rubriclab.response_formats" (pyproject.toml), so that the model layer finds them by name
without importing the works above it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "rubriclab.response_formats"


class UnparseableAnswer(ValueError):
    """The model's text is not in the requested format."""


@dataclass(frozen=True)
class ResponseFormat:
    name: str
    parse: Callable[[str], Any]
    reask_instruction: str
    # GBNF grammar that makes a llama.cpp model unable to answer outside the format.
    gbnf_grammar: str | None = None
    # Free text whose budget is its length limit: an answer cut off by the budget is kept (a
    # structured answer cut off is incomplete and is asked again with a larger budget).
    free_text: bool = False


_YES_NO = re.compile(r"^\s*(yes|no)\s*[.!]?\s*$", re.IGNORECASE)


def parse_yes_no(text: str) -> str:
    """'Yes'/'No' (any case, optionally followed by one '.' or '!') -> 'yes'/'no'; else raise."""
    match = _YES_NO.match(text)
    if not match:
        raise UnparseableAnswer(f"expected exactly 'Yes' or 'No', got {text[:80]!r}")
    return match.group(1).lower()


def parse_text(text: str) -> str:
    if not text.strip():
        raise UnparseableAnswer("empty answer")
    return text


# The generic formats; a work's own formats are found through its registered function.
FORMATS: dict[str, ResponseFormat] = {
    "text": ResponseFormat(
        name="text",
        parse=parse_text,
        reask_instruction="Please answer the request above.",
        free_text=True,
    ),
    "yes_no": ResponseFormat(
        name="yes_no",
        parse=parse_yes_no,
        reask_instruction="Your answer could not be read. Answer with exactly one word: Yes or No.",
        gbnf_grammar='root ::= "Yes" | "No"',
    ),
}


# --- strict JSON, which the works' structured formats read their answers with ------------------

# One markdown code fence around the whole answer (```json ... ``` or ``` ... ```): the JSON
# inside is read, not asked for again. simple-evals' parse_json_to_dict (HealthBench's grader)
# strips a ```json fence the same way before json.loads.
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)


def _strip_fence(text: str) -> str:
    """The text inside one surrounding markdown code fence, else the text as it is."""
    match = _FENCE.match(text.strip())
    if match is None or "```" in match.group(1):
        return text
    return match.group(1)


def load_strict_json(text: str, what: str) -> Any:
    """JSON with nothing but whitespace around it (or one markdown code fence around the
    whole answer), no duplicate keys and no NaN or Infinity; else raise UnparseableAnswer
    naming `what` ("a rubric", "the scores")."""

    def reject_constant(name: str) -> Any:
        raise UnparseableAnswer(f"{name} is not a number {what} may contain")

    def without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        duplicated = sorted({k for k in keys if keys.count(k) > 1})
        if duplicated:
            raise UnparseableAnswer(f"duplicate key(s) {duplicated} in {what}")
        return dict(pairs)

    try:
        return json.loads(_strip_fence(text).strip(), object_pairs_hook=without_duplicates,
                          parse_constant=reject_constant)
    except json.JSONDecodeError as exc:
        raise UnparseableAnswer(
            f"expected exactly one JSON object, got {text[:80]!r} ({exc.msg})"
        ) from None


# --- finding a format by name ------------------------------------------------------------------

Registrant = Callable[[str], "ResponseFormat | None"]


@functools.cache
def registered_families() -> tuple[tuple[str, Registrant], ...]:
    """(entry-point name, `response_format` function) of every work that registers formats
    under "rubriclab.response_formats", sorted by name; loaded once, on first use."""
    found: dict[str, Registrant] = {}
    values: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in found:
            if values[point.name] == point.value:
                continue  # the same distribution seen twice on the path
            raise ValueError(f"two response format families are named {point.name!r} in "
                             f"{ENTRY_POINT_GROUP!r}: {values[point.name]} and {point.value}")
        try:
            registrant = point.load()
        except Exception as exc:
            raise ImportError(f"the response formats registered as {point.name!r} "
                              f"({point.value}) cannot be loaded: {exc}") from exc
        if not callable(registrant):
            raise TypeError(f"the response formats registered as {point.name!r} ({point.value}) "
                            f"are not a function of the format name")
        found[point.name] = registrant
        values[point.name] = point.value
    return tuple(sorted(found.items()))


def get_format(name: str) -> ResponseFormat:
    """The format called `name`: a generic one, else the one the registered families give.

    Raises ValueError for a name no family knows (naming the families) and for a name two
    families both claim (naming both); a family may raise ValueError itself for a name of its
    own pattern that is out of range ("rubric_checks_21").
    """
    if name in FORMATS:
        return FORMATS[name]
    families = registered_families()
    claims = [(family, fmt) for family, registrant in families
              if (fmt := registrant(name)) is not None]
    if len(claims) > 1:
        raise ValueError(f"response format {name!r} is claimed by two families: "
                         f"{claims[0][0]!r} and {claims[1][0]!r} ({ENTRY_POINT_GROUP})")
    if claims:
        return claims[0][1]
    known = ", ".join(family for family, _ in families) or (
        "none: is rubriclab installed (pip install -e .)?")
    raise ValueError(
        f"unknown response format {name!r}; the generic formats are {', '.join(sorted(FORMATS))}, "
        f"and no family registered under {ENTRY_POINT_GROUP!r} knows it (families: {known})"
    )
