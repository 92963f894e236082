# Configuration: environment overrides, schema validation with defaults, and helpers shared by
# every rule file. Secrets never appear here: API keys are read from the environment in src/.
import hashlib
import re
from importlib.resources import files

from rubriclab.carry.prompts import template_fingerprint as judge_prompt_fingerprint
from rubriclab.config import apply_env_overrides, load_yaml, validate_config
from rubriclab.data.download import dataset_files
from rubriclab.files import tree_fingerprint


_schema = load_yaml(workflow.source_path("../schemas/config.schema.yaml"))
_validated = validate_config(apply_env_overrides(config), _schema)
config.clear()
config.update(_validated)

DATASETS = ["summedits", "ragtruth"]  # human-labelled: items with correct / flawed labels
RAW_DATASETS = DATASETS + ["healthbench"]
JUDGE = config["models"]["judge"]
AGENT = config["models"]["agent"]
# The generic checklists ship with the package; as an input, an edit to them reruns what follows.
GENERIC_CHECKLISTS = str(files("rubriclab") / "resources" / "checklists" / "generic.yaml")
TABLE1_EXAMPLE = str(files("rubriclab") / "resources" / "carry" / "table1_example.yaml")

# API keys are deliberately not declared as `envvars:`: a run served entirely from the cache
# (for example from an imported cache file) needs no key. The model layer checks the key of each
# model it is about to call, before its first call, and names the missing variable.


def raw_files(dataset):
    names = config["datasets"][dataset]["files"]
    return [spec["name"] for spec in dataset_files(dataset, names)]


def healthbench_files(role):
    """Raw HealthBench files by role. Top-up files are read only under the top_up policy, and
    only from a mirror, the one place they exist (see the schema)."""
    settings = config["datasets"]["healthbench"]
    if role == "top_up_files" and (settings["short_theme"] != "top_up" or not config["data_mirror"]):
        return []
    return [f"data/raw/healthbench/{name}" for name in settings[role]]


def recon_generator_fingerprint():
    package = files("rubriclab")
    return tree_fingerprint(package / "recon", package / "resources" / "recon")


def carry_code_fingerprint():
    return tree_fingerprint(files("rubriclab") / "carry")


def verify_code_fingerprint():
    return tree_fingerprint(files("rubriclab") / "verify")


def model_resources(model):
    """The embedded model is one slot per machine; API models draw on a global call budget."""
    if model.startswith("local/"):
        return {"local_llm": 1, "api_calls": 0}
    if model.startswith("fake/"):
        return {"local_llm": 0, "api_calls": 0}
    settings = {**config["llm"]["defaults"], **config["llm"]["per_model"].get(model, {})}
    return {"local_llm": 0, "api_calls": settings.get("concurrency", 4)}


def ledger_files():
    return [
        *expand("results/ledger/carry_fig2_judge-{dataset}.jsonl",
                dataset=config["carry"]["fig2"]["datasets"]),
        *expand("results/ledger/verify_judge_labels-{dataset}.jsonl", dataset=DATASETS),
        "results/ledger/verify_agent_trials.jsonl",
        "results/ledger/verify_reply_rubric.jsonl",
        *carry_ledger_files(),
    ]


def all_targets():
    return [
        *expand("data/prepared/{dataset}.csv", dataset=DATASETS + ["healthbench"]),
        *expand("figures/carry/fig2_checklist_length.{ext}", ext=["png", "pdf", "csv"]),
        *expand("figures/carry/table1_shapley_example.{ext}", ext=["md", "csv"]),
        *carry_targets(),
        *expand("figures/verify/fig2_calibration.{ext}", ext=["png", "pdf"]),
        *expand("figures/verify/table_calibration.{ext}", ext=["md", "csv"]),
        "figures/data_summary.md",
        "figures/cost_report.md",
    ]


# --- carry: rubric sources, self-review chains, judges, gates --------------------------------

CARRY_DATASETS = ["recon", "summedits", "ragtruth"]
CARRY_JUDGES = config["carry"]["judges"] or [JUDGE]
if JUDGE not in CARRY_JUDGES:
    raise ValueError(f"config key 'carry.judges': the main judge models.judge ({JUDGE!r}) "
                     f"must be one of them, got {CARRY_JUDGES}")
GENERATOR = config["models"]["generator"]
REVISER = config["models"]["reviser"]


def model_slug(model):
    """A file-name-safe, readable, unique name for a model string."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model) + "-" + hashlib.sha256(model.encode()).hexdigest()[:6]


JUDGE_BY_SLUG = {model_slug(model): model for model in CARRY_JUDGES}
MAIN_JUDGE_SLUG = model_slug(JUDGE)


def carry_chains(dataset):
    """(source, mode, seed) of every chain of the dataset."""
    plan = config["carry"]["chains"][dataset]
    return [(*entry.split(":"), seed) for entry in plan["chains"]
            for seed in config["carry"]["chains"]["seeds"]]


def carry_chain_files(dataset):
    return [f"results/carry/chains/{dataset}/{source}-{mode}-seed{seed}.json"
            for source, mode, seed in carry_chains(dataset)]


def carry_start_sources(dataset):
    return sorted({source for source, _, _ in carry_chains(dataset)}
                  | ({"hand", "generated", "label"} if dataset == "recon" else {"generated", "label"}))


def carry_judge_files(dataset, name):
    return expand("results/carry/judged/{dataset}/{judge}/{name}", dataset=dataset,
                  judge=list(JUDGE_BY_SLUG), name=name)


def carry_ledger_files():
    files = []
    for dataset in CARRY_DATASETS:
        files += [f"results/ledger/carry_rubric-{dataset}-{source}.jsonl"
                  for source in carry_start_sources(dataset) if source != "hand"]
        files += [f"results/ledger/carry_chain-{dataset}-{source}-{mode}-seed{seed}.jsonl"
                  for source, mode, seed in carry_chains(dataset)]
        files += carry_judge_files(dataset, "ledger.jsonl")
    return files


CARRY_FIGURES = ["fig1_strictness", "fig3_accuracy_vs_flawed_share", "fig4_self_review_drift",
                 "fig5_attribution_by_origin", "fig6_gated_quality"]
CARRY_TABLES = ["table2_gate_replay", "table3_gates_human_labeled", "table4_recon_failing_checks",
                "table5_ragtruth_failing_checks"]


def carry_targets():
    return [
        *expand("figures/carry/{figure}.{ext}", figure=CARRY_FIGURES, ext=["png", "pdf"]),
        *expand("figures/carry/{table}.{ext}", table=CARRY_TABLES, ext=["md", "csv"]),
    ]
