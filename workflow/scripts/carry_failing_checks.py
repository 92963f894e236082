import json
from pathlib import Path

import pandas as pd

from rubriclab.carry.analysis import (
    Chain, final_rubric_set, failing_rows, pick_chain, recon_item_name, short_item_name,
)
from rubriclab.carry.experiment import Verdicts, read_items
from rubriclab.carry.sources import read_rubric_set
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params


def chains(paths):
    records = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    return [Chain(record["source"], record) for record in records]


def starts(paths):
    return {header["source"]: rubrics for header, rubrics in map(read_rubric_set, paths)}


after = f"After review by {params.reviser}"
recon_items, ragtruth_items = (read_items(path) for path in inputs.carry_items)
recon_verdicts, ragtruth_verdicts = (
    Verdicts(pd.read_csv(path, keep_default_na=False)) for path in inputs.verdicts)

environment = recon_items[recon_items["in_recon72"] & (recon_items["scope"] == params.environment)]
if environment.empty:
    raise ValueError(f"config key 'carry.recon.table4_environment': {params.environment!r} is not "
                     "among the judged Recon environments (carry.recon.environments)")
recon_starts = starts(inputs.recon_starts)
recon_versions = {
    "Hand-written": recon_starts["hand"],
    "Label-taught": recon_starts["label"],
    after: final_rubric_set(pick_chain(chains(inputs.recon_chain),
                                       [("hand", "free"), ("hand", "fixed_count"),
                                        ("hand", "delete_only")])),
}
rows = failing_rows("recon", environment, recon_verdicts, recon_versions,
                    {i: recon_item_name(i) for i in environment["item_id"]})

evaluation = ragtruth_items[ragtruth_items["split"] == "evaluation"]
examples = pd.concat([evaluation[evaluation["label"] == label].head(2)
                      for label in ("correct", "flawed")])
ragtruth_starts = starts(inputs.ragtruth_starts)
ragtruth_versions = {
    "Generated": ragtruth_starts["generated"],
    "Label-taught": ragtruth_starts["label"],
    after: final_rubric_set(pick_chain(chains(inputs.ragtruth_chain),
                                       [("label", "free"), ("label", "fixed_count"),
                                        ("label", "delete_only"), ("generated", "free")])),
}
rows += failing_rows("ragtruth", examples, ragtruth_verdicts, ragtruth_versions,
                     {i: short_item_name(i) for i in examples["item_id"]})
pd.DataFrame(rows).to_csv(snakemake.output[0], index=False)
