"""The refund worked example: world, verifier, scripted trajectories, agent loop, rubric."""

import json
import sqlite3
from pathlib import Path

import pytest

from rubriclab.llm import Completion, LLMClient, LLMConfig
from rubriclab.llm.formats import UnparseableAnswer, get_format
from rubriclab.verify.formats import AGENT_ACTION_TOOLS, FORMATS, parse_agent_action
from rubriclab.verify.refund import (
    CHECK_NAMES,
    GOOD_REPLY,
    POLICY,
    SCRIPTED_TRAJECTORIES,
    TICKET,
    RefundWorld,
    replay,
    run_agent_trial,
    verify,
)
from rubriclab.verify.reply_rubric import RUBRIC_CRITERIA, grade_reply, rubric_messages
from tests.llama_grammar import llama_grammar_parses

REPO = Path(__file__).resolve().parents[2]


# --- the world and the verifier ------------------------------------------------------------

def test_the_starting_state_is_the_posts():
    with RefundWorld() as world:
        order = world.lookup_order(4411)["order"]
        assert (order["amount_usd"], order["days_since_delivery"], order["photos_attached"]) == \
            ("86.00", 9, True)
        tables = world.tables()
        assert {"orders", "refunds", "credits", "escalations", "tickets",
                "messages_sent"} <= set(tables)
        assert len(tables["orders"]) >= 3
        assert len({o["customer_email"] for o in tables["orders"]}) == 1
        assert [(t["order_id"], t["status"]) for t in tables["tickets"]] == [(4411, "open")]
        for name in ("refunds", "credits", "escalations", "messages_sent"):
            assert tables[name] == []
        result = verify(world)
        assert result.failed == ("required.refunds", "required.tickets[4411]",
                                 "required.messages_sent")


def test_the_verifier_has_the_posts_six_lines_in_order():
    with RefundWorld() as world:
        result = verify(world)
    assert tuple(c.name for c in result.checks) == CHECK_NAMES == (
        "required.refunds", "required.tickets[4411]", "required.messages_sent",
        "forbidden.credits", "forbidden.escalations", "forbidden.refunds")
    assert result["required.refunds"].rule == "one row, order 4411, amount 86.00, status issued"
    assert all(c.reason for c in result.checks)


def test_the_correct_trajectory_passes_every_check():
    world = replay(SCRIPTED_TRAJECTORIES["correct"].actions)
    result = verify(world)
    assert result.passed and result.failed == ()
    assert result.to_dict() == {"passed": True, **{name: True for name in CHECK_NAMES}}


@pytest.mark.parametrize("name", [n for n in SCRIPTED_TRAJECTORIES if n != "correct"])
def test_each_scripted_trajectory_fails_exactly_the_line_it_breaks(name):
    trajectory = SCRIPTED_TRAJECTORIES[name]
    result = verify(replay(trajectory.actions))
    assert result.failed == (trajectory.breaks,)
    assert not result.passed


def test_every_line_of_the_lists_is_broken_by_some_trajectory():
    broken = {t.breaks for t in SCRIPTED_TRAJECTORIES.values()}
    assert broken == set(CHECK_NAMES) | {None}


def test_every_scripted_action_is_a_valid_agent_action():
    for trajectory in SCRIPTED_TRAJECTORIES.values():
        assert trajectory.actions[-1] == {"tool": "finish"}
        for act in trajectory.actions:
            assert parse_agent_action(json.dumps(act)) == {"tool": act["tool"],
                                                            "args": act.get("args", {})}


def test_a_reply_claiming_a_refund_is_not_a_refund():
    trajectory = SCRIPTED_TRAJECTORIES["claims_refund_without_issuing"]
    world = replay(trajectory.actions)
    sent = world.tables()["messages_sent"]
    assert "issued a full refund of 86.00 USD" in sent[0]["text"]
    assert not any(a["tool"] == "issue_refund" for a in trajectory.actions)
    result = verify(world)
    assert result.failed == ("required.refunds",)
    assert "missing order 4411 86.00 issued" in result["required.refunds"].reason


def test_the_verifier_reads_only_the_database(tmp_path):
    path = tmp_path / "world.sqlite"
    world = RefundWorld(str(path))
    replay(SCRIPTED_TRAJECTORIES["correct"].actions, world)
    world.close()
    with sqlite3.connect(path) as conn:
        assert verify(conn).passed
        conn.execute("UPDATE refunds SET amount_cents = 8500")
        assert verify(conn).failed == ("required.refunds",)


