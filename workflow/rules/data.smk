# Raw files byte for byte from their original public source (or a local mirror), then prepared
# tables with calibration and evaluation splits and a manifest of what was left out and why.


# Where a file comes from (its public URL or a mirror) is not a param: the bytes are verified
# against the same sha256 either way, so switching sources reruns nothing.
rule fetch_raw:
    output:
        "data/raw/{dataset}/{filename}",
    log:
        "logs/fetch_raw/{dataset}/{filename}.log",
    wildcard_constraints:
        dataset="|".join(RAW_DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../scripts/fetch_raw.py"


rule prepare_dataset:
    input:
        lambda wc: expand(
            "data/raw/{dataset}/{filename}",
            dataset=wc.dataset,
            filename=raw_files(wc.dataset),
        ),
    output:
        table="data/prepared/{dataset}.csv",
        left_out="data/prepared/{dataset}_left_out.csv",
        manifest="data/prepared/{dataset}_manifest.json",
    log:
        "logs/prepare_dataset/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        settings=lambda wc: config["datasets"][wc.dataset],
    script:
        "../scripts/prepare_dataset.py"


# A dataset of your own (docs/own_data.md): rows from its file (or the Hub), columns mapped.
rule prepare_own_dataset:
    input:
        own_files,
    output:
        table="data/prepared/{dataset}.csv",
        left_out="data/prepared/{dataset}_left_out.csv",
        manifest="data/prepared/{dataset}_manifest.json",
    log:
        "logs/prepare_dataset/{dataset}.log",
    wildcard_constraints:
        dataset=one_of(OWN_DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        settings=lambda wc: config["datasets"][wc.dataset],
    script:
        "../scripts/prepare_own_dataset.py"


rule prepare_healthbench:
    input:
        item_files=healthbench_files("item_files"),
        hard=healthbench_files("hard_files"),
        top_up=healthbench_files("top_up_files"),
    output:
        table="data/prepared/healthbench.csv",
        left_out="data/prepared/healthbench_left_out.csv",
        manifest="data/prepared/healthbench_manifest.json",
    log:
        "logs/prepare_healthbench.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        settings={
            k: v
            for k, v in config["datasets"]["healthbench"].items()
            if not k.endswith("_files")
        },
    script:
        "../scripts/prepare_healthbench.py"


rule data_summary:
    input:
        **{
            f"{name}_table": f"data/prepared/{name}.csv"
            for name in DATASETS + ["healthbench"]
        },
        **{
            f"{name}_left_out": f"data/prepared/{name}_left_out.csv"
            for name in DATASETS + ["healthbench"]
        },
        recon72="data/prepared/recon/reports_recon72.csv",
        recon108="data/prepared/recon/reports_recon108.csv",
    output:
        report_item(
            "figures/data_summary.md", "data_summary.rst", "data", "Prepared data"
        ),
    log:
        "logs/data_summary.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../scripts/data_summary.py"


# The config this run uses, as validated and completed from the schema's defaults: what
# `--configfile` (or the embedded default) and `--config` amount to, written down.
rule effective_config:
    output:
        "results/effective_config.yaml",
    log:
        "logs/effective_config.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        config=config,
    script:
        "../scripts/effective_config.py"
