"""Response formats of the carry work: rubrics written and revised by a model, and the judge's
one-call renderings (a 1-10 scale, one Yes/No per check).

Names: "rubric_revision" and "rubric_revision_<n>" (n = 1..99, at most n entries; used by
rubriclab.carry.revision), "rubric_checks" and "rubric_checks_<n>" (n = 1..MAX_RUBRIC_CHECKS;
carry's generated and label-taught sources), "scale_1_10" and "verdict_list_<n>" (n = 1..99;
rubriclab.carry.renderings). The model layer finds them through `response_format`, registered
under the entry-point group "rubriclab.response_formats" (rubriclab.llm.formats.get_format).
"""

from __future__ import annotations

import re
from typing import Any

from rubriclab.llm.formats import ResponseFormat, UnparseableAnswer, load_strict_json

# --- rubric_revision: a reviser's per-check operations on a rubric (rubriclab.carry.revision) --

# Action -> the keys its entry has, exactly ("add" entries have no id: the check is new).
REVISION_ENTRY_KEYS: dict[str, tuple[str, ...]] = {
    "keep": ("id", "action"),
    "edit": ("id", "action", "text"),
    "delete": ("id", "action"),
    "add": ("action", "text"),
}


def _revision_entry(position: int, entry: Any) -> dict[str, str]:
    where = f"entry {position} of \"checks\""
    if not isinstance(entry, dict):
        raise UnparseableAnswer(f"{where} must be a JSON object, got {type(entry).__name__}")
    action = entry.get("action")
    if action not in REVISION_ENTRY_KEYS:
        raise UnparseableAnswer(
            f"{where}: unknown action {action!r}; known: {', '.join(REVISION_ENTRY_KEYS)}"
        )
    expected = REVISION_ENTRY_KEYS[action]
    if set(entry) != set(expected):
        raise UnparseableAnswer(
            f"{where}: a {action!r} entry has exactly the keys {list(expected)}, "
            f"got {sorted(entry)}"
        )
    normalized = {"action": action}
    if "id" in expected:
        if not isinstance(entry["id"], str) or not entry["id"].strip():
            raise UnparseableAnswer(f"{where}: \"id\" must be a non-empty string")
        normalized["id"] = entry["id"]
    if "text" in expected:
        if not isinstance(entry["text"], str) or not entry["text"].strip():
            raise UnparseableAnswer(f"{where}: \"text\" must be a non-empty string")
        normalized["text"] = entry["text"].strip()
    return normalized


def parse_rubric_revision(text: str) -> dict[str, list[dict[str, str]]]:
    """Exactly one JSON object `{"checks": [<entry>, ...]}`; else raise.

    Entries: {"id", "action": "keep"}, {"id", "action": "edit", "text"}, {"id", "action":
    "delete"} and {"action": "add", "text"}, keys exactly these, ids and texts non-empty
    strings, no id named twice, at least one entry. Strict like agent_action: nothing but
    whitespace around the object, no duplicate keys. Whether the ids are those of the rubric
    under review (each mentioned exactly once) is checked by
    `rubriclab.carry.revision.parse_revision`, which knows the rubric. Returns
    {"checks": [{"action", "id"?, "text"?}, ...]} in the answer's order, texts stripped.
    """
    value = load_strict_json(text, "a revision")
    if not isinstance(value, dict) or set(value) != {"checks"}:
        raise UnparseableAnswer('expected a JSON object with the single key "checks"')
    entries = value["checks"]
    if not isinstance(entries, list) or not entries:
        raise UnparseableAnswer('"checks" must be a non-empty JSON array')
    parsed = [_revision_entry(position, entry) for position, entry in enumerate(entries)]
    ids = [entry["id"] for entry in parsed if "id" in entry]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise UnparseableAnswer(f"check id(s) {twice} mentioned more than once")
    return {"checks": parsed}


# Strings of at most 300 characters and bounded lists: a small local model that starts
# repeating itself reaches the end of the grammar instead of its token limit.
_JSON_STRING_RULES = [
    r'string ::= "\"" char{1,300} "\""',
    r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    r'ws ::= " "?',
]

