# Configuration: environment overrides, schema validation with defaults, and helpers shared by
# every rules file. Secrets never appear here; API keys are read from the environment in src/.
import hashlib
import os
import re
import sys
from importlib.resources import files

from rubriclab.carry.chains import (
    agreement_datasets,
    check_chain_config,
    planned_chains,
    planned_judges,
)
from rubriclab.carry.prompts import template_fingerprint as judge_prompt_fingerprint
from rubriclab.transfer.prompts import (
    template_fingerprint as transfer_prompt_fingerprint,
)
from rubriclab.config import apply_env_overrides, load_yaml, validate_config
from rubriclab.data.download import dataset_files
from rubriclab.data.hub import check_source as check_hub_source
from rubriclab.data.own import misspelt_datasets
from rubriclab.job_signals import pass_stop_signals_to_jobs
from rubriclab.llm.progress import RUN_PLAN_VARIABLE, write_run_plan
from rubriclab.llm.providers import provider_for
from rubriclab.llm.settings import LLMConfig
from rubriclab.sizing import group_within, model_job_size, small_job_size
from rubriclab.slurm_status import check_slurm_status
from rubriclab.files import model_slug, tree_fingerprint
from rubriclab.reuse import reuse_base_run
from rubriclab.report_items import made_by, paper_item
from rubriclab.runs import (
    EVALUATE_IN_VARIABLE,
    base_run_directory,
    enter_named_run,
    targets_in_run,
)
from rubriclab.config_schema import coerce_command_line, unknown_keys
from rubriclab.validate import (
    check_before_first_job,
    check_call_settings,
    configured_models,
    endpoint_problems,
    mirror_problems,
    model_problems,
    raise_if,
    stand_in_problems,
)
from rubriclab.labels import DATASET_TITLES, ModelLabels
from rubriclab.markup import caption_record
from rubriclab.provenance import read_provenance

_schema = load_yaml(workflow.source_path("../schemas/config.schema.yaml"))
# --config values given in nested form arrive as strings; numbers among them are read as such.
_given = coerce_command_line(
    apply_env_overrides(config), workflow.config_settings.config, _schema
)
raise_if(unknown_keys(_given, _schema), "invalid configuration")
raise_if(
    misspelt_datasets(_given.get("datasets"), ["summedits", "ragtruth", "healthbench"]),
    "invalid configuration",
)
_validated = validate_config(_given, _schema)
raise_if(
    model_problems(configured_models(_validated)), "model strings that cannot be called"
)
raise_if(stand_in_problems(_validated), "invalid configuration")
raise_if(mirror_problems(_validated), "invalid configuration")
raise_if(endpoint_problems(_validated), "invalid configuration")
# A named run (`run: <name>`) works in runs/<name>/, the cache and data mirror still shared.
_validated, RUN_DIR = enter_named_run(
    _validated, os.getcwd(), workflow.overwrite_workdir
)
# An ablation of another run (`base_run: <name>`) starts from the jobs it shares with it: they
# are copied from the base run's folder now, while the Snakefile is read, before Snakemake builds
# its DAG (rubriclab.reuse). A dry run (-n, which Snakemake's output settings hold before the
# Snakefile is read) copies nothing and counts them. Only the main process copies, never a
# job's Snakemake nor the child that reads the base run.
_BASE_RUN = base_run_directory(_validated, os.getcwd())
if _BASE_RUN and workflow.is_main_process and not os.environ.get(EVALUATE_IN_VARIABLE):
    _dry = workflow.output_settings is not None and workflow.output_settings.dryrun
    _reuse = reuse_base_run(
        workflow.main_snakefile,
        dict(_validated),
        os.getcwd(),
        _BASE_RUN,
        RUN_DIR,
        dry=_dry,
    )
    print(_reuse.summary(), file=sys.stderr)
config.clear()
config.update(_validated)


def _targets_in_run(prepare_dag):
    """The command line's targets, which Snakemake reads relative to the run's folder:
    `runs/<name>/...` of the named run <name> is made as `...`, one of another run is refused
    with what to type (rubriclab.runs.targets_in_run). Snakemake hands the Snakefile its targets
    only after reading it (DAGSettings, set on the workflow once the Snakefile is parsed) and
    reads them first thing in the DAG's preparation, with no public hook between the two
    (onstart runs after the DAG is built): so this one wrapper of a Snakemake method remains,
    and it changes nothing but the targets (snakemake 9.27, pinned in pyproject.toml).
    """

    def prepare(*args, **kwargs):
        settings = workflow.dag_settings
        settings.targets = frozenset(
            targets_in_run(settings.targets, config.get("run"))
        )
        return prepare_dag(*args, **kwargs)

    return prepare


