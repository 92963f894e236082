import os

from snakemake.utils import min_version

min_version("9.0")


# A config stands alone: `--configfile X` means X over the schema's defaults
# (workflow/schemas/config.schema.yaml), never over the embedded default below, which is read
# only when no --configfile is given. --config KEY=VALUE applies on top of either.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/recon.smk"
include: "workflow/rules/rubrics.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/carry.smk"
include: "workflow/rules/transfer.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/verify.smk"


rule all:
    default_target: True
    input:
        all_targets(),
