import pandas as pd

from rubriclab.carry.experiment import labelled_items, recon_items
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
if snakemake.wildcards.cdataset == "recon":
    reports = pd.read_csv(snakemake.input.reports, keep_default_na=False)
    recon72 = pd.read_csv(snakemake.input.recon72, keep_default_na=False)
    environments = snakemake.params.environments or sorted(set(reports["environment"]))
    items = recon_items(reports, recon72["item_id"], environments)
else:
    items = labelled_items(pd.read_csv(snakemake.input.table, keep_default_na=False))
items.to_csv(snakemake.output[0], index=False)
