"""Response format of the verify work: "agent_action", one tool call of the refund agent
(rubriclab.verify.refund), with its tools (`AGENT_ACTION_TOOLS`), parser and grammar.

The model layer finds it through `response_format`, registered under the entry-point group
"rubriclab.response_formats" (rubriclab.llm.formats.get_format).
"""

from __future__ import annotations

import math
from typing import Any

from rubriclab.llm.formats import ResponseFormat, UnparseableAnswer, load_strict_json

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
    value = load_strict_json(text, "an action")
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


FORMATS: dict[str, ResponseFormat] = {
    "agent_action": ResponseFormat(
        name="agent_action",
        parse=parse_agent_action,
        reask_instruction=(
            "Your answer could not be read. Answer with exactly one JSON object and nothing else "
            '(no code fence, no prose), of the form {"tool": "<name>", "args": {...}}, where the '
            f"tool and its arguments are one of: {_describe_tools(AGENT_ACTION_TOOLS)}. "
            'Example: {"tool": "lookup_order", "args": {"order_id": 4411}}.'
        ),
        gbnf_grammar=agent_action_grammar(),
    ),
}


def response_format(name: str) -> ResponseFormat | None:
    """The verify format called `name`, or None if it is not one (entry point "verify" of
    "rubriclab.response_formats")."""
    return FORMATS.get(name)
