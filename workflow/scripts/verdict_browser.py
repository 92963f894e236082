from pathlib import Path

import pandas as pd

from rubriclab import browser
from rubriclab.carry.judge_fig2 import read_checklist_json
from rubriclab.carry.sources import read_rubric_set
from rubriclab.llm import LLMConfig
from rubriclab.llm.ledger import read_ledgers
from rubriclab.llm.providers import provider_for
from rubriclab.llm.storage import open_cache
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params


def read(path):
    return pd.read_csv(path, keep_default_na=False)


tables, items = [], {}
for study, verdicts, checklists, item_tables, datasets in (
        ("carry fig2", inputs.fig2, inputs.fig2_checklists, inputs.fig2_items,
         params.fig2_datasets),
        ("verify", inputs.verify, inputs.verify_checklists, inputs.verify_items,
         params.verify_datasets)):
    for path, checklist_path, item_path, dataset in zip(verdicts, checklists, item_tables,
                                                         datasets, strict=True):
        browser.add_items(items, browser.item_texts(read(item_path), dataset, where=item_path),
                          item_path)
        checklist = read_checklist_json(checklist_path)
        tables.append(browser.fig2_rows(
            read(path), study, dataset, params.judge, {c.id: c.text for c in checklist.checks},
            checklist.name, where=path))
starts = {}
for path in inputs.carry_starts:
    header, rubrics = read_rubric_set(path)
    starts.setdefault(header["dataset"], {})[header["source"]] = {
        scope: [check.text for check in rubric.checks] for scope, rubric in rubrics.items()}
carry_items = dict(zip(params.carry_datasets, map(read, inputs.carry_items), strict=True))
for dataset, path in zip(params.carry_datasets, inputs.carry_items, strict=True):
    browser.add_items(items, browser.item_texts(carry_items[dataset], dataset, where=path), path)
for path, (dataset, judge) in zip(inputs.carry, params.carry, strict=True):
    tables.append(browser.carry_rows(read(path), dataset, judge, carry_items[dataset],
                                     starts.get(dataset, {}), where=path))
for path, responses, name in zip(inputs.transfer, inputs.transfer_responses, params.transfer,
                                 strict=True):
    tables.append(browser.transfer_rows(read(path), name, params.transfer_judge, where=path))
    browser.add_items(items, browser.item_texts(read(responses), "healthbench", ("text",),
                                                "response_id", where=responses), responses)
table = browser.disagreements(pd.concat(tables, ignore_index=True))
keys = browser.keys_of(table)
llm = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
with open_cache(llm, read_only=True) as cache:  # the run's cache: a SQLite file or a server
    texts, prompts = browser.cached_answers(keys, cache)
notes = browser.ledger_errors(read_ledgers(list(inputs.ledgers)), keys)
# A scripted model's answers are computed anew for free, so kept only where the config asks.
uncached = {judge: "(a fake model's answer: not cached unless llm.cache_fake_answers is true)"
            for judge in table["judge"].unique()
            if not provider_for(judge).durable and not llm.cache_fake_answers}
title = f"Verdicts of run {params.run}" if params.run else "Verdicts"
# The page names no folder of this machine: the cache by its kind and file name only, any
# path in a ledger's note relative to the run.
cache_name = "a PostgreSQL database" if llm.cache_url else llm.cache_path.name
judge = browser.display_name(params.judge, params.labels)
subtitle = (f"{len(table)} verdicts, {len(keys)} answers ({len(texts)} in the run's call cache, "
            f"{cache_name}); judge {judge}")
browser.write_page(snakemake.output[0], table, texts, notes, title, subtitle,
                   browser.machine_paths(Path.cwd(), llm.cache_dir), prompts=prompts,
                   items=items, labels=params.labels, uncached=uncached)
