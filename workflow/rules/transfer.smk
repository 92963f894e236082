# transfer: HealthBench examples, restated expert rubrics, generated rubrics, responses,
# interventions, judging, matching baselines, and every figure and table.

from rubriclab.transfer.reads import criterion_edit_models


wildcard_constraints:
    tgen="|".join(re.escape(slug) for slug in T_GENERATOR_BY_SLUG),
    responder="|".join(re.escape(slug) for slug in RESPONDER_BY_SLUG),
    tmodel="|".join(re.escape(slug) for slug in T_MODEL_BY_SLUG),
    responses="|".join(re.escape(name) for name in transfer_response_files()),


TRANSFER_PROMPTS = transfer_prompt_fingerprint()
TRANSFER_CODE = transfer_code_fingerprint()
T_SAMPLING = dict(temperature=TRANSFER["temperature"])
# What the analysis reads (rubriclab.transfer.reads): the judge judges only that.
T_READS = dict(
    generators=T_GENERATORS,
    main_response_model=T_RESPONSE_MODEL,
    it_response_models=T_IT_MODELS,
    panels=T_PANELS,
    degrader=TRANSFER["degrader"],
    degradation_models=T_DEGRADATION_MODELS,
)
T_CRITERION_EDIT_MODELS = criterion_edit_models(
    TRANSFER["criterion_edit_models"], T_RESPONSE_MODEL, T_IT_MODELS
)


rule transfer_examples:
    input:
        sample="data/prepared/healthbench.csv",
    output:
        examples="results/transfer/examples.csv",
        left_out="results/transfer/examples_left_out.csv",
        physician="results/transfer/responses/physician.csv",
    log:
        "logs/transfer_examples.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        n=TRANSFER["n_examples"],
        max_criteria=TRANSFER["max_criteria"],
        max_conversation_chars=TRANSFER["max_conversation_chars"],
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_examples.py"


rule transfer_restate:
    input:
        examples="results/transfer/examples.csv",
    output:
        expert="results/transfer/expert.json",
        ledger="results/ledger/transfer_restate.jsonl",
    log:
        "logs/transfer_restate.log",
    benchmark:
        "results/benchmarks/transfer_restate.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(T_RESTATER, "restater"),
    params:
        **T_SAMPLING,
        calls=call_settings("restater", T_RESTATER),
        model=T_RESTATER,
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_restate.py"


rule transfer_generate:
    input:
        examples="results/transfer/examples.csv",
    output:
        rubrics="results/transfer/rubrics/{tgen}.json",
        ledger="results/ledger/transfer_generate-{tgen}.jsonl",
    log:
        "logs/transfer_generate/{tgen}.log",
    benchmark:
        "results/benchmarks/transfer_generate/{tgen}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(
            T_GENERATOR_BY_SLUG[w.tgen], "transfer_generator"
        )["local_llm"],
        api_calls=lambda w: model_resources(
            T_GENERATOR_BY_SLUG[w.tgen], "transfer_generator"
        )["api_calls"],
        mem_mb=lambda w: model_resources(
            T_GENERATOR_BY_SLUG[w.tgen], "transfer_generator"
        )["mem_mb"],
        runtime=lambda w: model_resources(
            T_GENERATOR_BY_SLUG[w.tgen], "transfer_generator"
        )["runtime"],
    params:
        **T_SAMPLING,
        calls=lambda w: call_settings("transfer_generator", T_GENERATOR_BY_SLUG[w.tgen]),
        model=lambda w: T_GENERATOR_BY_SLUG[w.tgen],
        max_tokens=TRANSFER["generator_max_tokens"],
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_generate.py"


rule transfer_respond:
    input:
        examples="results/transfer/examples.csv",
    output:
        responses="results/transfer/responses/original-{responder}.csv",
        ledger="results/ledger/transfer_respond-{responder}.jsonl",
    log:
        "logs/transfer_respond/{responder}.log",
    benchmark:
        "results/benchmarks/transfer_respond/{responder}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(
            RESPONDER_BY_SLUG[w.responder].split("|")[0], "responder"
        )["local_llm"],
        api_calls=lambda w: model_resources(
            RESPONDER_BY_SLUG[w.responder].split("|")[0], "responder"
        )["api_calls"],
        mem_mb=lambda w: model_resources(
            RESPONDER_BY_SLUG[w.responder].split("|")[0], "responder"
        )["mem_mb"],
        runtime=lambda w: model_resources(
            RESPONDER_BY_SLUG[w.responder].split("|")[0], "responder"
        )["runtime"],
    params:
        **T_SAMPLING,
        calls=lambda w: call_settings(
            "responder", RESPONDER_BY_SLUG[w.responder].split("|")[0]
        ),
        responder=lambda w: RESPONDER_BY_SLUG[w.responder],
        max_tokens=TRANSFER["response_max_tokens"],
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_respond.py"