if workflow.is_main_process:
    workflow._prepare_dag = _targets_in_run(workflow._prepare_dag)
# Relative paths of your own data (datasets.<name>.file, .checklist) are the launching
# directory's, also in a named run, which works in runs/<name>/.
LAUNCH_DIR = os.getcwd()
if RUN_DIR:

    workdir: RUN_DIR


DATASETS = [
    "summedits",
    "ragtruth",
]  # human-labelled: items with correct / flawed labels
RAW_DATASETS = DATASETS + ["healthbench"]
# Datasets of your own (docs/own_data.md): every other name under `datasets`.
OWN_DATASETS = [name for name in config["datasets"] if name not in RAW_DATASETS]
for _name in OWN_DATASETS:
    if bool(config["datasets"][_name]["file"]) == bool(
        config["datasets"][_name]["hub"]
    ):
        raise ValueError(
            f"config key 'datasets.{_name}': a dataset of your own reads its rows from "
            "'file' or from 'hub', one of the two"
        )
FIG2_DATASETS = config["carry"]["fig2"]["datasets"]
_unknown = [name for name in FIG2_DATASETS if name not in DATASETS + OWN_DATASETS]
if _unknown:
    raise ValueError(
        f"config key 'carry.fig2.datasets': {_unknown} are neither summedits, ragtruth nor "
        f"a dataset of your own under 'datasets' ({OWN_DATASETS or 'none'})"
    )