def test_tools_refuse_what_a_payment_system_would_and_change_nothing():
    with RefundWorld() as world:
        assert world.issue_refund(9999, 10.0) == {"ok": False, "error": "no order 9999"}
        assert not world.issue_refund(4411, 0)["ok"]
        assert not world.issue_refund(4411, 86.001)["ok"]
        assert "exceeds the order amount" in world.issue_refund(4411, 90.0)["error"]
        assert not world.escalate(4411, "  ")["ok"]
        assert not world.reply("", resolve=False)["ok"]
        assert not world.lookup_order(9999)["ok"]
        assert world.call("finish", {})["ok"] is False
        assert "takes (order_id, amount)" in world.call("issue_refund", {"order_id": 4411})["error"]
        tables = world.tables()
        assert all(tables[t] == [] for t in ("refunds", "credits", "escalations",
                                              "messages_sent"))
        assert tables["tickets"][0]["status"] == "open"
        assert world.issue_refund(4411, 86)["amount_usd"] == "86.00"


def test_reply_resolves_only_when_asked():
    with RefundWorld() as world:
        assert world.reply("Looking into it.", resolve=False) == \
            {"ok": True, "sent": True, "ticket_status": "open"}
        assert world.reply("", resolve=True) == \
            {"ok": True, "sent": False, "ticket_status": "resolved"}
        assert len(world.tables()["messages_sent"]) == 1


# --- the agent_action format ---------------------------------------------------------------

VALID_ACTIONS = [
    ('{"tool": "lookup_order", "args": {"order_id": 4411}}',
     {"tool": "lookup_order", "args": {"order_id": 4411}}),
    ('  {"args": {"amount": 86.0, "order_id": 4411}, "tool": "issue_refund"}\n',
     {"tool": "issue_refund", "args": {"order_id": 4411, "amount": 86.0}}),
    ('{"tool":"issue_credit","args":{"order_id":4411,"amount":10}}',
     {"tool": "issue_credit", "args": {"order_id": 4411, "amount": 10}}),
    ('{"tool": "escalate", "args": {"order_id": 4411, "reason": "over 200 USD"}}',
     {"tool": "escalate", "args": {"order_id": 4411, "reason": "over 200 USD"}}),
    ('{"tool": "reply", "args": {"text": "Refund issued \\u2713", "resolve": true}}',
     {"tool": "reply", "args": {"text": "Refund issued \u2713", "resolve": True}}),
    ('{"tool": "finish"}', {"tool": "finish", "args": {}}),
    ('{"tool": "finish", "args": {}}', {"tool": "finish", "args": {}}),
]

INVALID_ACTIONS = [
    ('{"tool": "refund_order", "args": {"order_id": 4411}}', "unknown tool"),
    ('{"tool": "Lookup_Order", "args": {"order_id": 4411}}', "unknown tool"),
    ('{"tool": "issue_refund", "args": {"order_id": 4411}}', "missing"),
    ('{"tool": "lookup_order", "args": {"order_id": 4411, "note": "x"}}', "unexpected"),
    ('{"tool": "lookup_order"}', "needs \"args\""),
    ('{"tool": "finish", "args": {"now": true}}', "unexpected"),
    ('{"tool": "lookup_order", "args": {"order_id": "4411"}}', "must be a JSON integer"),
    ('{"tool": "lookup_order", "args": {"order_id": 4411.0}}', "must be a JSON integer"),
    ('{"tool": "lookup_order", "args": {"order_id": true}}', "must be a JSON integer"),
    ('{"tool": "issue_refund", "args": {"order_id": 4411, "amount": "86.00"}}',
     "must be a JSON number"),
    ('{"tool": "issue_refund", "args": {"order_id": 4411, "amount": NaN}}', "NaN"),
    ('{"tool": "issue_refund", "args": {"order_id": 4411, "amount": 1e999}}',
     "must be a JSON number"),
    ('{"tool": "reply", "args": {"text": "hi", "resolve": "yes"}}', "must be a JSON boolean"),
    ('{"tool": "reply", "args": {"text": 5, "resolve": true}}', "must be a JSON string"),
    ('{"tool": "lookup_order", "args": [4411]}', "must be a JSON object"),
    ('{"tool": "finish", "extra": 1}', "unexpected key"),
    ('{"tool": "finish", "tool": "finish"}', "duplicate key"),
    ('{"tool": "finish"} {"tool": "finish"}', "exactly one JSON object"),
    ('{"tool": "lookup_order", "args": {"order_id": 4411}}\n{"tool": "finish"}',
     "exactly one JSON object"),
    ('I will look up the order first.', "exactly one JSON object"),
    ('```json\n{"tool": "finish"}\n``` Done.', "exactly one JSON object"),
    ('Sure! {"tool": "finish"}', "exactly one JSON object"),
    ('[{"tool": "finish"}]', "expected a JSON object"),
    ('', "exactly one JSON object"),
]


@pytest.mark.parametrize("text,expected", VALID_ACTIONS)
def test_agent_action_accepts_valid_actions(text, expected):
    assert parse_agent_action(text) == expected
    assert get_format("agent_action").parse(text) == expected


