import pandas as pd

from rubriclab.data.healthbench import load_hard_ids, load_healthbench, load_srh_partial, sample_by_theme
from rubriclab.data.prepare import write_prepared
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
settings = snakemake.params.settings
if settings["hub"]:
    from rubriclab.data.hub import load_items

    items = load_items("healthbench", settings["hub"])
else:
    items = load_healthbench(snakemake.input.item_files)
top_up = pd.concat([load_srh_partial(p) for p in snakemake.input.top_up]) if snakemake.input.top_up else None
sample, left_out, manifest = sample_by_theme(
    items,
    per_theme=settings["per_theme"],
    seed=settings["seed"],
    exclude_ids=load_hard_ids(snakemake.input.hard) if snakemake.input.hard else set(),
    themes=settings["themes"],
    short_theme=settings["short_theme"],
    top_up=top_up,
)
write_prepared(sample, left_out, manifest, snakemake.output.table, snakemake.output.left_out,
               snakemake.output.manifest)