def one_of(names):
    """A wildcard constraint matching exactly `names` (nothing when there are none)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


def own_path(dataset, key):
    path = config["datasets"][dataset][key]
    return path if os.path.isabs(path) else os.path.join(LAUNCH_DIR, path)


def own_files(wildcards):
    """The file a dataset of your own reads its rows from (none when it reads the Hub)."""
    return (
        [own_path(wildcards.dataset, "file")]
        if config["datasets"][wildcards.dataset]["file"]
        else []
    )


def fig2_checklist(wildcards):
    """The checklist Figure 2 judges a dataset with: the generic one, or your own."""
    kind = "own" if wildcards.dataset in OWN_DATASETS else "generic"
    return f"results/carry/rubrics/{kind}/{wildcards.dataset}.json"


def dataset_title(dataset):
    if dataset in OWN_DATASETS:
        return config["datasets"][dataset]["title"]
    return DATASET_TITLES.get(dataset, dataset)


def own_data_targets():
    """Figure 2 and the attribution table of each dataset of your own that Figure 2 shows."""
    own = [name for name in FIG2_DATASETS if name in OWN_DATASETS]
    if not own:
        return []
    return [
        *expand("figures/carry/fig2_checklist_length.{ext}", ext=["png", "pdf", "csv"]),
        *expand(
            "figures/carry/attribution_{dataset}.{ext}", dataset=own, ext=["md", "csv"]
        ),
    ]


JUDGE = config["models"]["judge"]
AGENT = config["models"]["agent"]
# The generic checklists ship with the package; as an input, an edit to them reruns what follows.
# Inputs as local() files: read where the package is installed, never through a storage plugin.
GENERIC_CHECKLISTS = str(
    files("rubriclab") / "resources" / "checklists" / "generic.yaml"
)
TABLE1_EXAMPLE = str(files("rubriclab") / "resources" / "carry" / "table1_example.yaml")

# API keys are deliberately not declared as `envvars:`: a run served entirely from the cache
# (for example from an imported cache file) needs no key. When the run starts (not in a dry run),
# a model of a job about to run that lacks its key, and whose answers the cache does not hold,
# stops it, one line per model; the model layer checks the key again before each job's first
# call and names the variable.


onstart:
    # Snakemake's SIGINT / SIGTERM reach the running jobs, which store their calls in flight
    # and end (rubriclab.job_signals); its own handlers are in place by now.
    pass_stop_signals_to_jobs(say=lambda line: print(line, file=sys.stderr))
    # Under the slurm executor: can its status command see jobs end on this cluster?
    check_slurm_status(workflow.executor_plugin.name, workflow.executor_settings)
    check_before_first_job(
        config,
        warn=lambda line: print(f"warning: {line}", file=sys.stderr),
        # every job that calls a model writes a ledger
        job_params=[
            list(job.params)
            for job in workflow.dag.needrun_jobs()
            if "ledger" in job.output.keys()
        ],
        fetches=[
            (job.wildcards.dataset, job.wildcards.filename)
            for job in workflow.dag.needrun_jobs()
            if job.rule.name == "fetch_raw"
        ],
    )
    # The jobs of this run, for the progress lines' "run: done/total jobs, time left".
    write_run_plan(
        "logs/run_plan.json", [job.output for job in workflow.dag.needrun_jobs()]
    )
    os.environ[RUN_PLAN_VARIABLE] = os.path.abspath("logs/run_plan.json")


# A dataset read from Hugging Face (datasets.<name>.hub) fetches no raw files: its prepare job
# loads it by name. The source is checked here, before the first job.
for _name, _settings in config["datasets"].items():
    if _settings["hub"]:
        check_hub_source(_settings["hub"], f"datasets.{_name}.hub")


def raw_files(dataset):
    if config["datasets"][dataset]["hub"]:
        return []
    names = config["datasets"][dataset]["files"]
    return [spec["name"] for spec in dataset_files(dataset, names)]


def healthbench_files(role):
    """Raw HealthBench files by role. Top-up files are read only under the top_up policy, and
    only from a mirror, the one place they exist (see the schema)."""
    settings = config["datasets"]["healthbench"]
    if role == "item_files" and settings["hub"]:
        return []
    if role == "top_up_files" and (
        settings["short_theme"] != "top_up" or not config["data_mirror"]
    ):
        return []
    return [f"data/raw/healthbench/{name}" for name in settings[role]]


def recon_generator_fingerprint():
    package = files("rubriclab")
    return tree_fingerprint(package / "recon", package / "resources" / "recon")


def carry_code_fingerprint():
    return tree_fingerprint(files("rubriclab") / "carry")


def transfer_code_fingerprint():
    return tree_fingerprint(files("rubriclab") / "transfer")


def verify_code_fingerprint():
    return tree_fingerprint(files("rubriclab") / "verify")


def judge_group(wildcards):
    """`judge`, the group of the small judge jobs (carry_fig2_judge, verify_judge_labels,
    verify_reply_rubric: none needs another, so each is a component of its own), where the
    profile's group-components of them fit cluster.max_runtime_min one after another; else no
    group. Read when the DAG is built: the profile's group settings arrive after the Snakefile.
    """
    return group_within(
        "judge",
        model_resources(JUDGE, "judge")["runtime"],
        workflow.group_settings.group_components.get("judge", 1),
        config["cluster"]["max_runtime_min"],
    )


def model_resources(model, role):
    """The embedded model is one slot per machine. An API job reserves its concurrency from
    the profile's `api_calls` (open connections on the machine), a pool large enough that it
    does not hold API jobs back: the rate each model is called at is set by its provider's
    limits (llm.per_model.<model>.requests_per_minute, tokens_per_minute), which every job
    of the run shares through the model layer (rubriclab.llm.ratelimit). Both are per machine
    (the Snakefile's resource_scopes). mem_mb and runtime (minutes) are what a cluster executor
    asks for (rubriclab.sizing, docs/cluster.md).
    """
    size = model_job_size(
        _LLM_CONFIG, model, role, config["cluster"]["max_runtime_min"]
    )
    if provider_for(model).embedded:
        return {"local_llm": 1, "api_calls": 0, **size}
    if not provider_for(model).remote:
        return {"local_llm": 0, "api_calls": 0, **size}
    settings = {
        **config["llm"]["defaults"],
        **config["llm"]["per_model"].get(model, {}),
    }
    return {"local_llm": 0, "api_calls": settings.get("concurrency", 4), **size}


# A job that calls no model (rubriclab.sizing).
SMALL_JOB = small_job_size()


_LLM_CONFIG = LLMConfig.from_dict(config["llm"])
LABELS = ModelLabels(config["labels"], stand_ins=config["stand_ins"])


def labels_of(models):
    """{model string: display label} of every model in a {role: model or list} map: a param of
    each figure and table rule, so renaming a model redraws exactly what shows it."""
    flat = [
        m
        for value in models.values()
        for m in ([value] if isinstance(value, str) else value)
    ]
    return LABELS.mapping(flat)


def recorded_provenance(wildcards, output):
    """The provenance its job wrote beside the output (a param that reads an output is not
    compared for reruns): the report renders captions from it, not from the report's config.
    Its strings are escaped for the caption's reStructuredText (rubriclab.markup).
    """
    return caption_record(read_provenance(output.provenance))


_CALLS_CHECKED = set()


def call_settings(role, model):
    """What the model layer adds to a role's requests of `model` (reasoning effort, room for
    reasoning): a param of each model rule, so changing them reruns exactly those jobs. A
    setting the model cannot take (a reasoning effort litellm would refuse) stops the run
    here, before the first job.
    """
    if (role, model) not in _CALLS_CHECKED:
        check_call_settings(_LLM_CONFIG, role, model)
        _CALLS_CHECKED.add((role, model))
    return {
        "role": role,
        "reasoning_effort": _LLM_CONFIG.role_settings_for(role, model).reasoning_effort,
        "reasoning_tokens": _LLM_CONFIG.settings_for(model).reasoning_tokens,
    }


def ledger_files():
    return [
        *expand(
            "results/ledger/carry_fig2_judge-{dataset}.jsonl",
            dataset=config["carry"]["fig2"]["datasets"],
        ),
        *expand("results/ledger/verify_judge_labels-{dataset}.jsonl", dataset=DATASETS),
        "results/ledger/verify_agent_trials.jsonl",
        "results/ledger/verify_reply_rubric.jsonl",
        *carry_ledger_files(),
        *transfer_ledger_files(),
    ]


def verdict_browser_input(wildcards):
    """Every verdict table of the run, what labels and names its rows, the items' texts, and
    the judging rules' ledgers (what they recorded of answers that never parsed)."""
    carry = [(d, slug) for d in CARRY_DATASETS for slug in carry_judges_on(d)]
    return {
        "fig2": expand(
            "results/carry/fig2/{dataset}/verdicts.csv", dataset=FIG2_DATASETS
        ),
        "fig2_checklists": [
            f"results/carry/rubrics/{'own' if d in OWN_DATASETS else 'generic'}/{d}.json"
            for d in FIG2_DATASETS
        ],
        "verify": expand(
            "results/verify/judge_labels/{dataset}/verdicts.csv", dataset=DATASETS
        ),
        "verify_checklists": expand(
            "results/carry/rubrics/generic/{dataset}.json", dataset=DATASETS
        ),
        # The items' texts, shown beside their verdicts.
        "fig2_items": expand("data/prepared/{dataset}.csv", dataset=FIG2_DATASETS),
        "verify_items": expand("data/prepared/{dataset}.csv", dataset=DATASETS),
        "transfer_responses": expand(
            "results/transfer/responses/{name}.csv", name=transfer_response_files()
        ),
        "carry": [f"results/carry/judged/{d}/{slug}/verdicts.csv" for d, slug in carry],
        "carry_items": expand("results/carry/items/{d}.csv", d=CARRY_DATASETS),
        "carry_starts": [
            f"results/carry/rubrics/{d}/{source}.json"
            for d in CARRY_DATASETS
            for source in carry_start_sources(d)
        ],
        "transfer": expand(
            "results/transfer/verdicts/{name}.csv", name=transfer_response_files()
        ),
        "ledgers": [
            *expand(
                "results/ledger/carry_fig2_judge-{dataset}.jsonl", dataset=FIG2_DATASETS
            ),
            *expand(
                "results/ledger/verify_judge_labels-{dataset}.jsonl", dataset=DATASETS
            ),
            *[f"results/ledger/carry_judge-{d}-{slug}.jsonl" for d, slug in carry],
            *expand(
                "results/ledger/transfer_judge-{name}.jsonl",
                name=transfer_response_files(),
            ),
        ],
    }


