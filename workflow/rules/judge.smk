# Judge calls. Everything that changes an answer is a param, so swapping the judge in config
# reruns exactly these jobs; settings that cannot change an answer (timeouts, retries) are not.
rule carry_fig2_judge:
    input:
        table="data/prepared/{dataset}.csv",
        checklist=fig2_checklist,
    output:
        verdicts="results/carry/fig2/{dataset}/verdicts.csv",
        ledger="results/ledger/carry_fig2_judge-{dataset}.jsonl",
    log:
        "logs/carry_fig2_judge/{dataset}.log",
    benchmark:
        "results/benchmarks/carry_fig2_judge/{dataset}.tsv"
    wildcard_constraints:
        dataset=one_of(DATASETS + OWN_DATASETS),
    # Before verify_judge_labels, which then finds these items' calls in the cache.
    priority: 10
    # Small judge jobs: bundled into one cluster job (profiles' group-components).
    group:
        judge_group
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(JUDGE, "judge"),
    params:
        judge=JUDGE,
        calls=call_settings("judge", JUDGE),
        runs=config["carry"]["fig2"]["runs"],
        lengths=config["carry"]["fig2"]["lengths"],
        temperature=config["carry"]["fig2"]["temperature"],
        max_tokens=config["carry"]["fig2"]["max_tokens"],
        prompt_template=judge_prompt_fingerprint(),
    script:
        "../scripts/carry_fig2_judge.py"