rule transfer_degrade:
    input:
        examples="results/transfer/examples.csv",
        expert="results/transfer/expert.json",
    output:
        responses="results/transfer/responses/degraded-{tmodel}.csv",
        ledger="results/ledger/transfer_degrade-{tmodel}.jsonl",
    log:
        "logs/transfer_degrade/{tmodel}.log",
    benchmark:
        "results/benchmarks/transfer_degrade/{tmodel}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "degrader")[
            "local_llm"
        ],
        api_calls=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "degrader")[
            "api_calls"
        ],
        mem_mb=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "degrader")[
            "mem_mb"
        ],
        runtime=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "degrader")[
            "runtime"
        ],
    params:
        **T_SAMPLING,
        calls=lambda w: call_settings("degrader", T_MODEL_BY_SLUG[w.tmodel]),
        model=lambda w: T_MODEL_BY_SLUG[w.tmodel],
        max_tokens=TRANSFER["response_max_tokens"],
        seed=TRANSFER["degrade_seed"],
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_degrade.py"


rule transfer_judge:
    input:
        examples="results/transfer/examples.csv",
        responses="results/transfer/responses/{responses}.csv",
        expert="results/transfer/expert.json",
        rubrics=expand(
            "results/transfer/rubrics/{tgen}.json", tgen=list(T_GENERATOR_BY_SLUG)
        ),
    output:
        verdicts="results/transfer/verdicts/{responses}.csv",
        ledger="results/ledger/transfer_judge-{responses}.jsonl",
    log:
        "logs/transfer_judge/{responses}.log",
    benchmark:
        "results/benchmarks/transfer_judge/{responses}.tsv"
    # Not in the judge group: an intervention is made from judged responses and judged in
    # turn (transfer_judge -> transfer_intervene -> transfer_judge), a path out of the group
    # and back in, which Snakemake refuses.
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(T_JUDGE, "transfer_judge"),
    params:
        calls=call_settings("transfer_judge", T_JUDGE),
        judge=T_JUDGE,
        votes=TRANSFER["judge_votes"],
        temperature=TRANSFER["judge_temperature"],
        reads=T_READS,
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_judge.py"


rule transfer_intervene:
    input:
        examples="results/transfer/examples.csv",
        originals=lambda w: f"results/transfer/responses/original-{model_slug(T_MODEL_BY_SLUG[w.tmodel] + '|0')}.csv",
        verdicts=lambda w: f"results/transfer/verdicts/original-{model_slug(T_MODEL_BY_SLUG[w.tmodel] + '|0')}.csv",
        expert="results/transfer/expert.json",
        rubrics=expand(
            "results/transfer/rubrics/{tgen}.json", tgen=list(T_GENERATOR_BY_SLUG)
        ),
    output:
        responses="results/transfer/responses/interventions-{tmodel}.csv",
        ledger="results/ledger/transfer_intervene-{tmodel}.jsonl",
    log:
        "logs/transfer_intervene/{tmodel}.log",
    benchmark:
        "results/benchmarks/transfer_intervene/{tmodel}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        local_llm=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "editor")[
            "local_llm"
        ],
        api_calls=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "editor")[
            "api_calls"
        ],
        mem_mb=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "editor")["mem_mb"],
        runtime=lambda w: model_resources(T_MODEL_BY_SLUG[w.tmodel], "editor")[
            "runtime"
        ],
    params:
        **T_SAMPLING,
        calls=lambda w: call_settings("editor", T_MODEL_BY_SLUG[w.tmodel]),
        model=lambda w: T_MODEL_BY_SLUG[w.tmodel],
        max_tokens=TRANSFER["response_max_tokens"],
        criteria_per_rubric=TRANSFER["criteria_per_rubric"],
        criterion_edits=lambda w: T_MODEL_BY_SLUG[w.tmodel] in T_CRITERION_EDIT_MODELS,
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_intervene.py"


