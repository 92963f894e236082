"""The reply rubric of the refund example: the support lead's four binary criteria, the judge
prompt for each, and the all-must-pass grade of one reply (`grade_reply`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rubriclab.llm.request import Request

from .refund import POLICY, TICKET


@dataclass(frozen=True)
class Criterion:
    id: str
    text: str


# The support lead's four binary criteria, in the post's order.
RUBRIC_CRITERIA = (
    Criterion("amount_issued",
              "The reply states the amount refunded and that the refund has been issued."),
    Criterion("when_to_expect",
              "The reply says when to expect the refund: in five to seven business days, "
              "as the policy says."),
    Criterion("within_policy", "The reply promises nothing outside the policy."),
    Criterion("no_redundant_ask",
              "The reply does not ask the customer for information that is already in the "
              "ticket, such as the photos."),
)

RUBRIC_SYSTEM_PROMPT = (
    "You are a careful grader of customer support replies. You are shown the store's policy, "
    "the customer's ticket, the reply the agent sent, and one criterion. Decide whether the "
    "reply meets the criterion, judging the reply against the ticket and the policy."
)
RUBRIC_ANSWER_INSTRUCTION = "Answer with exactly one word: Yes or No."


def rubric_messages(reply: str, ticket: str, policy: str,
                    criterion: Criterion | str) -> list[dict[str, str]]:
    """The judge prompt for one criterion: policy, ticket and reply first (shared by all four
    criteria, so the embedded model reuses its key-value cache), the criterion last."""
    text = criterion.text if isinstance(criterion, Criterion) else criterion
    user = (
        f"Policy:\n{policy}\n\n"
        f"Ticket:\n{ticket}\n\n"
        f"Reply sent to the customer:\n{reply}\n\n"
        f"Does the reply meet the criterion below? {RUBRIC_ANSWER_INSTRUCTION}\n\n"
        f"Criterion:\n{text}"
    )
    return [{"role": "system", "content": RUBRIC_SYSTEM_PROMPT},
            {"role": "user", "content": user}]


@dataclass(frozen=True)
class ReplyGrade:
    """Per-criterion verdicts ("yes", "no", or None when unparseable/failed). All must pass:
    `passed` is False if any criterion is "no" (whatever the others say), True if all four are
    "yes", and None (undetermined) when no criterion failed but one has no verdict."""

    verdicts: dict[str, str | None]

    @property
    def passed(self) -> bool | None:
        values = list(self.verdicts.values())
        if any(v == "no" for v in values):
            return False
        if any(v is None for v in values):
            return None
        return True


def grade_reply(client: Any, judge_model: str, reply: str, *, ticket: str = TICKET,
                policy: str = POLICY, criteria: Sequence[Criterion] = RUBRIC_CRITERIA,
                sample_index: int = 0, max_tokens: int = 4) -> ReplyGrade:
    """Judge one reply on every criterion (one yes/no request each, in criterion order)."""
    requests = [Request.chat(judge_model, rubric_messages(reply, ticket, policy, c),
                             temperature=0.0, max_tokens=max_tokens, response_format="yes_no",
                             sample_index=sample_index) for c in criteria]
    completions = client.run(requests, label="refund reply rubric")
    return ReplyGrade({c.id: (comp.parsed if comp.outcome == "ok" else None)
                       for c, comp in zip(criteria, completions)})