_REVISION_GRAMMAR = "\n".join([
    r'root ::= "{\"checks\": [" ws entry ("," ws entry){0,39} "]}"',
    r'entry ::= keep | edit | delete | add',
    r'keep ::= "{\"id\": " string ", \"action\": \"keep\"}"',
    r'edit ::= "{\"id\": " string ", \"action\": \"edit\", \"text\": " string "}"',
    r'delete ::= "{\"id\": " string ", \"action\": \"delete\"}"',
    r'add ::= "{\"action\": \"add\", \"text\": " string "}"',
    *_JSON_STRING_RULES,
]) + "\n"

FORMATS: dict[str, ResponseFormat] = {}

FORMATS["rubric_revision"] = ResponseFormat(
    name="rubric_revision",
    parse=parse_rubric_revision,
    reask_instruction=(
        "Your answer could not be read. Answer with exactly one JSON object and nothing else "
        '(no code fence, no prose), of the form {"checks": [...]}. Mention every existing '
        'check exactly once by its id: {"id": "<id>", "action": "keep"}, {"id": "<id>", '
        '"action": "edit", "text": "<new text>"} or {"id": "<id>", "action": "delete"}. Give '
        'each new check, if the instructions allow new checks, as {"action": "add", "text": '
        '"<text>"}, without an id. Use no other keys and no empty texts.'
    ),
    gbnf_grammar=_REVISION_GRAMMAR,
)


_RUBRIC_REVISION = re.compile(r"^rubric_revision_([1-9][0-9]?)$")


def rubric_revision_format(max_entries: int) -> ResponseFormat:
    """rubric_revision with at most `max_entries` entries (the rubric's checks plus the adds a
    round may propose), which its grammar enforces on local models."""
    if not 1 <= max_entries <= 99:
        raise ValueError(f"rubric_revision needs 1..99 entries, got {max_entries}")
    base = FORMATS["rubric_revision"]

    def parse(text: str) -> dict[str, list[dict[str, str]]]:
        parsed = parse_rubric_revision(text)
        if len(parsed["checks"]) > max_entries:
            raise UnparseableAnswer(f"{len(parsed['checks'])} entries; at most {max_entries} "
                                    "(every current check once, plus the checks a round may add)")
        return parsed

    grammar = _REVISION_GRAMMAR.replace("{0,39}", f"{{0,{max_entries - 1}}}")
    return ResponseFormat(name=f"rubric_revision_{max_entries}", parse=parse,
                          reask_instruction=base.reask_instruction, gbnf_grammar=grammar)


# --- rubric_checks: a rubric written by a model (carry's generated and label-taught sources) ---

MAX_RUBRIC_CHECKS = 20


def parse_rubric_checks(text: str) -> list[str]:
    """Exactly one JSON object `{"checks": ["<check>", ...]}` with 1..20 non-empty texts.

    A check given twice stays twice here; the rubric builder keeps one and records the repeat.
    """
    value = load_strict_json(text, "a rubric")
    if not isinstance(value, dict) or set(value) != {"checks"}:
        raise UnparseableAnswer('expected a JSON object with the single key "checks"')
    checks = value["checks"]
    if not isinstance(checks, list) or not checks:
        raise UnparseableAnswer('"checks" must be a non-empty JSON array of strings')
    if len(checks) > MAX_RUBRIC_CHECKS:
        raise UnparseableAnswer(f'"checks" has {len(checks)} entries; at most {MAX_RUBRIC_CHECKS}')
    texts = []
    for position, check in enumerate(checks):
        if not isinstance(check, str) or not check.strip():
            raise UnparseableAnswer(f'entry {position} of "checks" must be a non-empty string')
        texts.append(" ".join(check.split()))
    return texts


FORMATS["rubric_checks"] = ResponseFormat(
    name="rubric_checks",
    parse=parse_rubric_checks,
    reask_instruction=(
        "Your answer could not be read. Answer with exactly one JSON object and nothing else "
        '(no code fence, no prose), of the form {"checks": ["<check 1>", "<check 2>", ...]}: '
        f"between 1 and {MAX_RUBRIC_CHECKS} checks, each a non-empty string."
    ),
)


_RUBRIC_CHECKS = re.compile(r"^rubric_checks_([1-9][0-9]?)$")


