"""The worked example of "Verifiers First, Rubrics Second" as a runnable world.

A customer writes that order 4411 arrived damaged and wants a refund. The policy gives a full
refund if the damage is reported within 14 days with photos, store credit otherwise, and sends
anything over 200 USD to a manager. Order 4411 is 86.00 USD, delivered nine days ago, photos
attached, so the right outcome is one 86.00 refund on 4411, a reply, and a resolved ticket.

- `RefundWorld`: the store's state in SQLite (orders, refunds, credits, escalations, tickets,
  messages_sent) and the agent's five tools as methods that change it.
- `verify(world)`: the post's required and forbidden lists, one named check per line, computed
  from the database alone (never from the transcript or from what the agent says it did).
- `SCRIPTED_TRAJECTORIES`: a correct run and one run per line of the lists that breaks exactly
  that line, plus a run whose reply claims a refund that was never issued.
- `run_agent_trial`: a model acts through the tools, one JSON action per step ("agent_action"
  response format), until it calls finish or runs out of steps.
- The reply rubric (the post's four binary criteria and the judge prompt for each) is
  rubriclab.verify.reply_rubric.

Ticket resolution. The post lists five tools (look up, refund, credit, escalate, reply) and
requires tickets[4411] to be resolved, so resolving is part of `reply`: `reply(text, resolve)`
sends `text` to the customer when it is not blank and, with `resolve=True`, marks the ticket
resolved. A blank text with `resolve=True` closes the ticket without sending anything (as
helpdesks allow "solve without a public reply"); that keeps "resolved" and "replied" two
separate facts of the state, as they are two separate lines of the verifier.

Reading of "refunds: one row" (required) next to "never more than one" (forbidden): the
required line asks that a refund row for order 4411, 86.00 USD, status issued exists; the
forbidden line caps the number of refund rows at one and bans rows on any other order. So a
double refund of 4411 breaks only the forbidden line, and a wrong amount only the required one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

from rubriclab.verify.formats import AGENT_ACTION_TOOLS
from rubriclab.llm.request import Request

# --- the task ------------------------------------------------------------------------------

ORDER_ID = 4411
CUSTOMER_EMAIL = "dana.reyes@example.com"
CUSTOMER_NAME = "Dana Reyes"
TODAY = date(2026, 10, 11)  # the post's publication date; the world's clock is fixed
REFUND_WINDOW_DAYS = 14
MANAGER_THRESHOLD_CENTS = 200_00

POLICY = """\
Damaged-item policy
1. If the customer reports the damage within 14 days of delivery and attaches photos, issue a \
full refund of the order amount to the original payment method.
2. Otherwise, issue store credit for the order amount instead of a refund.
3. Anything over 200 USD must be escalated to a manager; do not issue it yourself.
4. Refunds arrive in five to seven business days."""

TICKET = f"""\
Ticket for order {ORDER_ID}
From: {CUSTOMER_NAME} <{CUSTOMER_EMAIL}>
Subject: Order {ORDER_ID} arrived damaged
Attachments: damage_photo_1.jpg, damage_photo_2.jpg

Hi, my order {ORDER_ID} (the ceramic table lamp) arrived damaged: the base is cracked right \
through. Photos of the damage are attached. I would like a refund, please.
Dana"""

# (order_id, item, amount in cents, status, days since delivery or None, photos attached)
ORDERS = (
    (ORDER_ID, "ceramic table lamp", 86_00, "delivered", 9, True),
    (4378, "linen cushion covers (set of 2)", 34_50, "delivered", 41, False),
    (4402, "oak floor lamp", 249_00, "delivered", 20, False),
    (4456, "brass picture frame", 27_90, "shipped", None, False),
)

SCHEMA = """
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY, customer_email TEXT NOT NULL, item TEXT NOT NULL,
    amount_cents INTEGER NOT NULL, status TEXT NOT NULL, delivered_on TEXT,
    photos_attached INTEGER NOT NULL);
