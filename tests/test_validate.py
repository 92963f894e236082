"""Checks before the first job: --config numbers, unknown keys, model strings, API keys."""

import pytest

from rubriclab.config import ConfigError, load_yaml, validate_config
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.request import Message, Request
from rubriclab.config_schema import coerce_command_line, unknown_keys
from rubriclab.validate import (budget_problems, check_before_first_job, configured_models,
                                key_problems, missing_keys, model_problems)

PROVIDERS = ["openai", "anthropic", "ollama", "hosted_vllm"]


def test_nested_command_line_numbers_are_read_as_numbers(schema, embedded):
    # What snakemake --config carry="{fig2: {runs: 2, lengths: [3, 5]}}" hands the Snakefile.
    given = {"carry": {"fig2": {"runs": "2", "lengths": ["3", "5"], "temperature": "0.5"}},
             "models": {"judge": "123"}}
    merged = {**embedded, "carry": {**embedded["carry"],
                                    "fig2": {**embedded["carry"]["fig2"], **given["carry"]["fig2"]}},
              "models": {**embedded["models"], "judge": "123"}}
    coerced = coerce_command_line(merged, given, schema)
    assert coerced["carry"]["fig2"]["runs"] == 2
    assert coerced["carry"]["fig2"]["lengths"] == [3, 5]
    assert coerced["carry"]["fig2"]["temperature"] == 0.5
    assert coerced["models"]["judge"] == "123"  # a string where the schema wants one
    validate_config(coerced, schema)
    assert merged["carry"]["fig2"]["runs"] == "2"  # the input is left as it was


def test_strings_from_config_files_are_left_as_written(schema, embedded):
    embedded["carry"]["fig2"]["runs"] = "2"
    coerced = coerce_command_line(embedded, {}, schema)
    assert coerced["carry"]["fig2"]["runs"] == "2"
    with pytest.raises(ConfigError, match="config key 'carry.fig2.runs': '2' is not of type"):
        validate_config(coerced, schema)


def test_a_word_where_a_number_belongs_still_fails_naming_the_key(schema, embedded):
    embedded["carry"]["fig2"]["runs"] = "two"
    coerced = coerce_command_line(embedded, {"carry": {"fig2": {"runs": "two"}}}, schema)
    with pytest.raises(ConfigError, match="config key 'carry.fig2.runs': 'two' is not of type"):
        validate_config(coerced, schema)


def test_unknown_keys_get_the_closest_known_key(schema, embedded):
    embedded["carry"]["fig2"]["rnus"] = 3
    embedded["modles"] = {}
    embedded["llm"]["per_model"]["local/default"]["concurency"] = 2
    embedded["zzz_qqq"] = 1
    problems = unknown_keys(embedded, schema)
    assert "config key 'carry.fig2.rnus' is not a setting; did you mean 'carry.fig2.runs'?" in problems
    assert "config key 'modles' is not a setting; did you mean 'models'?" in problems
    assert ("config key 'llm.per_model.local/default.concurency' is not a setting; did you mean "
            "'llm.per_model.local/default.concurrency'?") in problems
    (far,) = [p for p in problems if "zzz_qqq" in p]
    assert "known here:" in far and "carry" in far
    assert len(problems) == 4


def test_the_shipped_configs_have_no_unknown_keys_and_callable_models(repo, schema):
    for name in ("config.yaml", "paper.yaml"):
        config = validate_config(load_yaml(repo / "config" / name), schema)
        assert unknown_keys(config, schema) == []
        assert model_problems(configured_models(config)) == []  # litellm's own provider list


def test_configured_models_name_the_key_of_each_model(schema, embedded):
    embedded["models"]["revisers"] = ["local/default", "fake/hash?salt=b"]
    embedded["transfer"]["panel"] = ["local/default@0", "openai/gpt-4o@1"]
    models = configured_models(validate_config(embedded, schema))
    assert models["local/default"] == "models.judge"
    assert models["fake/hash?salt=b"] == "models.revisers[1]"
    assert models["openai/gpt-4o"] == "transfer.panel[1]"


def test_model_strings_without_a_known_provider_are_refused_one_line_each():
    asked = []

    def providers():
        asked.append(1)
        return PROVIDERS

    problems = model_problems({"gpt4o": "models.judge", "opnai/gpt-4o": "models.reviser",
                               "nosuchprovider/x": "carry.judges[1]", "openai/gpt-4o": "models.agent",
                               "fake/maybe": "models.generator", "local/default": "transfer.judge"},
                              providers=providers)
    assert len(problems) == 4 and all("\n" not in p for p in problems)
    assert problems[0].startswith("config key 'models.judge': model 'gpt4o' has no provider prefix")
    assert problems[1].endswith("litellm knows no provider 'opnai'; did you mean 'openai/gpt-4o'?")
    assert problems[2] == ("config key 'carry.judges[1]': model 'nosuchprovider/x': litellm knows "
                           "no provider 'nosuchprovider'")
    assert problems[3].startswith("config key 'models.generator': unknown fake model")
    assert len(asked) == 1


def test_own_models_need_no_litellm():
    def providers():
        raise AssertionError("litellm imported for fake/ and local/ models")

    assert model_problems({"fake/hash": "models.judge", "local/default": "models.agent"},
                          providers=providers) == []


def test_litellm_provider_list_knows_the_usual_providers():
    from rubriclab.validate import provider_list

    known = provider_list()
    assert {"openai", "anthropic", "ollama", "hosted_vllm"} <= set(known)