def all_targets():
    return [
        *expand("data/prepared/{dataset}.csv", dataset=DATASETS + ["healthbench"]),
        *expand("figures/carry/fig2_checklist_length.{ext}", ext=["png", "pdf", "csv"]),
        *expand("figures/carry/table1_shapley_example.{ext}", ext=["md", "csv"]),
        *carry_targets(),
        *transfer_targets(),
        *expand("figures/verify/fig2_calibration.{ext}", ext=["png", "pdf"]),
        *expand("figures/verify/table_calibration.{ext}", ext=["md", "csv"]),
        *own_data_targets(),
        "figures/data_summary.md",
        "figures/cost_report.md",
        "figures/replication.md",
        "figures/verdicts.html",
        "results/effective_config.yaml",
    ]


# --- carry: rubric sources, self-review chains, judges, gates --------------------------------

CARRY_DATASETS = ["recon", "summedits", "ragtruth"]
CARRY_JUDGES = config["carry"]["judges"] or [JUDGE]
if JUDGE not in CARRY_JUDGES:
    raise ValueError(
        f"config key 'carry.judges': the main judge models.judge ({JUDGE!r}) "
        f"must be one of them, got {CARRY_JUDGES}"
    )
GENERATOR = config["models"]["generator"]
REVISER = config["models"]["reviser"]
REVISERS = config["models"]["revisers"] or [REVISER]
if REVISER not in REVISERS:
    raise ValueError(
        f"config key 'models.revisers': the main reviser models.reviser ({REVISER!r}) "
        f"must be one of them, got {REVISERS}"
    )