@pytest.mark.parametrize("text,message", INVALID_ACTIONS)
def test_agent_action_rejects_everything_else(text, message):
    with pytest.raises(UnparseableAnswer, match=message):
        parse_agent_action(text)


def test_agent_action_reask_restates_the_shape_and_every_tool():
    instruction = FORMATS["agent_action"].reask_instruction
    assert '{"tool": "<name>", "args": {...}}' in instruction
    for tool, spec in AGENT_ACTION_TOOLS.items():
        assert tool in instruction
        for arg in spec:
            assert arg in instruction


def test_agent_action_grammar_lists_every_tool_and_its_arguments():
    grammar = FORMATS["agent_action"].gbnf_grammar
    assert grammar.startswith("root ::= ")
    for tool, spec in AGENT_ACTION_TOOLS.items():
        assert f'"\\"{tool}\\""' in grammar
        for arg in spec:
            assert f'"\\"{arg}\\""' in grammar


def test_the_world_has_a_method_for_every_tool_of_the_format():
    for tool, spec in AGENT_ACTION_TOOLS.items():
        if tool != "finish":
            assert callable(getattr(RefundWorld, tool))



def test_the_agent_action_grammar_parses_as_gbnf():
    llama_cpp = pytest.importorskip("llama_cpp")
    # LlamaGrammar.from_string only stores the text in llama-cpp-python 0.3.x ...
    llama_cpp.LlamaGrammar.from_string(FORMATS["agent_action"].gbnf_grammar, verbose=False)
    # ... so the grammar is parsed by llama.cpp itself, which rejects a broken one.
    assert llama_grammar_parses(FORMATS["agent_action"].gbnf_grammar)
    assert not llama_grammar_parses('root ::= "{" undefined-rule "}"')


# --- the agent loop ------------------------------------------------------------------------

