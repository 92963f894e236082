# Rubrics as data: every check with its id, text and origin.


rule generic_checklist:
    input:
        GENERIC_CHECKLISTS,
    output:
        "results/carry/rubrics/generic/{dataset}.json",
    log:
        "logs/generic_checklist/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    script:
        "../scripts/generic_checklist.py"