def rubric_checks_format(n_checks: int) -> ResponseFormat:
    """rubric_checks with at most `n_checks` checks, which its grammar enforces on local models."""
    if not 1 <= n_checks <= MAX_RUBRIC_CHECKS:
        raise ValueError(f"rubric_checks needs 1..{MAX_RUBRIC_CHECKS} checks, got {n_checks}")

    def parse(text: str) -> list[str]:
        checks = parse_rubric_checks(text)
        if len(checks) > n_checks:
            raise UnparseableAnswer(f"{len(checks)} checks; at most {n_checks} were asked for")
        return checks

    return ResponseFormat(
        name=f"rubric_checks_{n_checks}",
        parse=parse,
        reask_instruction=FORMATS["rubric_checks"].reask_instruction.replace(
            f"between 1 and {MAX_RUBRIC_CHECKS}", f"between 1 and {n_checks}"),
        gbnf_grammar="\n".join([
            f'root ::= "{{\\"checks\\": [" ws string ("," ws string){{0,{n_checks - 1}}} "]}}"',
            *_JSON_STRING_RULES,
        ]) + "\n",
    )


# --- scale_1_10: one integer score (carry's generic 1-10 scale rendering) ---------------------

_SCALE = re.compile(r"^\s*(10|[1-9])\s*$")


def parse_scale_1_10(text: str) -> int:
    match = _SCALE.match(text)
    if not match:
        raise UnparseableAnswer(f"expected one whole number from 1 to 10, got {text[:80]!r}")
    return int(match.group(1))


FORMATS["scale_1_10"] = ResponseFormat(
    name="scale_1_10",
    parse=parse_scale_1_10,
    reask_instruction=("Your answer could not be read. Answer with exactly one whole number "
                       "from 1 to 10 and nothing else."),
    gbnf_grammar='root ::= "10" | [1-9]\n',
)


# --- verdict_list_<n>: one Yes/No per check, all checks in one call (carry's all-in-one) ------

_VERDICT_LIST = re.compile(r"^verdict_list_([1-9][0-9]?)$")


def verdict_list_format(n_checks: int) -> ResponseFormat:
    """`{"verdicts": ["yes"|"no", ...]}` with exactly `n_checks` entries, in check order."""
    if not 1 <= n_checks <= 99:
        raise ValueError(f"verdict_list needs 1..99 checks, got {n_checks}")

    def parse(text: str) -> list[str]:
        value = load_strict_json(text, "a verdict list")
        if not isinstance(value, dict) or set(value) != {"verdicts"}:
            raise UnparseableAnswer('expected a JSON object with the single key "verdicts"')
        verdicts = value["verdicts"]
        if not isinstance(verdicts, list) or len(verdicts) != n_checks:
            got = len(verdicts) if isinstance(verdicts, list) else type(verdicts).__name__
            raise UnparseableAnswer(f'"verdicts" must list exactly {n_checks} answers, got {got}')
        parsed = []
        for position, verdict in enumerate(verdicts, start=1):
            if not isinstance(verdict, str) or verdict.strip().lower() not in ("yes", "no"):
                raise UnparseableAnswer(f"answer {position} must be \"yes\" or \"no\", got {verdict!r}")
            parsed.append(verdict.strip().lower())
        return parsed

    answers = ' "," ws '.join(['answer'] * n_checks)
    return ResponseFormat(
        name=f"verdict_list_{n_checks}",
        parse=parse,
        reask_instruction=(
            "Your answer could not be read. Answer with exactly one JSON object and nothing "
            f'else, of the form {{"verdicts": ["yes", "no", ...]}} with exactly {n_checks} '
            "answers, one per requirement, in the order given."
        ),
        gbnf_grammar="\n".join([
            f'root ::= "{{\\"verdicts\\": [" {answers} "]}}"',
            r'answer ::= "\"yes\"" | "\"no\""',
            r'ws ::= " "?',
        ]) + "\n",
    )


# --- the registered function --------------------------------------------------------------------

_SIZED = ((_VERDICT_LIST, verdict_list_format), (_RUBRIC_CHECKS, rubric_checks_format),
          (_RUBRIC_REVISION, rubric_revision_format))


def response_format(name: str) -> ResponseFormat | None:
    """The carry format called `name`, or None if it is not one (entry point "carry" of
    "rubriclab.response_formats"). A sized name out of range ("rubric_checks_21") raises
    ValueError."""
    if name in FORMATS:
        return FORMATS[name]
    for pattern, build in _SIZED:
        match = pattern.match(name)
        if match:
            return build(int(match.group(1)))
    return None
