"""Response formats: how an answer is parsed strictly, re-asked, and constrained on local models."""

from __future__ import annotations

import json
import math
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



# --- agent_action: one tool call of the verify refund agent (rubriclab.verify.refund) ---------

# Tool name -> argument name -> JSON type ("integer", "number", "string", "boolean"). These are
# the five tools of the refund world of the verify post, plus "finish" (no arguments), which
# ends a trial. Argument order here is the order the grammar emits; the parser takes any order.
AGENT_ACTION_TOOLS: dict[str, dict[str, str]] = {
    "lookup_order": {"order_id": "integer"},
    "issue_refund": {"order_id": "integer", "amount": "number"},
    "issue_credit": {"order_id": "integer", "amount": "number"},
    "escalate": {"order_id": "integer", "reason": "string"},
    "reply": {"text": "string", "resolve": "boolean"},
    "finish": {},
}


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


def _load_strict_json(text: str, what: str) -> Any:
    """JSON with nothing but whitespace around it (or one markdown code fence around the
    whole answer), no duplicate keys and no NaN or Infinity."""

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


def _has_json_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    raise AssertionError(f"unknown argument type {kind!r}")


def parse_agent_action(text: str) -> dict[str, Any]:
    """Exactly one JSON object `{"tool": <known name>, "args": {<its arguments>}}`; else raise.

    Strict: nothing but whitespace around the object (or one code fence around the whole
    answer; no second object, no prose); keys exactly "tool" and "args" ("finish" may omit "args" or give {}); the argument
    names exactly those of the tool, each of its JSON type (integer: not a float or a bool;
    number: int or float, finite; string; boolean). Returns {"tool": name, "args": dict}.
    """
    value = _load_strict_json(text, "an action")
    if not isinstance(value, dict):
        raise UnparseableAnswer(f"expected a JSON object, got {type(value).__name__}")
    tool = value.get("tool")
    if not isinstance(tool, str) or tool not in AGENT_ACTION_TOOLS:
        raise UnparseableAnswer(
            f"unknown tool {tool!r}; known tools: {', '.join(AGENT_ACTION_TOOLS)}"
        )
    spec = AGENT_ACTION_TOOLS[tool]
    allowed_keys = {"tool", "args"}
    if set(value) - allowed_keys:
        raise UnparseableAnswer(f"unexpected key(s) {sorted(set(value) - allowed_keys)}")
    if "args" not in value and spec:
        raise UnparseableAnswer(f"tool {tool!r} needs \"args\" with {', '.join(spec)}")
    args = value.get("args", {})
    if not isinstance(args, dict):
        raise UnparseableAnswer(f"\"args\" must be a JSON object, got {type(args).__name__}")
    missing = [name for name in spec if name not in args]
    extra = sorted(set(args) - set(spec))
    if missing or extra:
        raise UnparseableAnswer(
            f"tool {tool!r} takes arguments ({', '.join(spec)}); "
            f"missing {missing}, unexpected {extra}"
        )
    for name, kind in spec.items():
        if not _has_json_type(args[name], kind):
            raise UnparseableAnswer(
                f"argument {name!r} of {tool!r} must be a JSON {kind}, got {args[name]!r}"
            )
    return {"tool": tool, "args": {name: args[name] for name in spec}}


def _describe_tools(tools: dict[str, dict[str, str]]) -> str:
    return "; ".join(
        f"{name}({', '.join(f'{arg}: {kind}' for arg, kind in spec.items())})"
        for name, spec in tools.items()
    )


def agent_action_grammar(tools: dict[str, dict[str, str]] = AGENT_ACTION_TOOLS) -> str:
    """GBNF for `{"tool": "<name>", "args": {...}}`, one alternative per tool.

    Arguments come in the order of `tools`; integers are positive (order ids), numbers have at
    most two decimals, strings are JSON strings. Every string the grammar admits is accepted by
    `parse_agent_action`; the parser also takes whitespace, key orders and numbers the grammar
    does not produce (answers from API models).
    """
    lines = [r'root ::= "{" ws "\"tool\"" ws ":" ws action ws "}"']
    rule_names = {name: name.replace("_", "-") + "-call" for name in tools}
    lines.append("action ::= " + " | ".join(rule_names[name] for name in tools))
    for name, spec in tools.items():
        head = rf'"\"{name}\""'
        if not spec:
            lines.append(
                rf'{rule_names[name]} ::= {head} (ws "," ws "\"args\"" ws ":" ws "{{" ws "}}")?'
            )
            continue
        fields = r' ws "," ws '.join(
            rf'"\"{arg}\"" ws ":" ws {kind}' for arg, kind in spec.items()
        )
        args_object = rf'"\"args\"" ws ":" ws "{{" ws {fields} ws "}}"'
        lines.append(rf'{rule_names[name]} ::= {head} ws "," ws {args_object}')
    lines += [
        r'integer ::= [1-9] [0-9]{0,8}',
        r'number ::= ("0" | [1-9] [0-9]{0,6}) ("." [0-9]{1,2})?',
        r'boolean ::= "true" | "false"',
        r'string ::= "\"" char* "\""',
        r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
        r'ws ::= " "?',
    ]
    return "\n".join(lines) + "\n"


FORMATS["agent_action"] = ResponseFormat(
    name="agent_action",
    parse=parse_agent_action,
    reask_instruction=(
        "Your answer could not be read. Answer with exactly one JSON object and nothing else "
        '(no code fence, no prose), of the form {"tool": "<name>", "args": {...}}, where the '
        f"tool and its arguments are one of: {_describe_tools(AGENT_ACTION_TOOLS)}. "
        'Example: {"tool": "lookup_order", "args": {"order_id": 4411}}.'
    ),
    gbnf_grammar=agent_action_grammar(),
)

def get_format(name: str) -> ResponseFormat:
    try:
        return FORMATS[name]
    except KeyError:
        match = _VERDICT_LIST.match(name)
        if match:
            return verdict_list_format(int(match.group(1)))
        match = _RUBRIC_CHECKS.match(name)
        if match:
            return rubric_checks_format(int(match.group(1)))
        match = _RUBRIC_REVISION.match(name)
        if match:
            return rubric_revision_format(int(match.group(1)))
        raise ValueError(
            f"unknown response format {name!r}; known formats: {', '.join(sorted(FORMATS))}, verdict_list_<n>, rubric_checks_<n>, rubric_revision_<n>"
        ) from None


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
    value = _load_strict_json(text, "a revision")
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
)

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

FORMATS["rubric_revision"] = ResponseFormat(
    name=FORMATS["rubric_revision"].name,
    parse=FORMATS["rubric_revision"].parse,
    reask_instruction=FORMATS["rubric_revision"].reask_instruction,
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
    value = _load_strict_json(text, "a rubric")
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
        value = _load_strict_json(text, "a verdict list")
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


# The transfer work's formats live beside the prompts they answer (imported last: they build on
# ResponseFormat and the JSON helpers above).
from rubriclab.llm.formats_transfer import TRANSFER_FORMATS  # noqa: E402

FORMATS.update(TRANSFER_FORMATS)
