"""The known-truth world of verify (rubriclab.verify.refund): a scripted agent whose true pass
rate is set, and what the known-truth judge (`rubriclab.known_truth`) reads in the reply rubric's
prompts.

fake/known-agent?pass_rate=<p>&salt=<text> handles the refund ticket of the worked example. On
each trial it follows, with probability p, the correct run of `SCRIPTED_TRAJECTORIES`, and
otherwise one of the runs that each break one line of the verifier, uniform over them. The draw
is one per trial, from sha256 of the salt and the trial (the request's sample index, which
`run_agent_trial` keeps for every step of a trial), and not of p: raising p turns failing
trials into correct ones and changes nothing else. It answers each "agent_action" prompt from
the transcript it is shown: the number of its own turns there is the step, and its earlier
turns must be its trajectory's (a transcript that is not the refund task's, or not this
trial's, stops the call with OutsideTheWorld). Whether a trial passes is then the verifier's
decision on the database, as for any agent, so the world's true pass rate is p by construction:
the realised share over trials is what the verifier counts, the expected one is p.

The reply judge. The reply rubric's prompts (`reply_rubric.rubric_messages`) show the policy, the
ticket, the reply and one criterion. The known-truth judge answers them only for this world's
task (the policy and ticket of `refund`), for a reply this world's agent sends (`WORLD_REPLIES`:
every non-blank reply of `SCRIPTED_TRAJECTORIES`) and for the four criteria of
`RUBRIC_CRITERIA`; anything else is OutsideTheWorld. The truth of a criterion is read from the
reply's text against the correct outcome of the world, declared beside each criterion
(`REPLY_MEANINGS`): the refund the policy gives (86.00 USD on order 4411, issued), the time the
policy says it takes (five to seven business days), no promise the policy does not make, no
request for what the ticket already holds. Each answer is the truth with probability tpr (met)
or tnr (not met), one draw from sha256 of (model string, sample index, messages), as for carry's
prompts. The pipeline judges each trial's reply with the trial's index as the sample index, so
the same reply text in two trials gets two draws.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qs

from rubriclab.verify.refund import (
    ORDER_ID, ORDERS, POLICY, SCRIPTED_TRAJECTORIES, TICKET, ScriptedTrajectory,
    agent_system_prompt, usd,
)
from rubriclab.verify.reply_rubric import RUBRIC_CRITERIA, RUBRIC_SYSTEM_PROMPT, rubric_messages

from rubriclab.known_truth.models import register_world
from rubriclab.known_truth.world import (
    AGENT, OutsideTheWorld, _unit, agent_pass_rate, judge_rates,
)

CORRECT = "correct"


# --- the agent --------------------------------------------------------------------------------

def failing_trajectories() -> list[ScriptedTrajectory]:
    """The scripted runs that break a line of the verifier, in their declared order."""
    return [t for t in SCRIPTED_TRAJECTORIES.values() if t.breaks is not None]


def trial_trajectory(model: str, trial: int) -> ScriptedTrajectory:
    """The run the agent follows on this trial (see the module docstring)."""
    pass_rate = agent_pass_rate(model)
    salt = parse_qs(model.partition("?")[2]).get("salt", [""])[0]
    if _unit([AGENT, salt, trial, CORRECT]) < pass_rate:
        return SCRIPTED_TRAJECTORIES[CORRECT]
    failing = failing_trajectories()
    return failing[int(_unit([AGENT, salt, trial, "failing"]) * len(failing))]


def agent_answer(model: str, sample_index: int, response_format: str,
                 messages: list[dict[str, str]]) -> str:
    """The next action of the trial's trajectory, read off the transcript."""
    if response_format != "agent_action":
        raise OutsideTheWorld(f"the known-truth agent answers the refund task's agent_action "
                              f"prompts, not {response_format!r}")
    opening = [{"role": "system", "content": agent_system_prompt()},
               {"role": "user", "content": TICKET}]
    if [dict(m) for m in messages[:2]] != opening:
        raise OutsideTheWorld("the known-truth agent handles the refund ticket of order "
                              f"{ORDER_ID} under the world's policy; this transcript begins "
                              f"{str(messages[:1])[:120]!r}")
    trajectory = trial_trajectory(model, sample_index)
    own = [m["content"] for m in messages[2:] if m["role"] == "assistant"]
    for step, content in enumerate(own):
        if step >= len(trajectory.actions) or _action(content) != trajectory.actions[step]:
            raise OutsideTheWorld(f"the transcript of trial {sample_index} is not the known "
                                  f"agent's {trajectory.name!r} run (turn {step + 1}: "
                                  f"{content[:80]!r})")
    if len(own) >= len(trajectory.actions):
        raise OutsideTheWorld(f"trial {sample_index}: the known agent's {trajectory.name!r} "
                              f"run has finished after {len(trajectory.actions)} turns")
    return json.dumps(trajectory.actions[len(own)])


def _action(content: str) -> object:
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return None


# --- the reply judge ----------------------------------------------------------------------

