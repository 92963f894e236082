# verify: the refund worked example (agent trials, verifier, reply rubric) and judge calibration
# with the Rogan-Gladen corrected pass rate.


rule verify_agent_trials:
    output:
        trials="results/verify/trials.csv",
        ledger="results/ledger/verify_agent_trials.jsonl",
    log:
        "logs/verify_agent_trials.log",
    benchmark:
        "results/benchmarks/verify_agent_trials.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(AGENT, "agent"),
    params:
        calls=call_settings("agent", AGENT),
        agent=AGENT,
        trials=config["verify"]["trials"],
        max_steps=config["verify"]["max_steps"],
        temperature=config["verify"]["agent_temperature"],
        max_tokens=config["verify"]["agent_max_tokens"],
        code=verify_code_fingerprint(),
    script:
        "../scripts/verify_agent_trials.py"


rule verify_reply_rubric:
    input:
        trials="results/verify/trials.csv",
    output:
        grades="results/verify/reply_grades.csv",
        ledger="results/ledger/verify_reply_rubric.jsonl",
    log:
        "logs/verify_reply_rubric.log",
    benchmark:
        "results/benchmarks/verify_reply_rubric.tsv"
    # Small judge jobs: bundled into one cluster job (profiles' group-components).
    group:
        judge_group
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(JUDGE, "judge"),
    params:
        calls=call_settings("judge", JUDGE),
        judge=JUDGE,
        max_tokens=config["verify"]["judge_max_tokens"],
        code=verify_code_fingerprint(),
    script:
        "../scripts/verify_reply_rubric.py"


rule verify_judge_labels:
    """carry's Figure 2 judge on both splits: calibration labels and the judged set."""
    input:
        table="data/prepared/{dataset}.csv",
        checklist="results/carry/rubrics/generic/{dataset}.json",
    output:
        verdicts="results/verify/judge_labels/{dataset}/verdicts.csv",
        ledger="results/ledger/verify_judge_labels-{dataset}.jsonl",
    log:
        "logs/verify_judge_labels/{dataset}.log",
    benchmark:
        "results/benchmarks/verify_judge_labels/{dataset}.tsv"
    wildcard_constraints:
        dataset="|".join(DATASETS),
    # Small judge jobs: bundled into one cluster job (profiles' group-components).
    group:
        judge_group
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(JUDGE, "judge"),
    params:
        calls=call_settings("judge", JUDGE),
        judge=JUDGE,
        length=config["verify"]["checklist_length"],
        temperature=config["carry"]["fig2"]["temperature"],
        max_tokens=config["carry"]["fig2"]["max_tokens"],
        prompt_template=judge_prompt_fingerprint(),
    script:
        "../scripts/verify_judge_labels.py"


rule verify_calibration:
    input:
        verdicts=expand(
            "results/verify/judge_labels/{dataset}/verdicts.csv", dataset=DATASETS
        ),
        tables=expand("data/prepared/{dataset}.csv", dataset=DATASETS),
        trials="results/verify/trials.csv",
        grades="results/verify/reply_grades.csv",
    output:
        md=report_item(
            "figures/verify/table_calibration.md",
            "verify_table.rst",
            "verify",
            "Calibration table",
        ),
        csv="figures/verify/table_calibration.csv",
        png=report_item(
            "figures/verify/fig2_calibration.png",
            "verify_fig2.rst",
            "verify",
            "Figure 2",
        ),
        pdf="figures/verify/fig2_calibration.pdf",
        provenance="figures/verify/fig2_calibration.provenance.json",
        table_provenance="figures/verify/table_calibration.provenance.json",
    log:
        "logs/verify_calibration.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        datasets=DATASETS,
        judge=JUDGE,
        models=VERIFY_MODELS,
        labels=labels_of(VERIFY_MODELS),
        provenance=recorded_provenance,
        length=config["verify"]["checklist_length"],
        n_boot=config["verify"]["bootstrap"],
        seed=config["verify"]["seed"],
        level=config["verify"]["level"],
    script:
        "../scripts/verify_calibration.py"
