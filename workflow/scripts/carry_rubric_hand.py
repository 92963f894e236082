import pandas as pd

from rubriclab.carry.sources import hand_rubrics, write_rubric_set
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
items = pd.read_csv(snakemake.input.carry_items, keep_default_na=False)
table = pd.read_csv(snakemake.input.hand, keep_default_na=False)
rubrics = hand_rubrics(table, sorted(set(items["scope"])))
write_rubric_set(snakemake.output[0], "recon", "hand", rubrics)
