# carry: rubric sources, self-review chains, judging, gate replay and every figure and table.
# Grid: results/carry/{rubrics,chains,judged}/{dataset}/... ; {judge} is a model slug.


# Hashed once per run: a rule declaring it reruns when the carry code it runs changes.
CARRY_CODE = carry_code_fingerprint()


wildcard_constraints:
    cdataset="recon|summedits|ragtruth",
    source="hand|generated|label",
    mode="free|fixed_count|delete_only",
    seed=r"\d+",
    judge="|".join(re.escape(slug) for slug in JUDGE_BY_SLUG),
    reviser="|".join(re.escape(slug) for slug in REVISER_BY_SLUG),


rule carry_items:
    input:
        unpack(carry_items_input),
    output:
        table="results/carry/items/{cdataset}.csv",
        teaching="results/carry/items/{cdataset}_teaching.csv",
    log:
        "logs/carry_items/{cdataset}.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        environments=config["carry"]["recon"]["environments"],
        code=CARRY_CODE,
    script:
        "../scripts/carry_items.py"


rule carry_rubric_hand:
    input:
        hand="data/prepared/recon/rubrics_hand.csv",
        carry_items="results/carry/items/recon.csv",
    output:
        "results/carry/rubrics/recon/hand.json",
    log:
        "logs/carry_rubric/recon-hand.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        code=CARRY_CODE,
    script:
        "../scripts/carry_rubric_hand.py"


rule carry_rubric_model:
    input:
        teaching="results/carry/items/{cdataset}_teaching.csv",
    output:
        rubric="results/carry/rubrics/{cdataset}/{source}.json",
        ledger="results/ledger/carry_rubric-{cdataset}-{source}.jsonl",
    log:
        "logs/carry_rubric/{cdataset}-{source}.log",
    benchmark:
        "results/benchmarks/carry_rubric/{cdataset}-{source}.tsv"
    wildcard_constraints:
        source="generated|label",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(GENERATOR, "generator"),
    params:
        calls=call_settings("generator", GENERATOR),
        model=GENERATOR,
        n_checks=config["carry"]["sources"]["n_checks"],
        temperature=config["carry"]["sources"]["temperature"],
        max_tokens=config["carry"]["sources"]["max_tokens"],
        examples_per_label=lambda w: config["carry"]["sources"][
            "label_examples_per_label"
        ][w.cdataset],
        seed=config["carry"]["sources"]["seed"],
        code=CARRY_CODE,
    script:
        "../scripts/carry_rubric_model.py"


rule carry_chain:
    input:
        start="results/carry/rubrics/{cdataset}/{source}.json",
    output:
        chain="results/carry/chains/{cdataset}/{reviser}/{source}-{mode}-seed{seed}.json",
        ledger="results/ledger/carry_chain-{cdataset}-{reviser}-{source}-{mode}-seed{seed}.jsonl",
    log:
        "logs/carry_chain/{cdataset}-{reviser}-{source}-{mode}-seed{seed}.log",
    benchmark:
        "results/benchmarks/carry_chain/{cdataset}-{reviser}-{source}-{mode}-seed{seed}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(REVISER_BY_SLUG[w.reviser], "reviser")[
            "local_llm"
        ],
        api_calls=lambda w: model_resources(REVISER_BY_SLUG[w.reviser], "reviser")[
            "api_calls"
        ],
        mem_mb=lambda w: model_resources(REVISER_BY_SLUG[w.reviser], "reviser")[
            "mem_mb"
        ],
        runtime=lambda w: model_resources(REVISER_BY_SLUG[w.reviser], "reviser")[
            "runtime"
        ],
    params:
        calls=lambda w: call_settings("reviser", REVISER_BY_SLUG[w.reviser]),
        reviser=lambda w: REVISER_BY_SLUG[w.reviser],
        rounds=lambda w: config["carry"]["chains"][w.cdataset]["rounds"],
        temperature=config["carry"]["chains"]["temperature"],
        max_tokens=config["carry"]["chains"]["max_tokens"],
        code=CARRY_CODE,
    script:
        "../scripts/carry_chain.py"


