import json

from rubriclab.llm.backends import prompt_cache_tokens
from rubriclab.llm.ledger import cost_report_markdown, read_ledgers, summarize


def test_prompt_cache_tokens_read_anthropic_and_openai_usage():
    assert prompt_cache_tokens({"prompt_tokens": 9, "cache_read_input_tokens": 4,
                                "cache_creation_input_tokens": 3}) == (4, 3)
    assert prompt_cache_tokens({"prompt_tokens": 9,
                                "prompt_tokens_details": {"cached_tokens": 5}}) == (5, 0)
    assert prompt_cache_tokens({"prompt_tokens": 9}) == (0, 0)
    assert prompt_cache_tokens(None) == (0, 0)


def test_ledgers_without_the_batch_and_cache_columns_read_as_none_of_either(tmp_path):
    old = {"rule": "r", "model": "m", "key": "k1", "cached": False, "outcome": "ok",
           "prompt_tokens": 10, "completion_tokens": 1, "cost_usd": 0.5, "latency_s": 0,
           "attempts": 1, "reasks": 0, "error": ""}
    new = dict(old, key="k2", batch=True, cache_read_tokens=6, cache_write_tokens=2)
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    ledger = read_ledgers([path])
    assert ledger["batch"].tolist() == [False, True]
    assert ledger["repeat_prompt_tokens"].tolist() == [0, 0]
    summary = summarize(ledger)
    row = summary.iloc[0]
    assert (row.batch_calls, row.cache_read_tokens, row.cache_write_tokens) == (1, 6, 2)
    assert "| 1 | 6 / 2 |" in cost_report_markdown(summary)
