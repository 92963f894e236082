"""config/pilot.yaml (after config/paper.yaml): every model of the paper run, at a plan whose high
total is at most $10, under a $10 budget."""

from __future__ import annotations

import yaml

from rubriclab.plan import build_plan
from rubriclab.rehearsal.run import merged_config, model_strings

PILOT_HIGH_USD = 10.0


def test_the_pilot_plans_every_paper_model_at_most_ten_dollars_at_its_high_total(
        repo, shared_data, tmp_path):
    paper, pilot = repo / "config" / "paper.yaml", repo / "config" / "pilot.yaml"
    assert yaml.safe_load(pilot.read_text(encoding="utf-8"))["llm"]["budget_usd"] <= PILOT_HIGH_USD
    table, markdown, _ = build_plan(repo / "Snakefile", tmp_path, [paper, pilot],
                                    [f"data_mirror={shared_data}"], cores=2)
    paid = table[table["to_pay"] > 0]
    high = paid["configured_cost_high_usd"]
    assert high.notna().all(), paid.loc[high.isna(), "model"].unique()
    assert 0 < high.sum() <= PILOT_HIGH_USD, markdown
    # every model the paper run pays for is called by the pilot
    assert set(paid["model"]) == set(model_strings(merged_config([paper])))
    assert set(paid.loc[paid["pricing"] == "batch", "model"]) >= {
        "anthropic/claude-opus-5", "gemini/gemini-3.8-flash", "openai/gpt-5.6-terra"}