rule transfer_match:
    input:
        examples="results/transfer/examples.csv",
        expert="results/transfer/expert.json",
        rubrics="results/transfer/rubrics/{tgen}.json",
    output:
        matching="results/transfer/matching/{tgen}.csv",
        ledger="results/ledger/transfer_match-{tgen}.jsonl",
    log:
        "logs/transfer_match/{tgen}.log",
    benchmark:
        "results/benchmarks/transfer_match/{tgen}.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **model_resources(T_MATCHER, "matcher"),
    params:
        **T_SAMPLING,
        calls=[
            call_settings("matcher", T_MATCHER),
            call_settings("similarity", T_MATCHER),
        ],
        generator=lambda w: T_GENERATOR_BY_SLUG[w.tgen],
        model=T_MATCHER,
        framings=TRANSFER["framings"],
        prompts=TRANSFER_PROMPTS,
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_match.py"


rule transfer_embed:
    input:
        examples="results/transfer/examples.csv",
        expert="results/transfer/expert.json",
        rubrics=expand(
            "results/transfer/rubrics/{tgen}.json", tgen=list(T_GENERATOR_BY_SLUG)
        ),
    output:
        cosine="results/transfer/cosine.csv",
    log:
        "logs/transfer_embed.log",
    benchmark:
        "results/benchmarks/transfer_embed.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        model=TRANSFER["embedding_model"],
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_embed.py"


rule transfer_analyse:
    input:
        examples="results/transfer/examples.csv",
        expert="results/transfer/expert.json",
        rubrics=expand(
            "results/transfer/rubrics/{tgen}.json", tgen=list(T_GENERATOR_BY_SLUG)
        ),
        responses=expand(
            "results/transfer/responses/{name}.csv", name=transfer_response_files()
        ),
        verdicts=expand(
            "results/transfer/verdicts/{name}.csv", name=transfer_response_files()
        ),
        matching=expand(
            "results/transfer/matching/{tgen}.csv", tgen=list(T_GENERATOR_BY_SLUG)
        ),
        cosine="results/transfer/cosine.csv",
    output:
        stats="results/transfer/analysis/stats.csv",
        categories="results/transfer/analysis/categories.csv",
        cutoffs="results/transfer/analysis/cutoffs.csv",
        edit_sizes="results/transfer/analysis/edit_sizes.csv",
        undetermined="results/transfer/analysis/undetermined.csv",
        left_out="results/transfer/analysis/left_out.csv",
    log:
        "logs/transfer_analyse.log",
    benchmark:
        "results/benchmarks/transfer_analyse.tsv"
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        generators=T_GENERATORS,
        response_model=T_RESPONSE_MODEL,
        it_models=T_IT_MODELS,
        panels=T_PANELS,
        degrader=TRANSFER["degrader"],
        degradation_models=T_DEGRADATION_MODELS,
        framings=TRANSFER["framings"],
        tau=TRANSFER["tau"],
        bootstrap=TRANSFER["bootstrap"],
        code=TRANSFER_CODE,
    script:
        "../scripts/transfer_analyse.py"


rule transfer_figure:
    input:
        stats="results/transfer/analysis/stats.csv",
        categories="results/transfer/analysis/categories.csv",
    output:
        png=transfer_report(
            "figures/transfer/{tfigure}.png", "transfer_figure.rst", "tfigure"
        ),
        pdf="figures/transfer/{tfigure}.pdf",
        csv="results/transfer/figures/{tfigure}.csv",
        provenance="figures/transfer/{tfigure}.provenance.json",
    log:
        "logs/transfer_figure/{tfigure}.log",
    wildcard_constraints:
        tfigure="|".join(TRANSFER_FIGURES),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        response_model=T_RESPONSE_MODEL,
        code=TRANSFER_CODE,
        models=TRANSFER_MODELS,
        labels=labels_of(TRANSFER_MODELS),
        provenance=recorded_provenance,
    script:
        "../scripts/transfer_figure.py"


rule transfer_table:
    input:
        stats="results/transfer/analysis/stats.csv",
        cutoffs="results/transfer/analysis/cutoffs.csv",
        edit_sizes="results/transfer/analysis/edit_sizes.csv",
    output:
        md=transfer_report(
            "figures/transfer/{ttable}.md", "transfer_table.rst", "ttable"
        ),
        csv="figures/transfer/{ttable}.csv",
        provenance="figures/transfer/{ttable}.provenance.json",
    log:
        "logs/transfer_table/{ttable}.log",
    wildcard_constraints:
        ttable="|".join(TRANSFER_TABLES),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        response_model=T_RESPONSE_MODEL,
        code=TRANSFER_CODE,
        models=TRANSFER_MODELS,
        labels=labels_of(TRANSFER_MODELS),
        provenance=recorded_provenance,
    script:
        "../scripts/transfer_table.py"
