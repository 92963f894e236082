import pandas as pd

from rubriclab import browser
from rubriclab.carry.judge_fig2 import read_checklist_json
from rubriclab.carry.sources import read_rubric_set
from rubriclab.llm import LLMConfig
from rubriclab.llm.storage import open_cache
from rubriclab.llm.ledger import read_ledgers
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params


def read(path):
    return pd.read_csv(path, keep_default_na=False)


tables = []
for study, verdicts, checklists, datasets in (
        ("carry fig2", inputs.fig2, inputs.fig2_checklists, params.fig2_datasets),
        ("verify", inputs.verify, inputs.verify_checklists, params.verify_datasets)):
    for path, checklist_path, dataset in zip(verdicts, checklists, datasets, strict=True):
        checklist = read_checklist_json(checklist_path)
        tables.append(browser.fig2_rows(
            read(path), study, dataset, params.judge, {c.id: c.text for c in checklist.checks},
            checklist.name, where=path))
starts = {}
for path in inputs.carry_starts:
    header, rubrics = read_rubric_set(path)
    starts.setdefault(header["dataset"], {})[header["source"]] = {
        scope: [check.text for check in rubric.checks] for scope, rubric in rubrics.items()}
items = dict(zip(params.carry_datasets, map(read, inputs.carry_items), strict=True))
for path, (dataset, judge) in zip(inputs.carry, params.carry, strict=True):
    tables.append(browser.carry_rows(read(path), dataset, judge, items[dataset],
                                     starts.get(dataset, {}), where=path))
for path, name in zip(inputs.transfer, params.transfer, strict=True):
    tables.append(browser.transfer_rows(read(path), name, params.transfer_judge, where=path))
table = browser.disagreements(pd.concat(tables, ignore_index=True))
keys = browser.keys_of(table)
llm = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
with open_cache(llm, read_only=True) as cache:  # the run's cache: a SQLite file or a server
    texts = browser.answer_texts(keys, cache)
notes = browser.ledger_errors(read_ledgers(list(inputs.ledgers)), keys)
title = f"Verdicts of run {params.run}" if params.run else "Verdicts"
subtitle = (f"{len(table)} verdicts, {len(keys)} answers ({len(texts)} in the call cache at "
            f"{llm.cache_location}); judge {params.judge}")
browser.write_page(snakemake.output[0], table, texts, notes, title, subtitle)
