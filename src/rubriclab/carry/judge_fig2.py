"""carry Figure 2: judge every evaluation item against nested generic checklists.

Checklists of length L are the first L checks of one ordered list, so with one call per check the
verdicts for the longest length serve every shorter one. The paragraph rendering is one call per
length. Requests are ordered item by item, per-check first, so that consecutive prompts share the
task and output as a prefix (llama.cpp reuses its key-value cache for it).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from rubriclab.llm import LLMClient, Request

from .aggregate import VERDICT_COLUMNS as AGGREGATE_VERDICT_COLUMNS
from .checklists import Check, Checklist
from .prompts import paragraph_messages, per_check_messages

# The fig2 verdict table of `aggregate`, and the cache key of each answer (the call cache holds
# its text: rubriclab.browser looks it up there, so the table keeps the key, never the text).
VERDICT_COLUMNS = [*AGGREGATE_VERDICT_COLUMNS, "cache_key"]


def write_checklist_json(checklist: Checklist, path: Path) -> None:
    payload = {
        "name": checklist.name,
        "task_description": checklist.task_description,
        "checks": [asdict(check) for check in checklist.checks],
    }
    Path(path).write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_checklist_json(path: Path) -> Checklist:
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        checks = tuple(Check(**check) for check in payload["checks"])
        return Checklist(name=payload["name"], checks=checks,
                         task_description=payload["task_description"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a checklist file ({exc})") from exc


def build_requests(items: pd.DataFrame, checklist: Checklist, lengths: list[int], runs: int,
                   judge: str, temperature: float, max_tokens: int) -> tuple[list[Request], list[dict]]:
    """Requests in judging order, and for each the verdict-row fields it will fill."""
    longest = max(lengths)
    checks = checklist.prefix(longest).checks
    requests: list[Request] = []
    rows: list[dict] = []
    common = dict(temperature=temperature, max_tokens=max_tokens, response_format="yes_no")
    for item in items.itertuples(index=False):
        for run in range(runs):
            for position, check in enumerate(checks, start=1):
                messages = per_check_messages(item.task, item.output, check,
                                              checklist.task_description)
                requests.append(Request.chat(judge, messages, sample_index=run, **common))
                rows.append(dict(item_id=item.item_id, label=item.label, run=run,
                                 rendering="per_check", length=position, check_id=check.id))
            for length in sorted(lengths):
                messages = paragraph_messages(item.task, item.output, checklist.prefix(length))
                requests.append(Request.chat(judge, messages, sample_index=run, **common))
                rows.append(dict(item_id=item.item_id, label=item.label, run=run,
                                 rendering="paragraph", length=length, check_id=""))
    return requests, rows


def judge_items(client: LLMClient, items: pd.DataFrame, checklist: Checklist, lengths: list[int],
                runs: int, judge: str, temperature: float, max_tokens: int,
                label: str) -> pd.DataFrame:
    """One verdict row per request: "yes", "no" or "unparseable" (never guessed), with the
    cache key of the answer."""
    requests, rows = build_requests(items, checklist, lengths, runs, judge, temperature, max_tokens)
    completions = client.run(requests, label=label)
    for row, completion in zip(rows, completions, strict=True):
        row["verdict"] = completion.parsed if completion.outcome == "ok" else "unparseable"
        row["cache_key"] = completion.key
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)
