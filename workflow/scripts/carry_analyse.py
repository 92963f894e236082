import json
from pathlib import Path

import pandas as pd

from rubriclab.carry.analysis import Chain, Setting, analyse
from rubriclab.carry.experiment import Verdicts, read_items
from rubriclab.carry.sources import read_rubric_set
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
items = read_items(snakemake.input.carry_items)
verdicts = Verdicts(pd.read_csv(snakemake.input.verdicts, keep_default_na=False))
starts = {header["source"]: rubrics for header, rubrics in
          (read_rubric_set(path) for path in snakemake.input.starts)}
chains = []
for path in snakemake.input.chains:
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    chains.append(Chain(record["source"], record))
setting = Setting(dataset=wildcards.cdataset, judge=params.judge, gates=params.gates,
                  renderings=params.renderings, B=params.bootstrap["B"],
                  seed=params.bootstrap["seed"])
tables = analyse(setting, items, verdicts, starts, chains)
for name, table in tables.items():
    table.to_csv(snakemake.output[name], index=False, na_rep="NaN")