CARRY_MODELS = {
    "judge": JUDGE,
    "judges": CARRY_JUDGES,
    "reviser": REVISER,
    "revisers": REVISERS,
    "generator": GENERATOR,
}
JUDGE_BY_SLUG = {model_slug(model): model for model in CARRY_JUDGES}
MAIN_JUDGE_SLUG = model_slug(JUDGE)
# Judge slugs per carry dataset (rubriclab.carry.chains.planned_judges: carry.all_judges_on).
CARRY_JUDGES_ON = planned_judges(
    CARRY_DATASETS,
    list(JUDGE_BY_SLUG),
    MAIN_JUDGE_SLUG,
    config["carry"]["all_judges_on"],
)


def carry_judges_on(dataset):
    """Slugs of the judges that judge a carry dataset."""
    return list(CARRY_JUDGES_ON[dataset])


AGREEMENT_DATASETS = agreement_datasets(CARRY_JUDGES_ON, list(JUDGE_BY_SLUG))
REVISER_BY_SLUG = {model_slug(model): model for model in REVISERS}
MAIN_REVISER_SLUG = model_slug(REVISER)


check_chain_config(config["carry"])


def carry_chains(dataset):
    """(reviser slug, source, mode, seed) of every chain of the dataset: every reviser runs
    carry.chains.<dataset>.chains, the main reviser also its main_reviser_chains."""
    return planned_chains(
        config["carry"]["chains"][dataset],
        config["carry"]["chains"]["seeds"],
        list(REVISER_BY_SLUG),
        MAIN_REVISER_SLUG,
    )


def paper_chains(dataset):
    """The paper's chains of a dataset ("<source>:<mode>"): every reviser runs each."""
    return config["carry"]["chains"][dataset]["chains"]


def carry_chain_files(dataset, reviser=None):
    """Chain records of the dataset (of one reviser slug, or of all)."""
    return [
        f"results/carry/chains/{dataset}/{slug}/{source}-{mode}-seed{seed}.json"
        for slug, source, mode, seed in carry_chains(dataset)
        if reviser is None or slug == reviser
    ]


def carry_start_sources(dataset):
    return sorted(
        {source for _, source, _, _ in carry_chains(dataset)}
        | (
            {"hand", "generated", "label"}
            if dataset == "recon"
            else {"generated", "label"}
        )
    )


def carry_judge_files(dataset, name):
    return expand(
        "results/carry/judged/{dataset}/{judge}/{name}",
        dataset=dataset,
        judge=carry_judges_on(dataset),
        name=name,
    )


def carry_ledger_files():
    files = []
    for dataset in CARRY_DATASETS:
        files += [
            f"results/ledger/carry_rubric-{dataset}-{source}.jsonl"
            for source in carry_start_sources(dataset)
            if source != "hand"
        ]
        files += [
            f"results/ledger/carry_chain-{dataset}-{reviser}-{source}-{mode}-seed{seed}.jsonl"
            for reviser, source, mode, seed in carry_chains(dataset)
        ]
        files += [
            f"results/ledger/carry_judge-{dataset}-{judge}.jsonl"
            for judge in carry_judges_on(dataset)
        ]
    return files


