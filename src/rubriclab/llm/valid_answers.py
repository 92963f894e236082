"""A valid answer in each response format, chosen by a digest of the request: what `fake/hash`
(rubriclab.llm.fake) and the stand-in answers (rubriclab.llm.standins) give, valid by
construction: the structured formats of carry, verify's agent and transfer's formats."""

from __future__ import annotations

import json
import re

_LISTED_CHECK = re.compile(r"^\[([^\]]+)\] ", re.MULTILINE)


def structured_answer(response_format: str, messages: list[dict[str, str]],
                      digest: str) -> str | None:
    """A valid answer in the structured formats, chosen by the digest; None for free text."""
    bits = int(digest, 16)
    if response_format == "scale_1_10":
        return str(1 + bits % 10)
    if response_format.startswith("verdict_list_"):
        n = int(response_format.rsplit("_", 1)[1])
        return json.dumps({"verdicts": ["yes" if (bits >> k) & 1 else "no" for k in range(n)]})
    if response_format.startswith("rubric_checks"):
        limit = int(response_format.rsplit("_", 1)[1]) if response_format[-1].isdigit() else 20
        n = min(limit, 3 + bits % 4)
        return json.dumps({"checks": [f"The output meets fake requirement {digest[k * 4:k * 4 + 4]}."
                                      for k in range(n)]})
    if response_format.startswith("rubric_revision"):
        return _fake_revision(messages[-1]["content"], digest)
    if response_format == "agent_action":
        return agent_action(messages, bits)
    return _transfer_answer(response_format, messages[-1]["content"], digest, bits)


_NUMBERED_LINE = re.compile(r"^(\d+)\. ", re.MULTILINE)
_TRUE_LABEL = re.compile(r"^T(\d+): ", re.MULTILINE)


def _transfer_answer(response_format: str, prompt: str, digest: str, bits: int) -> str | None:
    """Valid answers in the transfer work's formats (rubriclab.transfer.formats)."""
    if response_format == "transfer_rubric":
        return json.dumps([f"The response meets fake criterion {digest[k * 4:k * 4 + 4]}."
                           for k in range(3 + bits % 3)])
    if response_format == "transfer_similarity":
        return str(bits % 10)
    if response_format == "transfer_restated":
        return json.dumps({number: f"The response avoids fake problem {number}."
                           for number in _NUMBERED_LINE.findall(prompt)})
    if response_format.startswith("transfer_scores_"):
        n = int(response_format.rsplit("_", 1)[1])
        return json.dumps({str(k): (bits >> k) & 1 for k in range(n)})
    if response_format.startswith("transfer_match_"):
        n = int(response_format.rsplit("_", 1)[1])
        labels = [f"T{j}" for j in _TRUE_LABEL.findall(prompt)]
        return json.dumps({"indices": {f"G{i}": [t for k, t in enumerate(labels)
                                                  if (bits >> (i * 7 + k)) % 3 == 0]
                                       for i in range(n)}})
    if response_format == "transfer_response":
        return f"Fake response {digest[:8]}: " + " ".join(digest[k:k + 5] for k in range(0, 40, 5))
    return None


def _fake_revision(prompt: str, digest: str) -> str:
    """Keep, delete, edit or add, as the revision prompt's mode sentence allows."""
    ids = _LISTED_CHECK.findall(prompt)
    delete_only = "You may only keep or delete" in prompt
    fixed_count = "must keep exactly" in prompt
    entries: list[dict[str, str]] = []
    for k, check_id in enumerate(ids):
        choice = int(digest[k % 60:k % 60 + 2], 16) % 4
        deleted = sum(e["action"] == "delete" for e in entries)
        if choice == 1 and len(ids) > 1 and k > 0 and deleted < 5:
            entries.append({"id": check_id, "action": "delete"})
        elif choice == 2 and not delete_only:
            entries.append({"id": check_id, "action": "edit",
                            "text": f"The output meets revised requirement {digest[k:k + 6]}."})
        else:
            entries.append({"id": check_id, "action": "keep"})
    deletes = sum(e["action"] == "delete" for e in entries)
    adds = deletes if fixed_count else (0 if delete_only else int(digest[-1], 16) % 3)
    entries += [{"action": "add", "text": f"The output meets added requirement {digest[-6 - k:len(digest) - k]}."}
                for k in range(adds)]
    return json.dumps({"checks": entries})


_ORDER_ID = re.compile(r"order (\d+)", re.IGNORECASE)
_AMOUNT = re.compile(r'"amount_usd": "?([0-9.]+)')


def agent_action(messages: list[dict[str, str]], bits: int) -> str:
    """Look the order up; then, in two trials of three, refund its amount; reply; finish. A
    short valid trial that the verifier passes or fails, so both branches of verify run."""
    turns = sum(m["role"] == "assistant" for m in messages)
    text = " ".join(m["content"] for m in messages)
    found = _ORDER_ID.search(text)
    order_id = int(found.group(1)) if found else 1
    refunds = bits % 3 != 0
    if turns == 0:
        return json.dumps({"tool": "lookup_order", "args": {"order_id": order_id}})
    if turns == 1 and refunds:
        amount = _AMOUNT.search(text)
        return json.dumps({"tool": "issue_refund", "args": {
            "order_id": order_id, "amount": float(amount.group(1)) if amount else 1.0}})
    if turns <= 2:
        return json.dumps({"tool": "reply", "args": {
            "text": "We are sorry the lamp arrived damaged; a full refund is on its way.",
            "resolve": True}})
    return json.dumps({"tool": "finish"})
