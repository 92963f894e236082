import os

from snakemake.utils import min_version

min_version("9.0")


# A config stands alone: `--configfile X` means X over the schema's defaults
# (workflow/schemas/config.schema.yaml), never over the embedded default below, which is read
# only when no --configfile is given. --config KEY=VALUE applies on top of either.
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


# One embedded model per machine and one pool of open API connections per machine, on a
# cluster as on one machine: each cluster job (or group job) counts them for itself, the
# scheduler on the submitting host does not add them up across nodes (docs/cluster.md).
resource_scopes:
    local_llm="local",
    api_calls="local",


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/recon.smk"
include: "workflow/rules/rubrics.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/carry.smk"
include: "workflow/rules/transfer.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/verify.smk"


# Run on the submitting host, never shipped to a cluster node: the download (nodes often have
# no internet), the config record, and the figures, tables and collections, each seconds of
# pandas or matplotlib over small tables (docs/cluster.md). Every rule writing under figures/
# that calls no model must be here (tests/test_cluster.py derives the list from the rules).
localrules:
    all,
    fetch_raw,
    effective_config,
    data_summary,
    own_data,
    carry_collect,
    carry_checklist_attribution,
    carry_fig2_rates,
    carry_fig2_plot,
    carry_figure,
    carry_gate_agreement,
    carry_table,
    carry_table1,
    cost_report,
    replication,
    transfer_figure,
    transfer_table,
    verdict_browser,
    verify_calibration,


rule all:
    default_target: True
    input:
        all_targets(),
