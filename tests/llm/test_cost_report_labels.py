"""The cost report names each model by its display name, the exact model string billed beside
it (issue 38)."""

import json

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.llm.ledger import cost_report_markdown, read_ledgers, summarize
from rubriclab.plan.compare import bill_markdown

OPUS = "anthropic/claude-opus-5"
SALTED = "fake/hash?salt=haiku"


def _ledger(tmp_path):
    path = tmp_path / "a.jsonl"
    rows = [{"rule": f"carry_judge[recon/{SALTED}]", "model": SALTED, "key": "k1",
             "cached": False, "outcome": "ok", "prompt_tokens": 3, "completion_tokens": 1,
             "cost_usd": 0.0, "attempts": 1},
            {"rule": "carry_chain", "model": OPUS, "key": "k2", "cached": True,
             "outcome": "ok", "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
             "attempts": 0}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return read_ledgers([path])


def test_the_model_column_shows_the_label_and_the_model_string_stays_beside_it(tmp_path):
    ledger = _ledger(tmp_path)
    labels = ModelLabels({OPUS: "Claude Opus 5"}, stand_ins={SALTED: "Claude Haiku 4.5"})
    markdown = cost_report_markdown(summarize(ledger), labels=labels)
    assert "| rule | model | model string | requests |" in markdown
    assert f"| carry_chain | Claude Opus 5 | `{OPUS}` | 1 | 1 |" in markdown
    # the job's name holds a model: named by its label there too
    assert (f"| carry_judge[recon/fake/hash (haiku) (stand-in for Claude Haiku 4.5)] | "
            f"fake/hash (haiku) (stand-in for Claude Haiku 4.5) | `{SALTED}` | 1 |") in markdown
    outside = markdown.replace(f"| `{OPUS}` |", "").replace(f"| `{SALTED}` |", "")
    assert OPUS not in outside and SALTED not in outside
    assert "| **total** | | | 2 | 1 |" in markdown


def test_the_bill_against_the_plan_has_the_same_columns(tmp_path):
    ledger = _ledger(tmp_path)
    plan = pd.DataFrame([{"rule": "carry_chain", "label": "carry_chain", "model": OPUS,
                          "basis": "exact", "requests": 1, "prompt_tokens": 0, "to_pay": 0,
                          "cost_usd": 0.0, "configured_cost_usd": 0.0}])
    markdown = bill_markdown(plan, ledger, labels=ModelLabels({OPUS: "Claude Opus 5"}))
    assert "| rule | model | model string | planned requests |" in markdown
    assert f"| carry_chain | Claude Opus 5 | `{OPUS}` | 1 | 1 |" in markdown