def test_a_model_without_its_key_stops_the_run_unless_the_cache_holds_its_answers():
    models = {"openai/gpt-4o": "models.judge", "anthropic/claude": "models.reviser",
              "openai/gpt-4o-mini": "models.agent", "fake/hash": "models.generator"}
    missing = {"openai/gpt-4o": ["OPENAI_API_KEY"], "anthropic/claude": ["ANTHROPIC_API_KEY"],
               "openai/gpt-4o-mini": []}
    errors, warnings = missing_keys(models, missing.__getitem__, cached_models=["anthropic/claude"])
    assert errors == ["model 'openai/gpt-4o' (models.judge) needs OPENAI_API_KEY in the "
                      "environment, and the cache holds no answer of it"]
    assert len(warnings) == 1 and warnings[0].startswith(
        "model 'anthropic/claude' (models.reviser) has no ANTHROPIC_API_KEY")


def _cached_answer(cache_dir, model):
    request = Request(model=model, messages=(Message("user", "hi"),), response_format="text")
    with SQLiteCache(cache_dir / "llm_cache.sqlite") as cache:
        cache.put(make_answer("k" * 64, request, "hello", 1, 1, 0.0))


def test_key_check_reads_litellm_and_the_cache(schema, embedded, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    embedded["models"]["judge"] = "openai/gpt-4o"
    embedded["carry"]["judges"] = None
    embedded["cache_dir"] = str(tmp_path)
    config = validate_config(embedded, schema)
    errors, _ = key_problems(config)
    assert len(errors) == 1 and "OPENAI_API_KEY" in errors[0]
    assert not (tmp_path / "llm_cache.sqlite").exists()  # a missing cache is not created

    _cached_answer(tmp_path, "openai/gpt-4o")
    errors, warnings = key_problems(config)
    assert errors == [] and "OPENAI_API_KEY" in warnings[0]

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert key_problems(config) == ([], [])


def test_no_key_check_for_a_server_that_needs_none(schema, embedded, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedded["models"]["judge"] = "openai/my-vllm-model"
    embedded["carry"]["judges"] = None
    embedded["cache_dir"] = str(tmp_path)
    embedded["llm"]["per_model"]["openai/my-vllm-model"] = {"check_api_key": False}
    assert key_problems(validate_config(embedded, schema)) == ([], [])


def test_check_before_first_job_raises_one_line_per_model(schema, embedded, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedded["models"]["judge"] = "openai/gpt-nonexistent"
    embedded["carry"]["judges"] = None
    embedded["cache_dir"] = str(tmp_path)
    with pytest.raises(ConfigError) as caught:
        check_before_first_job(validate_config(embedded, schema), warn=print)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and "'openai/gpt-nonexistent' (models.judge) needs OPENAI_API_KEY" in lines[1]


def test_only_the_models_of_the_jobs_about_to_run_are_checked(schema, embedded, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    embedded["models"]["judge"] = "openai/gpt-4o"
    embedded["carry"]["judges"] = None
    embedded["transfer"]["panel"] = ["openai/gpt-4o-mini@0", "local/default@1"]
    embedded["cache_dir"] = str(tmp_path)
    config = validate_config(embedded, schema)
    # a job that names no model (effective_config), one of the embedded model
    assert key_problems(config, job_params=[[{"a": 1}], ["local/default", 0.7]]) == ([], [])
    errors, _ = key_problems(config, job_params=[[{"calls": {"role": "judge"}}, "openai/gpt-4o"]])
    assert len(errors) == 1 and "'openai/gpt-4o' (models.judge)" in errors[0]
    # a responder param ("model|k") names its model
    errors, _ = key_problems(config, job_params=[["openai/gpt-4o-mini|0", 200]])
    assert len(errors) == 1 and "'openai/gpt-4o-mini' (transfer.panel[0])" in errors[0]


def test_a_budget_refuses_unpriced_models_before_the_first_job(schema, embedded, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    embedded["models"]["judge"] = "openai/gpt-nonexistent"
    embedded["carry"]["judges"] = ["openai/gpt-4o-mini"]
    embedded["cache_dir"] = str(tmp_path)
    assert budget_problems(validate_config(embedded, schema)) == []  # no budget, no check
    embedded["llm"]["budget_usd"] = 5
    (problem,) = budget_problems(validate_config(embedded, schema))
    assert "'openai/gpt-nonexistent' has no known price" in problem and "(models.judge)" in problem
    with pytest.raises(ConfigError, match="cannot start under its budget"):
        check_before_first_job(validate_config(embedded, schema), warn=print)
    # a configured price lets the budget count it; a job that does not call it is not checked
    assert budget_problems(validate_config(embedded, schema),
                           job_params=[["openai/gpt-4o-mini"]]) == []
    embedded["llm"]["per_model"]["openai/gpt-nonexistent"] = {"price": {"input": 1, "output": 2}}
    assert budget_problems(validate_config(embedded, schema)) == []


def test_a_stand_in_for_no_model_of_the_config_is_refused_naming_its_key(repo, schema, embedded):
    from rubriclab.validate import stand_in_problems

    # the paper's stand-in (openai/gpt-5.1 for GPT-5, on Table A.3's panel) is a model it runs
    paper = validate_config(load_yaml(repo / "config" / "paper.yaml"), schema)
    assert paper["stand_ins"] and stand_in_problems(paper) == []
    embedded["stand_ins"] = {"local/default": "Llama", "openai/gpt-5.1": "GPT-5"}
    (line,) = stand_in_problems(validate_config(embedded, schema))
    assert line.startswith("config key 'stand_ins.openai/gpt-5.1': ") and "\n" not in line
    assert "not a model this config runs" in line
