# Plots read tidy tables; compute and plotting are separate rules.

from rubriclab.report_items import replication_landing


rule carry_fig2_rates:
    input:
        verdicts="results/carry/fig2/{dataset}/verdicts.csv",
    output:
        by_run="results/carry/fig2/{dataset}/rates_by_run.csv",
        mean="results/carry/fig2/{dataset}/rates_mean.csv",
    log:
        "logs/carry_fig2_rates/{dataset}.log",
    wildcard_constraints:
        dataset=one_of(DATASETS + OWN_DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        lengths=config["carry"]["fig2"]["lengths"],
    script:
        "../scripts/carry_fig2_rates.py"


rule carry_fig2_plot:
    input:
        expand(
            "results/carry/fig2/{dataset}/rates_mean.csv",
            dataset=config["carry"]["fig2"]["datasets"],
        ),
    output:
        png=report_item(
            "figures/carry/fig2_checklist_length.png",
            "fig2_checklist_length.rst",
            "carry",
            "Figure 2",
        ),
        pdf="figures/carry/fig2_checklist_length.pdf",
        provenance="figures/carry/fig2_checklist_length.provenance.json",
        csv=report_item(
            "figures/carry/fig2_checklist_length.csv",
            "fig2_checklist_length_csv.rst",
            "carry",
            "Figure 2",
        ),
    log:
        "logs/carry_fig2_plot.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        datasets=config["carry"]["fig2"]["datasets"],
        titles={name: dataset_title(name) for name in FIG2_DATASETS},
        words={
            name: config["datasets"][name]["words"] or {}
            for name in FIG2_DATASETS
            if name in OWN_DATASETS
        },
        judge=JUDGE,
        models={"judge": JUDGE},
        labels=labels_of({"judge": JUDGE}),
        provenance=recorded_provenance,
    script:
        "../scripts/carry_fig2_plot.py"


# The attribution table of the checklist Figure 2 judges a dataset with (docs/own_data.md).
rule carry_checklist_attribution:
    input:
        verdicts="results/carry/fig2/{dataset}/verdicts.csv",
        checklist=fig2_checklist,
    output:
        md=report_item(
            "figures/carry/attribution_{dataset}.md",
            "carry_checklist_attribution.rst",
            "carry",
            "attribution of a checklist",
        ),
        csv="figures/carry/attribution_{dataset}.csv",
        provenance="figures/carry/attribution_{dataset}.provenance.json",
    log:
        "logs/carry_checklist_attribution/{dataset}.log",
    wildcard_constraints:
        dataset=one_of(DATASETS + OWN_DATASETS),
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        title=lambda wc: dataset_title(wc.dataset),
        words=lambda wc: (
            config["datasets"][wc.dataset]["words"] or {}
            if wc.dataset in OWN_DATASETS
            else {}
        ),
        judge=JUDGE,
        models={"judge": JUDGE},
        labels=labels_of({"judge": JUDGE}),
        code=CARRY_CODE,
        provenance=recorded_provenance,
    script:
        "../scripts/carry_checklist_attribution.py"


# Figure 2 and the attribution tables of your own datasets (docs/own_data.md).
rule own_data:
    input:
        own_data_targets(),


rule cost_report:
    input:
        unpack(plan_files),
        ledgers=ledger_files(),
    output:
        report_item(
            "figures/cost_report.md", "cost_report.rst", "accounting", "Cost report"
        ),
    log:
        "logs/cost_report.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        # where this job's host keeps its local copies of the store's files
        local_storage=str(workflow.storage_settings.local_storage_prefix),
        # the models' display names beside the billed model strings
        labels=config["labels"],
        stand_ins=config["stand_ins"],
    script:
        "../scripts/cost_report.py"


rule replication:
    input:
        table1="figures/carry/table1_shapley_example.csv",
        fig1="results/carry/figures/fig1_strictness.csv",
        fig2="figures/carry/fig2_checklist_length.csv",
        fig3="results/carry/figures/fig3_accuracy_vs_flawed_share.csv",
        fig5="results/carry/figures/fig5_attribution_by_origin.csv",
        table2="figures/carry/table2_gate_replay.csv",
        fig4="results/carry/figures/fig4_self_review_drift.csv",
        fig6="results/carry/figures/fig6_gated_quality.csv",
        fig6_supplement="figures/carry/fig6_supplement.csv",
        table3="figures/carry/table3_gates_human_labeled.csv",
        gate_agreement="figures/carry/table_gate_agreement.csv",
        carry_rates="results/carry/rates.csv",
        carry_attribution="results/carry/attribution.csv",
        carry_deletions="results/carry/deletions.csv",
        # the main judge's gate decisions, one file per carry dataset
        carry_decisions_recon=f"results/carry/judged/recon/{MAIN_JUDGE_SLUG}/decisions.csv",
        carry_decisions_summedits=f"results/carry/judged/summedits/{MAIN_JUDGE_SLUG}/decisions.csv",
        carry_decisions_ragtruth=f"results/carry/judged/ragtruth/{MAIN_JUDGE_SLUG}/decisions.csv",
        verify="figures/verify/table_calibration.csv",
        verify_trials="results/verify/trials.csv",
        verify_grades="results/verify/reply_grades.csv",
        categories="results/transfer/analysis/categories.csv",
        stats="results/transfer/analysis/stats.csv",
        edit_sizes="results/transfer/analysis/edit_sizes.csv",
        transfer_examples="results/transfer/examples.csv",
        transfer_left_out="results/transfer/analysis/left_out.csv",
    output:
        md="figures/replication.md",
        # the report's item: an HTML page the report shows in place (a .md item only
        # downloads from its view icon)
        html=report_item(
            "figures/replication.html",
            "replication.rst",
            "replication",
            "Headline numbers beside the papers'",
        ),
        csv="figures/replication.csv",
    log:
        "logs/replication.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        # report.html's first page (workflow/report/workflow.rst): read from the csv when the
        # report is built; a param of `output` is not compared for reruns
        landing=lambda wildcards, output: replication_landing(output.csv),
    script:
        "../scripts/replication.py"


rule verdict_browser:
    input:
        unpack(verdict_browser_input),
    output:
        report_item(
            "figures/verdicts.html",
            "verdict_browser.rst",
            "verdicts",
            "The judges' answers",
        ),
    log:
        "logs/verdict_browser.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        fig2_datasets=FIG2_DATASETS,
        verify_datasets=DATASETS,
        carry=[
            (d, JUDGE_BY_SLUG[slug])
            for d in CARRY_DATASETS
            for slug in carry_judges_on(d)
        ],
        carry_datasets=CARRY_DATASETS,
        transfer=transfer_response_files(),
        judge=JUDGE,
        transfer_judge=T_JUDGE,
        labels={**labels_of(CARRY_MODELS), **labels_of(TRANSFER_MODELS)},
        run=config.get("run") or "",
    script:
        "../scripts/verdict_browser.py"


rule carry_table1:
    input:
        local(TABLE1_EXAMPLE),
    output:
        md=report_item(
            "figures/carry/table1_shapley_example.md",
            "carry_table1.rst",
            "carry",
            "Table 1",
        ),
        csv="figures/carry/table1_shapley_example.csv",
    log:
        "logs/carry_table1.log",
    conda:
        "../envs/rubriclab.yaml"
    resources:
        **SMALL_JOB,
    params:
        code=CARRY_CODE,
    script:
        "../scripts/carry_table1.py"