CARRY_FIGURES = [
    "fig1_strictness",
    "fig3_accuracy_vs_flawed_share",
    "fig4_self_review_drift",
    "fig5_attribution_by_origin",
    "fig6_gated_quality",
]
CARRY_TABLES = [
    "table2_gate_replay",
    "table3_gates_human_labeled",
    "table4_recon_failing_checks",
    "table5_ragtruth_failing_checks",
    # what the paper's outputs leave out: every chain of the run
    "table2_supplement",
    "table3_supplement",
    "fig5b_supplement",
    "fig6_supplement",
]


def carry_targets():
    return [
        *expand(
            "figures/carry/{figure}.{ext}", figure=CARRY_FIGURES, ext=["png", "pdf"]
        ),
        *expand("figures/carry/{table}.{ext}", table=CARRY_TABLES, ext=["md", "csv"]),
        *expand(
            "figures/carry/table_gate_agreement{part}",
            part=[".md", ".csv", "_splits.csv"],
        ),
    ]


def carry_items_input(wildcards):
    if wildcards.cdataset == "recon":
        return {
            "reports": "data/prepared/recon/reports_recon108.csv",
            "recon72": "data/prepared/recon/reports_recon72.csv",
        }
    return {"table": f"data/prepared/{wildcards.cdataset}.csv"}


def report_item(path, caption, category, subcategory):
    """A report() flag with its category and subcategory (a string, or a function of the job's
    wildcards) and, in an ablation (base_run), a label saying whether the item is copied from
    the base run (rubriclab.report_items)."""
    return report(
        path,
        caption=f"../report/{caption}",
        category=category,
        subcategory=subcategory,
        labels=lambda wildcards: made_by(
            path.format(**dict(wildcards.items())), config.get("base_run")
        ),
    )


def paper_item_of(wildcard):
    """The subcategory of a figure or table named by `wildcard`: "Figure 3", "Table A.4"."""
    return lambda wildcards: paper_item(wildcards[wildcard])


def carry_report(path, caption, wildcard):
    # One caption file per rule: it picks the figure's or table's text by wildcard (Jinja).
    return report_item(path, caption, "carry", paper_item_of(wildcard))


# --- transfer: HealthBench rubric generation, interventions, baselines -------------------------

TRANSFER = config["transfer"]
T_JUDGE = TRANSFER["judge"] or JUDGE
T_RESTATER = TRANSFER["restater"] or T_JUDGE
T_MATCHER = TRANSFER["matcher"] or T_JUDGE
T_GENERATORS = TRANSFER["generators"]
T_RESPONSE_MODEL = TRANSFER["response_model"]
T_IT_MODELS = TRANSFER["it_response_models"] or [T_RESPONSE_MODEL]
T_DEGRADATION_MODELS = TRANSFER["degradation_models"] or [TRANSFER["degrader"]]
if T_RESPONSE_MODEL not in T_IT_MODELS:
    raise ValueError(
        "config key 'transfer.it_response_models' must include "
        f"transfer.response_model ({T_RESPONSE_MODEL!r})"
    )
if TRANSFER["degrader"] not in T_DEGRADATION_MODELS:
    raise ValueError(
        "config key 'transfer.degradation_models' must include "
        f"transfer.degrader ({TRANSFER['degrader']!r})"
    )


def responder(entry):
    """'model' or 'model@k' -> 'model|k' (the responder id the pipeline uses)."""
    model, _, sample = entry.partition("@")
    if sample and not sample.isdigit():
        raise ValueError(
            f"config key 'transfer.panel': {entry!r}: the part after '@' must be a "
            "sample index"
        )
    return f"{model}|{int(sample or 0)}"


T_PANEL = [responder(entry) for entry in TRANSFER["panel"]]
T_PANELS = {
    "all": T_PANEL,
    **{
        name: [responder(e) for e in entries]
        for name, entries in TRANSFER["panel_choices"].items()
    },
}
for _name, _members in T_PANELS.items():
    _unknown = sorted(set(_members) - set(T_PANEL))
    if _unknown:
        raise ValueError(
            f"config key 'transfer.panel_choices.{_name}': {_unknown} are not in "
            "transfer.panel"
        )
