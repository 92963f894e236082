import json
from pathlib import Path

from rubriclab.config import config_digest
from rubriclab.labels import ModelLabels
from rubriclab.llm import LLMConfig
from rubriclab.llm.bill import cost_report
from rubriclab.plan.compare import bill_markdown, read_plan
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
labels = ModelLabels(snakemake.params.labels, stand_ins=snakemake.params.stand_ins)
# With a PostgreSQL cache, every paid call of every host is in its database: billed from there
# (and the journals), the stages known by their ledgers' paths under this host's folder of
# local copies of the store (params.local_storage).
cache_url = LLMConfig.from_dict(snakemake.config["llm"],
                                cache_dir=snakemake.config["cache_dir"]).cache_url
# Answers of fake models are not cached unless the config asks: their repeats are no payment.
ledger, markdown = cost_report([Path(p) for p in snakemake.input.ledgers], cache_url,
                               snakemake.params.local_storage,
                               skip_fake=not snakemake.config["llm"]["cache_fake_answers"],
                               labels=labels)
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
    markdown + "\n" + bill_markdown(plan, ledger, plan_note=note, labels=labels), encoding="utf-8")
