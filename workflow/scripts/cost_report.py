import json
from pathlib import Path

from rubriclab.config import config_digest
from rubriclab.llm.ledger import (calls_per_distinct_request, cost_report_markdown,
                                  read_earlier_attempts, read_ledgers, summarize)
from rubriclab.plan.compare import bill_markdown, read_plan
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
paths = [Path(p) for p in snakemake.input.ledgers]
ledger, attempts = read_ledgers(paths), read_earlier_attempts(paths)
# Answers of fake models are not cached unless the config asks: their repeats are no payment.
skip_fake = not snakemake.config["llm"]["cache_fake_answers"]
markdown = cost_report_markdown(summarize(ledger, attempts),
                                calls_per_distinct_request(ledger, attempts, skip_fake),
                                fake_skipped=skip_fake)
plan, note = None, ""
if snakemake.input.plan:
    planned_for = json.loads(Path(snakemake.input.plan_digest[0]).read_text())["config_digest"]
    if planned_for == config_digest(snakemake.config):
        plan = read_plan(Path(snakemake.input.plan[0]))
        note = f"From results/plan/plan.csv, made by `rubriclab plan` for this config ({planned_for})."
    else:
        note = (f"results/plan/plan.csv was made for another config ({planned_for}, this run's is "
                f"{config_digest(snakemake.config)}): run `rubriclab plan` again to compare.")
Path(snakemake.output[0]).write_text(
    markdown + "\n" + bill_markdown(plan, ledger, plan_note=note), encoding="utf-8")
