from pathlib import Path

from rubriclab.data.prepare import prepare, write_prepared
from rubriclab.data.ragtruth import load_ragtruth
from rubriclab.data.summedits import load_summedits
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
loaders = {"summedits": load_summedits, "ragtruth": load_ragtruth}
settings = snakemake.params.settings
if settings["hub"]:
    from rubriclab.data.hub import load_items

    items = load_items(snakemake.wildcards.dataset, settings["hub"])
else:
    items = loaders[snakemake.wildcards.dataset]([Path(p) for p in snakemake.input])
prepared, left_out, manifest = prepare(
    items,
    seed=settings["seed"],
    evaluation=settings["evaluation"],
    calibration=settings["calibration"],
    max_task_chars=settings["max_task_chars"],
    domains=settings["domains"],
)
write_prepared(prepared, left_out, manifest, snakemake.output.table, snakemake.output.left_out,
               snakemake.output.manifest)
