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
        dataset="|".join(DATASETS),
    script:
        "../scripts/fetch_raw.py"


rule prepare_dataset:
    input:
        lambda wc: expand("data/raw/{dataset}/{filename}", dataset=wc.dataset, filename=raw_files(wc.dataset)),
    output:
        table="data/prepared/{dataset}.csv",
        left_out="data/prepared/{dataset}_left_out.csv",
        manifest="data/prepared/{dataset}_manifest.json",
    params:
        settings=lambda wc: config["datasets"][wc.dataset],
    log:
        "logs/prepare_dataset/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASETS),
    script:
        "../scripts/prepare_dataset.py"
