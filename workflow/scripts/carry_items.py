import pandas as pd

from rubriclab.carry.experiment import labelled_items, recon_items, teaching_pool
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
if snakemake.wildcards.cdataset == "recon":
    reports = pd.read_csv(snakemake.input.reports, keep_default_na=False)
    recon72 = pd.read_csv(snakemake.input.recon72, keep_default_na=False)
    every = sorted(set(reports["environment"]))
    items = recon_items(reports, recon72["item_id"], snakemake.params.environments or every)
    pool = teaching_pool(recon_items(reports, recon72["item_id"], every), "recon")
else:
    items = labelled_items(pd.read_csv(snakemake.input.table, keep_default_na=False))
    pool = teaching_pool(items, snakemake.wildcards.cdataset)
items.to_csv(snakemake.output.table, index=False)
pool.to_csv(snakemake.output.teaching, index=False)