T_RESPONDERS = list(
    dict.fromkeys(
        [f"{m}|0" for m in T_IT_MODELS]
        + T_PANEL
        + [f"{m}|0" for m in T_DEGRADATION_MODELS]
    )
)
RESPONDER_BY_SLUG = {model_slug(r): r for r in T_RESPONDERS}
T_GENERATOR_BY_SLUG = {model_slug(g): g for g in T_GENERATORS}
T_MODEL_BY_SLUG = {
    model_slug(m): m for m in set(T_IT_MODELS) | set(T_DEGRADATION_MODELS)
}


TRANSFER_MODELS = {
    "judge": T_JUDGE,
    "restater": T_RESTATER,
    "matcher": T_MATCHER,
    "generators": T_GENERATORS,
    "response_model": T_RESPONSE_MODEL,
    "it_response_models": T_IT_MODELS,
    "degrader": TRANSFER["degrader"],
    "degradation_models": T_DEGRADATION_MODELS,
    "panel": T_PANEL,
}
VERIFY_MODELS = {"judge": JUDGE, "agent": AGENT}
LABELS.check_distinct(
    [*labels_of(CARRY_MODELS), *labels_of(TRANSFER_MODELS), *labels_of(VERIFY_MODELS)]
)


def transfer_response_files():
    """Stem of every responses table the judge scores."""
    return (
        ["physician"]
        + [f"original-{slug}" for slug in RESPONDER_BY_SLUG]
        + [f"degraded-{model_slug(m)}" for m in T_DEGRADATION_MODELS]
        + [f"interventions-{model_slug(m)}" for m in T_IT_MODELS]
    )


def transfer_ledger_files():
    return (
        ["results/ledger/transfer_restate.jsonl"]
        + [
            f"results/ledger/transfer_generate-{slug}.jsonl"
            for slug in T_GENERATOR_BY_SLUG
        ]
        + [
            f"results/ledger/transfer_respond-{slug}.jsonl"
            for slug in RESPONDER_BY_SLUG
        ]
        + [
            f"results/ledger/transfer_degrade-{model_slug(m)}.jsonl"
            for m in T_DEGRADATION_MODELS
        ]
        + [
            f"results/ledger/transfer_intervene-{model_slug(m)}.jsonl"
            for m in T_IT_MODELS
        ]
        + [
            f"results/ledger/transfer_judge-{name}.jsonl"
            for name in transfer_response_files()
        ]
        + [
            f"results/ledger/transfer_match-{slug}.jsonl"
            for slug in T_GENERATOR_BY_SLUG
        ]
    )


TRANSFER_FIGURES = [
    "fig4_existing_approaches",
    "fig5_interventional_transfer",
    "fig6_criteria_level",
    "figA1_matching_framings",
    "figA2_panel_sensitivity",
    "figA4_by_response_model",
]
TRANSFER_TABLES = [
    "tableA4_existing_paired_differences",
    "tableA5_degradation",
    "tableA6_similarity_pass_fail",
    "tableA7_similarity_cutoffs",
    "tableA8_it_paired_differences",
    "tableA9_edit_sizes",
]


def transfer_targets():
    return [
        *expand(
            "figures/transfer/{figure}.{ext}",
            figure=TRANSFER_FIGURES,
            ext=["png", "pdf"],
        ),
        *expand(
            "figures/transfer/{table}.{ext}", table=TRANSFER_TABLES, ext=["md", "csv"]
        ),
    ]


def transfer_report(path, caption, wildcard):
    # One caption file per rule: it picks the figure's or table's text by wildcard (Jinja).
    return report_item(path, caption, "transfer", paper_item_of(wildcard))


def plan_files(_wildcards):
    """The plan `rubriclab plan` wrote for a run in this folder, if there is one: the cost
    report puts the bill beside it (when it was made for this same config)."""
    made = os.path.exists("results/plan/plan.csv") and os.path.exists(
        "results/plan/plan.json"
    )
    return {
        "plan": ["results/plan/plan.csv"] if made else [],
        "plan_digest": ["results/plan/plan.json"] if made else [],
    }