CREATE TABLE refunds (
    refund_id INTEGER PRIMARY KEY AUTOINCREMENT, order_id INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE credits (
    credit_id INTEGER PRIMARY KEY AUTOINCREMENT, order_id INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE escalations (
    escalation_id INTEGER PRIMARY KEY AUTOINCREMENT, order_id INTEGER NOT NULL,
    reason TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE tickets (
    order_id INTEGER PRIMARY KEY, customer_email TEXT NOT NULL, subject TEXT NOT NULL,
    body TEXT NOT NULL, attachments TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE messages_sent (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT, ticket_order_id INTEGER NOT NULL,
    recipient TEXT NOT NULL, text TEXT NOT NULL);
"""

TOOL_DESCRIPTIONS = {
    "lookup_order": "the order's item, amount, status, delivery date, days since delivery, "
                    "and whether damage photos are attached",
    "issue_refund": "refund `amount` USD of the order to the customer's original payment method",
    "issue_credit": "give the customer `amount` USD of store credit for the order",
    "escalate": "hand the order to a manager, with the reason",
    "reply": "send `text` to the customer; with `resolve` true, also mark the ticket resolved",
    "finish": "end your work on this ticket",
}


def usd(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def _to_cents(amount: Any) -> int | None:
    """USD amount -> cents; None unless a positive number with at most two decimals."""
    if isinstance(amount, bool) or not isinstance(amount, (int, float)):
        return None
    cents = round(amount * 100)
    if cents <= 0 or abs(amount * 100 - cents) > 1e-6:
        return None
    return int(cents)


# --- the world -----------------------------------------------------------------------------

class RefundWorld:
    """The store's database for one trial, and the five tools that change it.

    Tools return the dict the agent sees as the tool result: {"ok": True, ...} or
    {"ok": False, "error": ...} (an error changes nothing). The tools enforce what a payment
    system would (the order exists, the amount is a positive number of cents no larger than
    the order), not the policy: refunding the wrong order is possible, as it is in real systems,
    and it is the verifier's job to catch it.
    """

    def __init__(self, path: str = ":memory:"):
        self.conn = sqlite3.connect(path)
        self.conn.executescript(SCHEMA)
        with self.conn:
            for order_id, item, cents, status, days, photos in ORDERS:
                delivered = None if days is None else (TODAY - timedelta(days=days)).isoformat()
                self.conn.execute(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (order_id, CUSTOMER_EMAIL, item, cents, status, delivered, int(photos)),
                )
            self.conn.execute(
                "INSERT INTO tickets VALUES (?, ?, ?, ?, ?, 'open')",
                (ORDER_ID, CUSTOMER_EMAIL, f"Order {ORDER_ID} arrived damaged",
                 TICKET.split("\n\n", 1)[1], "damage_photo_1.jpg, damage_photo_2.jpg"),
            )
        self.ticket_order_id = ORDER_ID

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RefundWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _order(self, order_id: Any) -> tuple | None:
        if isinstance(order_id, bool) or not isinstance(order_id, int):
            return None
        return self.conn.execute(
            "SELECT order_id, item, amount_cents, status, delivered_on, photos_attached "
            "FROM orders WHERE order_id = ?", (order_id,)).fetchone()

    # the five tools ------------------------------------------------------------------------

    def lookup_order(self, order_id: int) -> dict[str, Any]:
        row = self._order(order_id)
        if row is None:
            return {"ok": False, "error": f"no order {order_id!r}"}
        oid, item, cents, status, delivered_on, photos = row
        days = None if delivered_on is None else (TODAY - date.fromisoformat(delivered_on)).days
        return {"ok": True, "order": {
            "order_id": oid, "item": item, "amount_usd": usd(cents), "status": status,
            "delivered_on": delivered_on, "days_since_delivery": days,
            "photos_attached": bool(photos), "today": TODAY.isoformat(),
        }}

    def _payout(self, table: str, order_id: int, amount: float) -> dict[str, Any]:
        row = self._order(order_id)
        if row is None:
            return {"ok": False, "error": f"no order {order_id!r}"}
        cents = _to_cents(amount)
        if cents is None:
            return {"ok": False,
                    "error": f"amount must be a positive USD amount with at most two decimals, "
                             f"got {amount!r}"}
        if cents > row[2]:
            return {"ok": False, "error": f"amount {usd(cents)} exceeds the order amount "
                                          f"{usd(row[2])}"}
        with self.conn:
            cursor = self.conn.execute(
                f"INSERT INTO {table} (order_id, amount_cents, status) VALUES (?, ?, 'issued')",
                (order_id, cents))
        kind = "refund" if table == "refunds" else "credit"
        return {"ok": True, f"{kind}_id": cursor.lastrowid, "order_id": order_id,
                "amount_usd": usd(cents), "status": "issued"}

    def issue_refund(self, order_id: int, amount: float) -> dict[str, Any]:
        return self._payout("refunds", order_id, amount)

    def issue_credit(self, order_id: int, amount: float) -> dict[str, Any]:
        return self._payout("credits", order_id, amount)

    def escalate(self, order_id: int, reason: str) -> dict[str, Any]:
        if self._order(order_id) is None:
            return {"ok": False, "error": f"no order {order_id!r}"}
        if not isinstance(reason, str) or not reason.strip():
            return {"ok": False, "error": "an escalation needs a reason"}
        with self.conn:
            cursor = self.conn.execute(
                "INSERT INTO escalations (order_id, reason, status) VALUES (?, ?, 'open')",
                (order_id, reason))
        return {"ok": True, "escalation_id": cursor.lastrowid, "order_id": order_id,
                "status": "open"}

    def reply(self, text: str, *, resolve: bool) -> dict[str, Any]:
        """Send `text` to the ticket's customer (unless blank); `resolve` marks it resolved."""
        if not isinstance(text, str) or not isinstance(resolve, bool):
            return {"ok": False, "error": "reply takes text (string) and resolve (boolean)"}
        sent = bool(text.strip())
        if not sent and not resolve:
            return {"ok": False, "error": "nothing to do: the text is blank and resolve is false"}
        with self.conn:
            if sent:
                self.conn.execute(
                    "INSERT INTO messages_sent (ticket_order_id, recipient, text) "
                    "VALUES (?, (SELECT customer_email FROM tickets WHERE order_id = ?), ?)",
                    (self.ticket_order_id, self.ticket_order_id, text))
            if resolve:
                self.conn.execute("UPDATE tickets SET status = 'resolved' WHERE order_id = ?",
                                  (self.ticket_order_id,))
        status = self.conn.execute("SELECT status FROM tickets WHERE order_id = ?",
                                   (self.ticket_order_id,)).fetchone()[0]
        return {"ok": True, "sent": sent, "ticket_status": status}

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one action {"tool", "args"} as the agent would; "finish" is not a world tool."""
        spec = AGENT_ACTION_TOOLS.get(tool)
        if spec is None or tool == "finish":
            return {"ok": False, "error": f"unknown tool {tool!r}"}
        if set(args) != set(spec):
            return {"ok": False, "error": f"{tool} takes ({', '.join(spec)}), got {sorted(args)}"}
        if tool == "reply":
            return self.reply(args["text"], resolve=args["resolve"])
        return getattr(self, tool)(**args)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as a list of row dicts (for reports and debugging)."""
        out = {}
        for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "ORDER BY name"):
            cursor = self.conn.execute(f"SELECT * FROM {name}")
            columns = [d[0] for d in cursor.description]
            out[name] = [dict(zip(columns, row)) for row in cursor.fetchall()]
        return out


# --- the verifier --------------------------------------------------------------------------

# The post's two lists, written down before anything runs: (check name, rule).
REQUIRED_REFUND = (ORDER_ID, 86_00, "issued")
VERIFIER_LINES = (
    ("required.refunds", "one row, order 4411, amount 86.00, status issued"),
    ("required.tickets[4411]", "status resolved"),
    ("required.messages_sent", "at least one reply to the customer"),
    ("forbidden.credits", "none issued"),
    ("forbidden.escalations", "none (the amount is under the manager threshold)"),
    ("forbidden.refunds", "none on any other order, and never more than one"),
)
CHECK_NAMES = tuple(name for name, _ in VERIFIER_LINES)


@dataclass(frozen=True)
class Check:
    name: str
    rule: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class VerifierResult:
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if not c.passed)

    def __getitem__(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, **{c.name: c.passed for c in self.checks}}


def _rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


def _fmt_payouts(rows: list[tuple]) -> str:
    return ", ".join(f"order {o} {usd(c)} {s}" for o, c, s in rows) or "none"


def verify(world: RefundWorld | sqlite3.Connection) -> VerifierResult:
    """The post's required and forbidden lists, each a named check, from the database alone."""
    conn = world if isinstance(world, sqlite3.Connection) else world.conn
    order_id, cents, status = REQUIRED_REFUND
    rules = dict(VERIFIER_LINES)
    checks = []

    def add(name: str, passed: bool, reason: str) -> None:
        checks.append(Check(name, rules[name], bool(passed), reason))

    refunds = _rows(conn, "SELECT order_id, amount_cents, status FROM refunds ORDER BY refund_id")
    matching = [r for r in refunds if r == (order_id, cents, status)]
    add("required.refunds", bool(matching),
        f"refunds: {_fmt_payouts(refunds)}; "
        + ("found" if matching else "missing")
        + f" order {order_id} {usd(cents)} {status}")

    ticket = _rows(conn, "SELECT status, customer_email FROM tickets WHERE order_id = ?",
                   (order_id,))
    ticket_status = ticket[0][0] if ticket else None
    add("required.tickets[4411]", ticket_status == "resolved",
        f"ticket {order_id} status is {ticket_status!r}")

    customer = ticket[0][1] if ticket else None
    replies = _rows(conn, "SELECT text FROM messages_sent WHERE ticket_order_id = ? "
                          "AND recipient = ? AND trim(text) != ''", (order_id, customer))
    add("required.messages_sent", len(replies) >= 1,
        f"{len(replies)} message(s) sent to the customer on ticket {order_id}")

    credits = _rows(conn, "SELECT order_id, amount_cents, status FROM credits ORDER BY credit_id")
    add("forbidden.credits", not credits, f"credits: {_fmt_payouts(credits)}")

    escalations = _rows(conn, "SELECT order_id, reason FROM escalations ORDER BY escalation_id")
    add("forbidden.escalations", not escalations,
        "escalations: " + (", ".join(f"order {o} ({r})" for o, r in escalations) or "none"))

    others = [r for r in refunds if r[0] != order_id]
    add("forbidden.refunds", not others and len(refunds) <= 1,
        f"{len(refunds)} refund row(s); on other orders: {_fmt_payouts(others)}")
    return VerifierResult(tuple(checks))


# --- scripted trajectories -----------------------------------------------------------------

def action(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


GOOD_REPLY = (
    "Hi Dana, I'm sorry your lamp arrived damaged. Thank you for the photos. I have issued a "
    "full refund of 86.00 USD to your original payment method; it will arrive in five to "
    "seven business days."
)
LOOKUP = action("lookup_order", order_id=ORDER_ID)
REFUND = action("issue_refund", order_id=ORDER_ID, amount=86.00)
REPLY_AND_RESOLVE = action("reply", text=GOOD_REPLY, resolve=True)
FINISH = {"tool": "finish"}


@dataclass(frozen=True)
class ScriptedTrajectory:
    name: str
    breaks: str | None  # the verifier check it fails; None for the correct run
    description: str
    actions: tuple[dict[str, Any], ...]


def _trajectory(name: str, breaks: str | None, description: str,
                *actions: dict[str, Any]) -> ScriptedTrajectory:
    return ScriptedTrajectory(name, breaks, description, actions)


SCRIPTED_TRAJECTORIES: dict[str, ScriptedTrajectory] = {t.name: t for t in (
    _trajectory("correct", None, "look up, refund 86.00, reply and resolve",
                LOOKUP, REFUND, REPLY_AND_RESOLVE, FINISH),
    _trajectory("wrong_amount", "required.refunds", "refunds 80.00 instead of 86.00",
                LOOKUP, action("issue_refund", order_id=ORDER_ID, amount=80.00),
                action("reply", text=GOOD_REPLY.replace("86.00", "80.00"), resolve=True),
                FINISH),
    _trajectory("claims_refund_without_issuing", "required.refunds",
                "the reply says the refund was issued, but issue_refund is never called",
                LOOKUP, REPLY_AND_RESOLVE, FINISH),
    _trajectory("never_resolves", "required.tickets[4411]",
                "refunds and replies but leaves the ticket open",
                LOOKUP, REFUND, action("reply", text=GOOD_REPLY, resolve=False), FINISH),
    _trajectory("never_replies", "required.messages_sent",
                "refunds and closes the ticket without a message to the customer",
                LOOKUP, REFUND, action("reply", text="", resolve=True), FINISH),
    _trajectory("credit_as_well", "forbidden.credits",
                "refunds 86.00 and adds 10.00 of store credit as goodwill",
                LOOKUP, REFUND, action("issue_credit", order_id=ORDER_ID, amount=10.00),
                REPLY_AND_RESOLVE, FINISH),
    _trajectory("escalates", "forbidden.escalations",
                "refunds 86.00 and also escalates to a manager",
                LOOKUP, REFUND,
                action("escalate", order_id=ORDER_ID, reason="customer received a damaged item"),
                REPLY_AND_RESOLVE, FINISH),
    _trajectory("refunds_other_order", "forbidden.refunds",
                "refunds 4411 correctly and also refunds order 4378",
                LOOKUP, REFUND, action("issue_refund", order_id=4378, amount=34.50),
                REPLY_AND_RESOLVE, FINISH),
    _trajectory("refunds_twice", "forbidden.refunds", "refunds 86.00 on 4411 twice",
                LOOKUP, REFUND, REFUND, REPLY_AND_RESOLVE, FINISH),
)}


def replay(actions: Sequence[dict[str, Any]], world: RefundWorld | None = None) -> RefundWorld:
    """Apply the actions to `world` (a fresh one by default), stopping at finish."""
    world = world if world is not None else RefundWorld()
    for act in actions:
        if act["tool"] == "finish":
            break
        world.call(act["tool"], act.get("args", {}))
    return world


# --- the agent loop ------------------------------------------------------------------------

def _signature(tool: str) -> str:
    return f"{tool}({', '.join(f'{a}: {k}' for a, k in AGENT_ACTION_TOOLS[tool].items())})"


def agent_system_prompt(policy: str = POLICY) -> str:
    tools = "\n".join(f"- {_signature(t)}: {TOOL_DESCRIPTIONS[t]}" for t in AGENT_ACTION_TOOLS)
    return (
        "You are a customer support agent for an online store. Handle the ticket below by "
        "calling tools, one per turn, following the store's policy exactly.\n\n"
        f"{policy}\n\n"
        f"Tools:\n{tools}\n\n"
        'Answer every turn with exactly one JSON object and nothing else: {"tool": "<name>", '
        '"args": {...}}, for example {"tool": "lookup_order", "args": {"order_id": 4411}}. '
        "Amounts are numbers in USD. After each call you will see its result. When the ticket "
        'is handled, answer {"tool": "finish"}.'
    )


@dataclass(frozen=True)
class ToolCall:
    tool: str
    args: dict[str, Any]
    result: dict[str, Any] | None  # None for finish


TrialStatus = Literal["finished", "max_steps", "unparseable", "failed"]


@dataclass(frozen=True)
class Trial:
    """One agent run. `status`: "finished" (called finish), "max_steps" (ran out of steps),
    "unparseable" (a step never came back as a valid action, after the model layer's re-asks;
    the trial stops there and is counted as such, never guessed) or "failed" (no answer). The
    verifier is run on the final state whatever the status."""

    trial_index: int
    model: str
    status: TrialStatus
    steps: int
    transcript: tuple[dict[str, str], ...]
    tool_calls: tuple[ToolCall, ...]
    final_reply: str | None
    verifier: VerifierResult
    error: str = ""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def to_record(self) -> dict[str, Any]:
        return {
            "trial_index": self.trial_index, "model": self.model, "status": self.status,
            "steps": self.steps, "n_tool_calls": len(self.tool_calls),
            "verifier_passed": self.verifier.passed,
            **{f"check:{c.name}": c.passed for c in self.verifier.checks},
            "final_reply": self.final_reply, "error": self.error,
            "tool_calls": json.dumps([asdict(c) for c in self.tool_calls]),
        }


def run_agent_trial(client: Any, model: str, trial_index: int, max_steps: int = 8,
                    temperature: float = 0.7, max_tokens: int = 256,
                    policy: str = POLICY, ticket: str = TICKET) -> Trial:
    """Let `model` handle the ticket in a fresh world, one "agent_action" per step.

    Every step is one request with sample_index=trial_index (so trials differ when
    temperature > 0, and a rerun replays every step from the cache). The tool's result is
    appended as the next user message. The loop stops at finish, after `max_steps` model
    calls, or at the first unparseable or failed step. `client` is anything with
    `.run(requests, label=...) -> completions` (an `LLMClient`). An `LLMClient` raises
    ModelCallsFailed for a step that got no answer after its retries; the steps before it are
    cached, so a rerun replays them and asks only the failed one again.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    messages = [{"role": "system", "content": agent_system_prompt(policy)},
                {"role": "user", "content": ticket}]
    calls: list[ToolCall] = []
    status: TrialStatus = "max_steps"
    error = ""
    steps = 0
    with RefundWorld() as world:
        while steps < max_steps:
            request = Request.chat(model, messages, temperature=temperature,
                                   max_tokens=max_tokens, response_format="agent_action",
                                   sample_index=trial_index)
            completion = client.run([request], label=f"refund agent trial {trial_index}")[0]
            steps += 1
            if completion.outcome != "ok":
                status = "unparseable" if completion.outcome == "unparseable" else "failed"
                error = completion.error
                if completion.text:
                    messages = messages + [{"role": "assistant", "content": completion.text}]
                break
            messages = messages + [{"role": "assistant", "content": completion.text}]
            act = completion.parsed
            if act["tool"] == "finish":
                calls.append(ToolCall("finish", {}, None))
                status = "finished"
                break
            result = world.call(act["tool"], act["args"])
            calls.append(ToolCall(act["tool"], dict(act["args"]), result))
            messages = messages + [{"role": "user", "content":
                                    f"Result of {act['tool']}: {json.dumps(result)}"}]
        replies = [c.args["text"] for c in calls
                   if c.tool == "reply" and c.result and c.result.get("sent")]
        return Trial(
            trial_index=trial_index, model=model, status=status, steps=steps,
            transcript=tuple(messages), tool_calls=tuple(calls),
            final_reply=replies[-1] if replies else None, verifier=verify(world),
            error=error, tables=world.tables(),
        )