class ScriptedClient:
    """A stand-in for LLMClient: answers each request with the next scripted text, parsed by
    the real agent_action parser (so an invalid text comes back "unparseable")."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        self.labels = []

    def run(self, requests, label="model calls"):
        self.labels.append(label)
        out = []
        for request in requests:
            self.requests.append(request)
            text = self.answers.pop(0)
            fmt = get_format(request.response_format)
            try:
                parsed, outcome, error = fmt.parse(text), "ok", ""
            except UnparseableAnswer as exc:
                parsed, outcome, error = None, "unparseable", str(exc)
            out.append(Completion(request=request, key=f"k{len(self.requests)}",
                                  outcome=outcome, text=text, parsed=parsed, error=error))
        return out


def scripted_answers(name):
    return [json.dumps(a) for a in SCRIPTED_TRAJECTORIES[name].actions]


def test_agent_trial_runs_the_correct_script_to_a_passing_state():
    client = ScriptedClient(scripted_answers("correct"))
    trial = run_agent_trial(client, "scripted/agent", trial_index=3, temperature=0.7)
    assert trial.status == "finished" and trial.steps == 4
    assert [c.tool for c in trial.tool_calls] == ["lookup_order", "issue_refund", "reply",
                                                   "finish"]
    assert trial.tool_calls[1].result["status"] == "issued"
    assert trial.final_reply == GOOD_REPLY
    assert trial.verifier.passed
    assert client.answers == []
    # every step: same sample index, the agent_action format, the growing conversation
    assert {r.sample_index for r in client.requests} == {3}
    assert {r.response_format for r in client.requests} == {"agent_action"}
    assert {r.temperature for r in client.requests} == {0.7}
    assert [len(r.messages) for r in client.requests] == [2, 4, 6, 8]
    first = client.requests[0].message_dicts()
    assert POLICY in first[0]["content"] and first[1]["content"] == TICKET
    for tool in AGENT_ACTION_TOOLS:
        assert f"{tool}(" in first[0]["content"]
    # transcript: system, ticket, then (action, result) pairs, then finish
    roles = [m["role"] for m in trial.transcript]
    assert roles == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant"]
    assert trial.transcript[3]["content"].startswith("Result of lookup_order: ")
    assert json.loads(trial.transcript[3]["content"].split(": ", 1)[1])["order"]["order_id"] \
        == 4411
    record = trial.to_record()
    assert record["verifier_passed"] and record["status"] == "finished"


def test_agent_trial_records_a_broken_run_as_the_verifier_sees_it():
    client = ScriptedClient(scripted_answers("claims_refund_without_issuing"))
    trial = run_agent_trial(client, "scripted/agent", trial_index=0)
    assert trial.status == "finished"
    assert "issued a full refund" in trial.final_reply
    assert trial.verifier.failed == ("required.refunds",)


def test_agent_trial_stops_at_max_steps():
    client = ScriptedClient([json.dumps({"tool": "lookup_order", "args": {"order_id": 4411}})]
                            * 10)
    trial = run_agent_trial(client, "scripted/agent", trial_index=1, max_steps=3)
    assert trial.status == "max_steps" and trial.steps == 3
    assert len(client.requests) == 3 and len(client.answers) == 7
    assert [c.tool for c in trial.tool_calls] == ["lookup_order"] * 3
    assert trial.final_reply is None and not trial.verifier.passed


def test_an_unparseable_step_ends_the_trial_and_is_counted():
    client = ScriptedClient([scripted_answers("correct")[0], "I'll refund it now.",
                             scripted_answers("correct")[1]])
    trial = run_agent_trial(client, "scripted/agent", trial_index=0)
    assert trial.status == "unparseable" and trial.steps == 2
    assert "exactly one JSON object" in trial.error
    assert [c.tool for c in trial.tool_calls] == ["lookup_order"]
    assert trial.transcript[-1] == {"role": "assistant", "content": "I'll refund it now."}
    assert len(client.answers) == 1  # nothing guessed, nothing run after it
    assert trial.verifier.failed[0] == "required.refunds"


def test_a_tool_error_is_shown_to_the_agent_and_the_loop_goes_on():
    answers = [json.dumps({"tool": "issue_refund", "args": {"order_id": 4411, "amount": 100}}),
               json.dumps({"tool": "finish"})]
    client = ScriptedClient(answers)
    trial = run_agent_trial(client, "scripted/agent", trial_index=0)
    assert trial.status == "finished"
    assert trial.tool_calls[0].result["ok"] is False
    assert "exceeds the order amount" in client.requests[1].messages[-1].content


def test_agent_trial_through_the_model_layer_with_a_fake_model(tmp_path):
    # fake/hash scripts a whole trial: look up, refund (or not), reply, finish
    with LLMClient(LLMConfig(cache_dir=tmp_path)) as client:
        trials = [run_agent_trial(client, "fake/hash", trial_index=k, temperature=0.7)
                  for k in range(40)]
    assert all(t.status == "finished" for t in trials)
    assert all([c.tool for c in t.tool_calls][0] == "lookup_order" for t in trials)
    assert all(t.final_reply for t in trials)
    passed = [t.verifier.passed for t in trials]
    assert any(passed) and not all(passed)  # the verifier sees both


# --- the reply rubric ----------------------------------------------------------------------

def test_the_rubric_has_the_posts_four_criteria():
    texts = [c.text.lower() for c in RUBRIC_CRITERIA]
    assert len(texts) == 4
    assert "amount refunded" in texts[0] and "issued" in texts[0]
    assert "five to seven business days" in texts[1]
    assert "nothing outside the policy" in texts[2]
    assert "already in the" in texts[3] and "photos" in texts[3]


def test_rubric_messages_put_shared_content_first_and_the_criterion_last():
    prompts = [rubric_messages(GOOD_REPLY, TICKET, POLICY, c) for c in RUBRIC_CRITERIA]
    users = [p[-1]["content"] for p in prompts]
    for prompt, user, criterion in zip(prompts, users, RUBRIC_CRITERIA):
        assert prompt[0]["role"] == "system" and prompt[-1]["role"] == "user"
        assert user.endswith(criterion.text)
        assert "Yes or No" in user
        assert user.index(POLICY) < user.index(TICKET) < user.index(GOOD_REPLY) \
            < user.index(criterion.text)
    shared = users[0][: users[0].index(RUBRIC_CRITERIA[0].text)]
    assert all(u.startswith(shared) for u in users)
    assert rubric_messages("r", "t", "p", "a criterion")[-1]["content"].endswith("a criterion")


@pytest.mark.parametrize("model,passed", [("fake/yes", True), ("fake/no", False),
                                          ("fake/unparseable", None)])
def test_grade_reply_passes_only_if_all_four_pass(tmp_path, model, passed):
    with LLMClient(LLMConfig(cache_dir=tmp_path)) as client:
        grade = grade_reply(client, model, GOOD_REPLY)
    assert list(grade.verdicts) == [c.id for c in RUBRIC_CRITERIA]
    assert grade.passed is passed


@pytest.mark.parametrize("verdicts,passed", [
    (["yes", "yes", "yes", "yes"], True),
    (["yes", None, "no", "yes"], False),  # a "no" fails the reply whatever the missing one says
    (["yes", None, "yes", "yes"], None),  # undetermined: the missing verdict decides
])
def test_reply_grade_is_all_must_pass_with_undetermined_outcomes(verdicts, passed):
    from rubriclab.verify.reply_rubric import ReplyGrade

    grade = ReplyGrade({c.id: v for c, v in zip(RUBRIC_CRITERIA, verdicts)})
    assert grade.passed is passed
