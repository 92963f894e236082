import copy

import pytest

from rubriclab.config import ConfigError, apply_env_overrides, load_yaml, validate_config
from rubriclab.llm import LLMConfig


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_configs_validate_and_their_llm_blocks_load(repo, schema, name):
    config = validate_config(load_yaml(repo / "config" / name), schema)
    llm = LLMConfig.from_dict(config["llm"], cache_dir=config["cache_dir"])
    assert llm.settings_for(config["models"]["judge"]).concurrency >= 1


def test_defaults_are_filled_in(schema, embedded):
    del embedded["carry"]["fig2"]["runs"]
    del embedded["llm"]["progress_interval_s"]
    config = validate_config(embedded, schema)
    assert config["carry"]["fig2"]["runs"] == 2
    assert config["llm"]["progress_interval_s"] == 5


@pytest.mark.parametrize("path, value, named", [
    (("carry", "fig2", "runs"), "two", "carry.fig2.runs"),
    (("carry", "fig2", "lengths"), [3, 11], "carry.fig2.lengths[1]"),
    (("datasets", "summedits", "evaluation", "correct"), -1, "datasets.summedits.evaluation.correct"),
    (("llm", "per_model", "local/default", "concurrency"), 0,
     "llm.per_model.local/default.concurrency"),
    (("models", "judge"), 42, "models.judge"),
    (("carry", "recon", "gate_evidence"), "calibration", "carry.recon.gate_evidence"),
])
def test_a_bad_value_is_named_by_its_key(schema, embedded, path, value, named):
    broken = copy.deepcopy(embedded)
    target = broken
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(ConfigError) as error:
        validate_config(broken, schema)
    assert f"config key '{named}'" in str(error.value)


def test_the_gate_evidence_key_names_the_readings_it_takes(schema, embedded):
    assert validate_config(embedded, schema)["carry"]["recon"]["gate_evidence"] == "own_reports"
    embedded["carry"]["recon"]["gate_evidence"] = "calibration"
    with pytest.raises(ConfigError) as error:
        validate_config(embedded, schema)
    assert ("config key 'carry.recon.gate_evidence': 'calibration' is not one of "
            "['own_reports', 'calibration_environments']") in str(error.value)


def test_every_violation_is_one_line_naming_its_key(schema, embedded):
    embedded["carry"]["fig2"]["runs"] = "two"
    embedded["verify"]["trials"] = 0
    with pytest.raises(ConfigError) as error:
        validate_config(embedded, schema)
    lines = str(error.value).splitlines()
    assert lines[1:] == ["  config key 'carry.fig2.runs': 'two' is not of type 'integer'",
                         "  config key 'verify.trials': 0 is less than the minimum of 1"]


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "sparse"])
def test_the_defaults_are_those_snakemakes_validator_fills(repo, schema, embedded, name):
    """validate_config stands beside snakemake.utils.validate(set_default=True) for its error
    messages only (see rubriclab.config): the completed configs are the same."""
    from snakemake.utils import validate

    if name == "sparse":  # every optional section left to the schema
        config = {key: embedded[key] for key in ("models", "datasets")}
        config["carry"] = {"fig2": {}, "chains": embedded["carry"]["chains"]}  # required
    else:
        config = load_yaml(repo / "config" / name)
    theirs = copy.deepcopy(config)
    validate(theirs, str(repo / "workflow/schemas/config.schema.yaml"), set_default=True)
    ours = validate_config(config, schema)
    assert ours == theirs
    assert len(ours) > len(config) or name != "sparse"


def test_a_hub_source_must_pin_a_commit(schema, embedded):
    embedded["datasets"]["summedits"]["hub"] = {"name": "someone/summedits", "revision": "main",
                                                "split": "test"}
    with pytest.raises(ConfigError, match=r"config key 'datasets.summedits.hub.revision': 'main' "
                                          r"does not match"):
        validate_config(embedded, schema)
    embedded["datasets"]["summedits"]["hub"]["revision"] = "ab" * 20
    assert validate_config(embedded, schema)["datasets"]["summedits"]["hub"]["revision"] == "ab" * 20
    assert validate_config(embedded, schema)["datasets"]["ragtruth"]["hub"] is None