rule carry_judge:
    input:
        carry_items="results/carry/items/{cdataset}.csv",
        starts=lambda w: expand(
            "results/carry/rubrics/{cdataset}/{source}.json",
            cdataset=w.cdataset,
            source=carry_start_sources(w.cdataset),
        ),
        chains=lambda w: carry_chain_files(w.cdataset),
    output:
        verdicts="results/carry/judged/{cdataset}/{judge}/verdicts.csv",
        ledger="results/ledger/carry_judge-{cdataset}-{judge}.jsonl",
    log:
        "logs/carry_judge/{cdataset}-{judge}.log",
    benchmark:
        "results/benchmarks/carry_judge/{cdataset}-{judge}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(JUDGE_BY_SLUG[w.judge], "judge")[
            "local_llm"
        ],
        api_calls=lambda w: model_resources(JUDGE_BY_SLUG[w.judge], "judge")[
            "api_calls"
        ],
        mem_mb=lambda w: model_resources(JUDGE_BY_SLUG[w.judge], "judge")["mem_mb"],
        runtime=lambda w: model_resources(JUDGE_BY_SLUG[w.judge], "judge")["runtime"],
    params:
        calls=lambda w: call_settings("judge", JUDGE_BY_SLUG[w.judge]),
        judge=lambda w: JUDGE_BY_SLUG[w.judge],
        votes=config["carry"]["votes"],
        temperature=config["carry"]["judge_temperature"],
        max_tokens=config["carry"]["judge_max_tokens"],
        renderings=config["carry"]["recon"]["renderings"],
        prompt_template=judge_prompt_fingerprint(),
        code=CARRY_CODE,
    script:
        "../scripts/carry_judge.py"


rule carry_analyse:
    input:
        carry_items="results/carry/items/{cdataset}.csv",
        verdicts="results/carry/judged/{cdataset}/{judge}/verdicts.csv",
        starts=lambda w: expand(
            "results/carry/rubrics/{cdataset}/{source}.json",
            cdataset=w.cdataset,
            source=carry_start_sources(w.cdataset),
        ),
        chains=lambda w: carry_chain_files(w.cdataset),
    output:
        rates="results/carry/judged/{cdataset}/{judge}/rates.csv",
        decisions="results/carry/judged/{cdataset}/{judge}/decisions.csv",
        attribution="results/carry/judged/{cdataset}/{judge}/attribution.csv",
        deletions="results/carry/judged/{cdataset}/{judge}/deletions.csv",
    log:
        "logs/carry_analyse/{cdataset}-{judge}.log",
    benchmark:
        "results/benchmarks/carry_analyse/{cdataset}-{judge}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        judge=lambda w: JUDGE_BY_SLUG[w.judge],
        gates=["none", *config["carry"]["gates"]],
        renderings=config["carry"]["recon"]["renderings"],
        # Recon only: SummEdits / RAGTruth gates always decide with the calibration split
        gate_evidence=lambda w: (
            config["carry"]["recon"]["gate_evidence"]
            if w.cdataset == "recon"
            else None
        ),
        bootstrap=config["carry"]["bootstrap"],
        code=CARRY_CODE,
    script:
        "../scripts/carry_analyse.py"


rule carry_collect:
    input:
        rates=[f for d in CARRY_DATASETS for f in carry_judge_files(d, "rates.csv")],
        attribution=[
            f for d in CARRY_DATASETS for f in carry_judge_files(d, "attribution.csv")
        ],
        deletions=[
            f for d in CARRY_DATASETS for f in carry_judge_files(d, "deletions.csv")
        ],
    output:
        rates="results/carry/rates.csv",
        attribution="results/carry/attribution.csv",
        deletions="results/carry/deletions.csv",
    log:
        "logs/carry_collect.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../scripts/carry_collect.py"


