"""Response formats: how an answer is parsed strictly, re-asked, and constrained on local models."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class UnparseableAnswer(ValueError):
    """The model's text is not in the requested format."""


@dataclass(frozen=True)
class ResponseFormat:
    name: str
    parse: Callable[[str], Any]
    reask_instruction: str
    # GBNF grammar that makes a llama.cpp model unable to answer outside the format.
    gbnf_grammar: str | None = None


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


FORMATS: dict[str, ResponseFormat] = {
    "text": ResponseFormat(
        name="text",
        parse=parse_text,
        reask_instruction="Please answer the request above.",
    ),
    "yes_no": ResponseFormat(
        name="yes_no",
        parse=parse_yes_no,
        reask_instruction="Your answer could not be read. Answer with exactly one word: Yes or No.",
        gbnf_grammar='root ::= "Yes" | "No"',
    ),
}


def get_format(name: str) -> ResponseFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(
            f"unknown response format {name!r}; known formats: {', '.join(sorted(FORMATS))}"
        ) from None