def test_an_unknown_key_is_named(schema, embedded):
    embedded["carry"]["fig2"]["runz"] = 3
    with pytest.raises(ConfigError, match=r"config key 'carry.fig2'.*'runz' was unexpected"):
        validate_config(embedded, schema)


def test_a_missing_required_key_is_named(schema, embedded):
    del embedded["models"]["judge"]
    with pytest.raises(ConfigError, match=r"config key 'models.judge' is missing; it has no "
                                          r"default, so the config must give it"):
        validate_config(embedded, schema)


def test_data_mirror_comes_from_the_environment_only_when_config_leaves_it_unset():
    env = {"RUBRICLAB_DATA_MIRROR": "/mirror"}
    assert apply_env_overrides({"data_mirror": None}, env)["data_mirror"] == "/mirror"
    assert apply_env_overrides({"data_mirror": "/mine"}, env)["data_mirror"] == "/mine"
    assert apply_env_overrides({"data_mirror": None}, {})["data_mirror"] is None


def test_unknown_model_setting_in_llm_block_is_named():
    with pytest.raises(ValueError, match=r"llm.per_model\['x/y'\]: unknown model setting"):
        LLMConfig.from_dict({"per_model": {"x/y": {"concurency": 2}}})


def _leaves(tree, prefix=()):
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from _leaves(value, prefix + (key,))
    else:
        yield prefix, tree


def _get(tree, path):
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return KeyError
        tree = tree[key]
    return tree


def effective_config(repo, tmp_path, *configfiles):
    """The config a real `snakemake --configfile ...` run validates (rule effective_config)."""
    import sys

    from .snakemake_run import run_snakemake

    result = run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(tmp_path),
         "--cores", "1", "results/effective_config.yaml",
         *(["--configfile", *map(str, configfiles)] if configfiles else [])],
        env={
            k: v for k, v in __import__("os").environ.items() if k != "RUBRICLAB_DATA_MIRROR"})
    assert result.returncode == 0, result.stderr[-3000:]
    return load_yaml(tmp_path / "results" / "effective_config.yaml")


def test_the_paper_config_holds_no_value_that_only_config_yaml_sets(repo, schema, embedded,
                                                                     tmp_path):
    paper = load_yaml(repo / "config" / "paper.yaml")
    effective = effective_config(repo, tmp_path, repo / "config" / "paper.yaml")
    assert effective == validate_config(paper, schema)  # paper.yaml over the schema, alone
    only_embedded = [
        ".".join(path) for path, value in _leaves(embedded)
        if _get(paper, path) is KeyError and _get(effective, path) == value
        and _get(validate_config({"models": {}, "datasets": embedded["datasets"],
                                  "carry": {"fig2": {}}}, schema), path) != value]
    assert only_embedded == []
    # the filters that used to leak from config.yaml into the paper run
    assert effective["transfer"]["max_criteria"] is None
    assert effective["transfer"]["max_conversation_chars"] is None


def test_a_users_own_config_file_stands_alone_too(repo, embedded, tmp_path):
    """A copy of config.yaml without two keys: those keys take the schema's defaults, not
    config.yaml's values."""
    import yaml

    mine = copy.deepcopy(embedded)
    del mine["transfer"]["max_criteria"]
    del mine["llm"]["per_model"]
    own = tmp_path / "mine.yaml"
    own.write_text(yaml.safe_dump(mine))
    effective = effective_config(repo, tmp_path, own)
    assert effective["transfer"]["max_criteria"] is None  # config.yaml says 6
    assert effective["llm"]["per_model"] == {}            # config.yaml tunes local/default
    assert effective["transfer"]["max_conversation_chars"] == 600  # still named in mine


def test_without_a_configfile_the_embedded_default_is_used(repo, embedded, tmp_path):
    effective = effective_config(repo, tmp_path)
    assert effective["transfer"]["max_criteria"] == embedded["transfer"]["max_criteria"] == 6


def test_a_config_of_a_few_keys_is_told_to_name_a_shipped_config_first(schema):
    only_a_reviser = {"models": {"judge": "fake/hash", "reviser": "openai/gpt-4o"}}
    with pytest.raises(ConfigError) as error:
        validate_config(only_a_reviser, schema)
    message = str(error.value)
    assert "config key 'datasets' is missing" in message
    assert "--configfile config/config.yaml yours.yaml" in message