rule carry_failing_checks:
    input:
        carry_items=expand(
            "results/carry/items/{cdataset}.csv", cdataset=["recon", "ragtruth"]
        ),
        verdicts=expand(
            "results/carry/judged/{cdataset}/{judge}/verdicts.csv",
            cdataset=["recon", "ragtruth"],
            judge=MAIN_JUDGE_SLUG,
        ),
        recon_starts=expand(
            "results/carry/rubrics/recon/{source}.json", source=["hand", "label"]
        ),
        ragtruth_starts=expand(
            "results/carry/rubrics/ragtruth/{source}.json",
            source=["generated", "label"],
        ),
        recon_chain=carry_chain_files("recon", MAIN_REVISER_SLUG),
        ragtruth_chain=carry_chain_files("ragtruth", MAIN_REVISER_SLUG),
    output:
        "results/carry/failing_checks.csv",
    log:
        "logs/carry_failing_checks.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        environment=config["carry"]["recon"]["table4_environment"],
        reviser=REVISER,
        code=CARRY_CODE,
    script:
        "../scripts/carry_failing_checks.py"


rule carry_gate_agreement:
    input:
        decisions=[
            f
            for d in AGREEMENT_DATASETS
            for f in carry_judge_files(d, "decisions.csv")
        ],
    output:
        md=report_item(
            "figures/carry/table_gate_agreement.md",
            "carry_gate_agreement.rst",
            "carry",
            "Gate agreement (beside Table 2)",
        ),
        csv="figures/carry/table_gate_agreement.csv",
        splits="figures/carry/table_gate_agreement_splits.csv",
        provenance="figures/carry/table_gate_agreement.provenance.json",
    log:
        "logs/carry_gate_agreement.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        judges=CARRY_JUDGES,
        # the datasets the main judge judges alone (not in carry.all_judges_on): not covered
        main_judge_only=[d for d in CARRY_DATASETS if d not in AGREEMENT_DATASETS],
        code=CARRY_CODE,
        models=CARRY_MODELS,
        labels=labels_of(CARRY_MODELS),
        provenance=recorded_provenance,
    script:
        "../scripts/carry_gate_agreement.py"


rule carry_figure:
    input:
        rates="results/carry/rates.csv",
        attribution="results/carry/attribution.csv",
        deletions="results/carry/deletions.csv",
    output:
        png=carry_report("figures/carry/{figure}.png", "carry_figure.rst", "figure"),
        pdf="figures/carry/{figure}.pdf",
        csv="results/carry/figures/{figure}.csv",
        provenance="figures/carry/{figure}.provenance.json",
    log:
        "logs/carry_figure/{figure}.log",
    wildcard_constraints:
        figure="|".join(CARRY_FIGURES),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        judge=JUDGE,
        reviser=REVISER,
        paper_chains=paper_chains("recon"),
        gate_evidence=config["carry"]["recon"]["gate_evidence"],
        code=CARRY_CODE,
        models=CARRY_MODELS,
        labels=labels_of(CARRY_MODELS),
        provenance=recorded_provenance,
    script:
        "../scripts/carry_figure.py"


rule carry_table:
    input:
        rates="results/carry/rates.csv",
        deletions="results/carry/deletions.csv",
        failing="results/carry/failing_checks.csv",
    output:
        md=carry_report("figures/carry/{table}.md", "carry_table.rst", "table"),
        csv="figures/carry/{table}.csv",
        provenance="figures/carry/{table}.provenance.json",
    log:
        "logs/carry_table/{table}.log",
    wildcard_constraints:
        table="|".join(CARRY_TABLES),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        judge=JUDGE,
        reviser=REVISER,
        paper_chains={d: paper_chains(d) for d in CARRY_DATASETS},
        table2_chains=config["carry"]["recon"]["table2_chains"],
        gate_evidence=config["carry"]["recon"]["gate_evidence"],
        table3_seed=(
            config["carry"]["table3_seed"]
            if config["carry"]["table3_seed"] is not None
            else config["carry"]["chains"]["seeds"][0]
        ),
        code=CARRY_CODE,
        models=CARRY_MODELS,
        labels=labels_of(CARRY_MODELS),
        provenance=recorded_provenance,
    script:
        "../scripts/carry_table.py"