@dataclass(frozen=True)
class ReplyMeaning:
    """How a criterion's truth is read from a reply: it is met when the reply matches every
    pattern of `requires` and none of `forbids` (regular expressions)."""

    requires: tuple[str, ...] = ()
    forbids: tuple[str, ...] = ()

    def met(self, reply: str) -> bool:
        return (all(re.search(p, reply) for p in self.requires)
                and not any(re.search(p, reply) for p in self.forbids))


# The correct outcome of the world: a full refund of the order's amount, issued, arriving in
# the time the policy's fourth line gives.
REFUND_USD = usd(next(cents for order_id, _, cents, *_ in ORDERS if order_id == ORDER_ID))
REFUND_TIME = "five to seven business days"

REPLY_MEANINGS = {
    # the refund's amount as the policy gives it, and that it has been issued
    "amount_issued": ReplyMeaning(requires=(rf"\b{re.escape(REFUND_USD)} USD\b",
                                            r"(?i)\bissued\b")),
    "when_to_expect": ReplyMeaning(requires=(rf"(?i)\b{REFUND_TIME}\b",)),
    # the policy promises a refund (or credit instead, or a manager above 200 USD), nothing
    # else: no credit on top of a refund, no manager, replacement, discount or compensation
    "within_policy": ReplyMeaning(forbids=(
        r"(?i)\bstore credit\b", r"(?i)\bmanager\b", r"(?i)\breplacement\b",
        r"(?i)\b(discount|voucher|coupon|compensation)\b")),
    # the ticket holds the order number and the photos
    "no_redundant_ask": ReplyMeaning(forbids=(
        r"(?i)\b(send|attach|provide|share|upload)\b[^.?!]*\b(photos?|pictures?|order number)\b",
    )),
}

WORLD_REPLIES = tuple(dict.fromkeys(
    a["args"]["text"] for t in SCRIPTED_TRAJECTORIES.values() for a in t.actions
    if a["tool"] == "reply" and a["args"]["text"].strip()))

_CRITERIA = {c.text: c.id for c in RUBRIC_CRITERIA}
_REPLY_OPENING = f"Policy:\n{POLICY}\n\nTicket:\n{TICKET}\n\nReply sent to the customer:\n"
_CRITERION = "\n\nCriterion:\n"
_QUESTION = "\n\nDoes the reply meet the criterion below? "


def is_reply_prompt(messages: list[dict[str, str]]) -> bool:
    """Whether the messages are a reply-rubric prompt (by its system prompt)."""
    return bool(messages) and messages[0].get("role") == "system" \
        and messages[0].get("content") == RUBRIC_SYSTEM_PROMPT


def read_reply_prompt(messages: list[dict[str, str]]) -> tuple[str, str]:
    """(reply, criterion id) of a reply-rubric prompt of this world, read as
    `reply_rubric.rubric_messages` writes it."""
    user = messages[-1]["content"] if messages else ""
    if not user.startswith(_REPLY_OPENING):
        raise OutsideTheWorld("the known-truth judge grades replies to the refund ticket of "
                              f"order {ORDER_ID} under the world's policy; this prompt begins "
                              f"{user[:80]!r}")
    criterion_at = user.rfind(_CRITERION)
    question_at = user.rfind(_QUESTION, 0, criterion_at)
    reply = user[len(_REPLY_OPENING):question_at] if question_at >= 0 else ""
    text = user[criterion_at + len(_CRITERION):] if criterion_at >= 0 else ""
    if text not in _CRITERIA or [dict(m) for m in messages] != rubric_messages(
            reply, TICKET, POLICY, text):
        raise OutsideTheWorld(f"the known-truth judge knows the reply rubric's four criteria; "
                              f"it cannot read the criterion {text[:120]!r}")
    if reply not in WORLD_REPLIES:
        raise OutsideTheWorld(f"the known-truth judge knows the replies the world's agent "
                              f"sends; not {reply[:80]!r}")
    return reply, _CRITERIA[text]


def reply_truth(reply: str, criterion_id: str) -> bool:
    """Whether the reply truly meets the criterion."""
    return REPLY_MEANINGS[criterion_id].met(reply)


def reply_judge_answer(model: str, sample_index: int, response_format: str,
                       messages: list[dict[str, str]]) -> str:
    if response_format != "yes_no":
        raise OutsideTheWorld(f"the known-truth judge answers the reply rubric yes_no, not "
                              f"{response_format!r}")
    tpr, tnr = judge_rates(model)
    truth = reply_truth(*read_reply_prompt(messages))
    u = _unit([model, sample_index, messages, 0])
    judged = truth if u < (tpr if truth else tnr) else not truth
    return "Yes" if judged else "No"


# the known-truth models (rubriclab.known_truth) answer fake/known-agent and the reply rubric's
# prompts through this module, which they do not import (verify builds on them)
register_world("verify", agent_answer=agent_answer, is_reply_prompt=is_reply_prompt,
               reply_judge_answer=reply_judge_answer)
