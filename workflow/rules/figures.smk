# Plots read tidy tables; compute and plotting are separate rules.


rule carry_fig2_rates:
    input:
        verdicts="results/carry/fig2/{dataset}/verdicts.csv",
    output:
        by_run="results/carry/fig2/{dataset}/rates_by_run.csv",
        mean="results/carry/fig2/{dataset}/rates_mean.csv",
    params:
        lengths=config["carry"]["fig2"]["lengths"],
    conda:
        "../envs/rubriclab.yaml"
    log:
        "logs/carry_fig2_rates/{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASETS),
    script:
        "../scripts/carry_fig2_rates.py"


rule carry_fig2_plot:
    input:
        expand("results/carry/fig2/{dataset}/rates_mean.csv", dataset=config["carry"]["fig2"]["datasets"]),
    output:
        png=report(
            "figures/carry/fig2_checklist_length.png",
            caption="../report/fig2_checklist_length.rst",
            category="carry",
            subcategory="Figure 2",
        ),
        pdf="figures/carry/fig2_checklist_length.pdf",
        provenance="figures/carry/fig2_checklist_length.provenance.json",
        csv=report(
            "figures/carry/fig2_checklist_length.csv",
            caption="../report/fig2_checklist_length_csv.rst",
            category="carry",
            subcategory="Figure 2",
        ),
    params:
        datasets=config["carry"]["fig2"]["datasets"],
        judge=JUDGE,
        models={"judge": JUDGE},
        labels=labels_of({"judge": JUDGE}),
        provenance=recorded_provenance,
    conda:
        "../envs/rubriclab.yaml"
    log:
        "logs/carry_fig2_plot.log",
    script:
        "../scripts/carry_fig2_plot.py"


def plan_files(_wildcards):
    """The plan `rubriclab plan` wrote for a run in this folder, if there is one: the cost
    report puts the bill beside it (when it was made for this same config)."""
    made = os.path.exists("results/plan/plan.csv") and os.path.exists("results/plan/plan.json")
    return {"plan": ["results/plan/plan.csv"] if made else [],
            "plan_digest": ["results/plan/plan.json"] if made else []}


rule cost_report:
    input:
        unpack(plan_files),
        ledgers=ledger_files(),
    output:
        report(
            "figures/cost_report.md",
            caption="../report/cost_report.rst",
            category="accounting",
        ),
    conda:
        "../envs/rubriclab.yaml"
    log:
        "logs/cost_report.log",
    script:
        "../scripts/cost_report.py"


rule carry_table1:
    input:
        TABLE1_EXAMPLE,
    output:
        md=report("figures/carry/table1_shapley_example.md", caption="../report/carry_table1.rst",
                  category="carry", subcategory="Table 1"),
        csv="figures/carry/table1_shapley_example.csv",
    params:
        code=CARRY_CODE,
    conda:
        "../envs/rubriclab.yaml"
    log:
        "logs/carry_table1.log",
    script:
        "../scripts/carry_table1.py"
