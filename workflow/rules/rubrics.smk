# Rubrics as data: every check with its id, text and origin.


rule generic_checklist:
    input:
        local(GENERIC_CHECKLISTS),
    output:
        "results/carry/rubrics/generic/{dataset}.json",
    log:
        "logs/generic_checklist/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../scripts/generic_checklist.py"


# A checklist of your own (datasets.<name>.checklist): its checks, ids and order as written.
rule own_checklist:
    input:
        lambda wc: own_path(wc.dataset, "checklist"),
    output:
        "results/carry/rubrics/own/{dataset}.json",
    log:
        "logs/own_checklist/{dataset}.log",
    wildcard_constraints:
        dataset=one_of(OWN_DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../scripts/own_checklist.py"
