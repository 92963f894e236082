from rubriclab.data.own import load_own
from rubriclab.data.prepare import prepare, write_prepared
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
dataset, settings = snakemake.wildcards.dataset, snakemake.params.settings
# the file as the rule resolved it (relative paths are the launching directory's)
source = {**settings, "file": snakemake.input[0] if settings["file"] else None}
items = load_own(dataset, source, key=f"datasets.{dataset}")
prepared, left_out, manifest = prepare(
    items,
    seed=settings["seed"],
    evaluation=settings["evaluation"],
    calibration=settings["calibration"],
    max_task_chars=settings["max_task_chars"],
)
write_prepared(prepared, left_out, manifest, snakemake.output.table, snakemake.output.left_out,
               snakemake.output.manifest)
