"""Text from a config (labels, model strings, titles) written into reStructuredText, so that it
reads as the text it is and never as markup.

Snakemake renders each report caption (workflow/report/*.rst) as a Jinja2 template, with no
escaping of its own, and then as reStructuredText (docutils), whose HTML goes into report.html.
A label inserted as it is could start a directive (`.. raw:: html` on a line of its own), a
link, a role or a list. `rst_text` escapes a string for running text: every character that
reStructuredText could read as markup is escaped with a backslash, and line breaks and other
control characters become spaces, so it stays inside the line it is written in. Docutils escapes
the HTML itself (<, >, &).

The config's checks refuse such strings (rubriclab.config); this holds on its own, for strings
that reach a caption some other way (a provenance record written by an older rubriclab, a
dataset's checklist file).
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Mapping
from typing import Any

_PUNCTUATION = frozenset(string.punctuation)
# Inside a word these are never markup, and keeping them readable keeps values such as
# "calibration_environments" equal to themselves in a caption's comparisons.
_PLAIN_INSIDE_WORDS = frozenset("_-./")

# Parts of a provenance record (rubriclab.provenance) written by rubriclab itself, inserted in
# captions as inline literals (``...``), where a backslash would show.
_RECORD_KEYS_KEPT = frozenset({"config_digest", "rubriclab_version", "outputs"})


def _breaks_line(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def rst_text(value: Any) -> str:
    """`value` as reStructuredText running text that shows exactly its characters (line breaks
    and control characters as spaces, surrounding whitespace dropped)."""
    text = "".join(" " if _breaks_line(c) else c for c in str(value)).strip()
    out = []
    for i, char in enumerate(text):
        inside_word = (char in _PLAIN_INSIDE_WORDS and 0 < i < len(text) - 1
                       and text[i - 1].isalnum() and text[i + 1].isalnum())
        out.append("\\" + char if char in _PUNCTUATION and not inside_word else char)
    escaped = "".join(out)
    # A line of one repeated character (a label made only of backslashes, escaped) would be
    # read as a title's underline; an escaped space, which shows as nothing, breaks it.
    return "\\ " + escaped if escaped and set(escaped) == {"\\"} else escaped


def rst_escaped(value: Any) -> Any:
    """`value` with every string in it (not its mappings' keys) escaped by `rst_text`."""
    if isinstance(value, str):
        return rst_text(value)
    if isinstance(value, Mapping):
        return {key: rst_escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rst_escaped(item) for item in value]
    return value


def caption_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A provenance record (rubriclab.provenance) as a caption's param: the models' strings and
    labels, names, settings and sizes escaped for running text (`rst_escaped`); what rubriclab
    writes itself (digest, version, outputs) kept as it is."""
    return {key: value if key in _RECORD_KEYS_KEPT else rst_escaped(value)
            for key, value in record.items()}
