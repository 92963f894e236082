"""carry Figure 2's judging job keeps, beside each verdict, the cache key of the answer it read."""

import pandas as pd

from rubriclab.carry.checklists import Check, Checklist
from rubriclab.carry.judge_fig2 import VERDICT_COLUMNS, build_requests, judge_items
from rubriclab.llm import LLMClient, LLMConfig
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.formats import parse_yes_no

CHECKLIST = Checklist("generic", [Check(f"c{i}", f"Check {i} holds.", "generic") for i in range(3)],
                      "a summary")
ITEMS = pd.DataFrame([dict(item_id="a", task="Doc a.", output="Sum a.", label="correct"),
                      dict(item_id="b", task="Doc b.", output="Sum b.", label="flawed")])


def test_each_verdict_row_has_the_cache_key_of_its_answer(tmp_path):
    config = LLMConfig(cache_dir=tmp_path)
    with LLMClient(config) as client:
        verdicts = judge_items(client, ITEMS, CHECKLIST, lengths=[2, 3], runs=2,
                               judge="fake/hash", temperature=0.0, max_tokens=4, label="t")
        requests, _ = build_requests(ITEMS, CHECKLIST, [2, 3], 2, "fake/hash", 0.0, 4)
        expected = [client.key_for(client.prepare(request)) for request in requests]
    assert list(verdicts.columns) == VERDICT_COLUMNS and VERDICT_COLUMNS[-1] == "cache_key"
    # 2 items x 2 runs x (3 checks + 2 paragraph lengths), one key per request, all distinct
    assert verdicts["cache_key"].tolist() == expected and len(set(expected)) == 20
    with SQLiteCache.read_only(config.cache_path) as cache:
        for row in verdicts.itertuples(index=False):
            assert parse_yes_no(cache.get(row.cache_key).text) == row.verdict
