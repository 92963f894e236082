"""Errors found before the first job, each naming the key or file and the fix (issue 24,
point 9): a malformed api_base, a reasoning effort the model does not take, a config without
carry.chains, an over-long run name, an unwritable cache folder or a missing mirror, `cache
stats` / `cache export` on a read-only or absent cache, the Makefile's shell quoting, and
HealthBench's checksums; and the start's key check following the model layer's credential
rule (placeholder_api_key)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rubriclab.cli import main
from rubriclab.config import ConfigError, validate_config
from rubriclab.data.download import ChecksumError, acquire, dataset_files
from rubriclab.llm import LLMClient, LLMConfig, Request
from rubriclab.llm.backends import Backends
from rubriclab.llm.cache import SQLiteCache
from rubriclab.runs import base_run_directory, run_directory
from rubriclab.validate import (cache_dir_problems, check_before_first_job, fetch_problems,
                                key_problems, mirror_problems, reasoning_effort_problem)

from .conftest import SHARED_DATA
from .llm.openai_stub import ScriptedOpenAIServer
from .snakemake_run import DRY_RUN_BOUND_S, run_snakemake

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def minimal(embedded):
    """A user's own short config: the required keys only (the schema fills the rest)."""
    chains = {d: copy.deepcopy(embedded["carry"]["chains"][d])
              for d in ("recon", "summedits", "ragtruth")}
    return {"models": {"judge": "fake/yes"}, "datasets": copy.deepcopy(embedded["datasets"]),
            "carry": {"fig2": {}, "chains": chains}}


def dry_run(tmp_path: Path, config: dict, *extra: str) -> subprocess.CompletedProcess:
    """`snakemake -n` with `config` as the one config file: only parsing and the DAG, no job."""
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RUBRICLAB_DATA_MIRROR", "RUBRICLAB_CACHE")}
    return run_snakemake(
        [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
         "-d", str(tmp_path / "work"), "--configfile", str(path), *extra],
        env=env, bound_s=DRY_RUN_BOUND_S)


# --- a malformed api_base --------------------------------------------------------------------

@pytest.mark.parametrize("api_base, why", [
    ("localhost:8000/v1", "does not start with http:// or https://"),
    ("127.0.0.1:8000", "does not start with http:// or https://"),
    ("http:/127.0.0.1:8000/v1", "names no host"),
    ("http://127.0.0.1:80000/v1", "port is not a number"),
    ("http://127.0.0.1:8000/ v1", "holds whitespace"),
    ("", "not a URL"),
])
def test_a_malformed_api_base_is_refused_naming_its_key(api_base, why):
    with pytest.raises(ValueError) as caught:
        LLMConfig.from_dict({"per_model": {"openai/served": {"api_base": api_base}}})
    message = str(caught.value)
    assert message.startswith("llm.per_model['openai/served'].api_base: ")
    assert why in message and "http://127.0.0.1:8000/v1" in message  # what to write instead


def test_well_formed_endpoints_pass_and_credentials_in_a_bad_one_are_not_echoed():
    for good in ("http://127.0.0.1:8000/v1", "https://api.example.com", "http://[::1]:8080/v1/"):
        LLMConfig.from_dict({"defaults": {"api_base": good}})
    with pytest.raises(ValueError) as caught:
        LLMConfig.from_dict({"defaults": {"api_base": "user:s3cret@localhost:8000/v1"}})
    assert "llm.defaults.api_base" in str(caught.value) and "s3cret" not in str(caught.value)


# --- a reasoning effort the model does not take ------------------------------------------------

def _roles(roles: dict) -> LLMConfig:
    return LLMConfig.from_dict({"roles": roles})


def test_a_reasoning_effort_grok_4_does_not_take_is_named_with_its_key():
    problem = reasoning_effort_problem(_roles({"judge": {"reasoning_effort": "high"}}),
                                       "judge", "xai/grok-4")
    assert problem.startswith("config key 'llm.roles.judge.reasoning_effort' ('high') for "
                              "model 'xai/grok-4'")
    assert "llm.roles.judge.per_model['xai/grok-4'].reasoning_effort: null" in problem  # the fix
    own = _roles({"judge": {"per_model": {"xai/grok-4": {"reasoning_effort": "low"}}}})
    assert "config key 'llm.roles.judge.per_model['xai/grok-4'].reasoning_effort' ('low')" in \
        reasoning_effort_problem(own, "judge", "xai/grok-4")
    # an embedded model takes none either
    assert "llama.cpp" in reasoning_effort_problem(_roles({"judge": {"reasoning_effort": "low"}}),
                                                   "judge", "local/default")


@pytest.mark.parametrize("model", ["openai/gpt-5", "anthropic/claude-sonnet-4-5-20250929",
                                   "gemini/gemini-2.5-flash", "deepseek/deepseek-chat",
                                   "openrouter/qwen/qwen3-32b", "openai/served-by-vllm"])
def test_models_that_take_an_effort_pass_even_where_litellms_map_says_no_reasoning(model):
    """deepseek-chat, openrouter models and an openai/ model behind api_base have
    supports_reasoning False, yet litellm sends their effort (paper.yaml sets some)."""
    config = _roles({"restater": {"reasoning_effort": "low"}})
    assert reasoning_effort_problem(config, "restater", model) is None
    assert reasoning_effort_problem(config, "judge", model) is None  # no effort for this role


def test_the_check_agrees_with_what_litellm_does_per_request(tmp_path, monkeypatch):
    """Through litellm's real path to a loopback server: grok-4 with an effort is refused
    before anything is sent (what the check predicts), gpt-5's effort reaches the server."""
    monkeypatch.setenv("XAI_API_KEY", "placeholder")
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    with ScriptedOpenAIServer(["Yes", "Yes"], then="Yes") as server:
        raw = {"per_model": {m: {"api_base": server.api_base, "backoff_s": 0.0, "num_retries": 0,
                                 "max_reasks": 0}
                             for m in ("xai/grok-4", "openai/gpt-5")},
               "roles": {"judge": {"reasoning_effort": "high"}}}
        config = LLMConfig.from_dict(raw, cache_dir=tmp_path / "cache")
        ask = [{"role": "user", "content": "Is the sky blue? Yes or No."}]
        with LLMClient(config, role="judge") as client:
            (refused,) = client.run([Request.chat("xai/grok-4", ask, max_tokens=4,
                                                  response_format="yes_no")],
                                    raise_on_failure=False)
        assert refused.outcome == "failed" and "UnsupportedParamsError" in refused.error
        assert server.requests == []
        assert reasoning_effort_problem(config, "judge", "xai/grok-4") is not None
        with LLMClient(config, role="judge") as client:
            (answered,) = client.run([Request.chat("openai/gpt-5", ask, max_tokens=4,
                                                   temperature=None, response_format="yes_no")])
        assert answered.outcome == "ok" and server.requests[0]["reasoning_effort"] == "high"
        assert reasoning_effort_problem(config, "judge", "openai/gpt-5") is None


# --- a config without carry.chains; a 300-character run name -----------------------------------

def test_a_config_without_carry_chains_names_the_key(schema, minimal):
    del minimal["carry"]["chains"]
    with pytest.raises(ConfigError) as caught:
        validate_config(minimal, schema)
    assert "config key 'carry.chains' is missing" in str(caught.value)
    assert "config/config.yaml shows one" in str(caught.value)


def test_a_300_character_run_name_is_refused_by_its_key(schema, minimal, tmp_path):
    minimal["run"] = "a" * 300
    with pytest.raises(ConfigError) as caught:
        validate_config(minimal, schema)
    assert "config key 'run': 300 characters" in str(caught.value)
    assert "at most 100" in str(caught.value) and "a" * 100 not in str(caught.value)
    with pytest.raises(ConfigError, match=r"config key 'run': a run name of 300 characters"):
        run_directory("a" * 300, tmp_path)
    with pytest.raises(ConfigError, match=r"config key 'base_run': a run name of 300"):
        base_run_directory({"run": "mine", "base_run": "b" * 300}, tmp_path)
    with pytest.raises(ConfigError, match=r"config key 'run': 'a/b' is not a folder name"):
        run_directory("a/b", tmp_path)
    assert run_directory("a" * 100, tmp_path) == tmp_path.resolve() / "runs" / ("a" * 100)


# --- an unwritable cache folder, a missing mirror ----------------------------------------------

def test_an_unwritable_cache_folder_stops_the_start_naming_it(minimal, schema, tmp_path,
                                                               monkeypatch):
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    minimal["cache_dir"] = str(blocker / "cache")
    config = validate_config(minimal, schema)
    (problem,) = cache_dir_problems(config)
    assert problem.startswith(f"config key 'cache_dir': the model-call cache folder "
                              f"{blocker / 'cache'} cannot be written")
    assert "name a writable folder" in problem
    with pytest.raises(ConfigError, match="the run cannot start"):
        check_before_first_job(config, warn=print, job_params=[["fake/yes"]])
    check_before_first_job(config, warn=print, job_params=[])  # no job calls a model
    monkeypatch.setenv("RUBRICLAB_CACHE", str(blocker / "elsewhere"))
    (problem,) = cache_dir_problems(config)
    assert problem.startswith("the environment variable RUBRICLAB_CACHE: ")
    monkeypatch.setenv("RUBRICLAB_CACHE", str(tmp_path / "fine"))
    assert cache_dir_problems(config) == []


def test_a_read_only_cache_folder_stops_the_start(minimal, schema, read_only_folder,
                                                   monkeypatch):
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    folder, freeze = read_only_folder
    freeze()
    minimal["cache_dir"] = str(folder)
    (problem,) = cache_dir_problems(validate_config(minimal, schema))
    assert f"{folder} cannot be written" in problem


def test_a_missing_mirror_and_files_it_lacks_are_named(minimal, schema, tmp_path):
    minimal["data_mirror"] = str(tmp_path / "no-such-mirror")
    (problem,) = mirror_problems(validate_config(minimal, schema))
    assert "config key 'data_mirror'" in problem and "no-such-mirror does not exist" in problem
    mirror = tmp_path / "mirror"
    (mirror / "healthbench").mkdir(parents=True)
    minimal["data_mirror"] = str(mirror)
    config = validate_config(minimal, schema)
    assert mirror_problems(config) == []
    (lacking,) = fetch_problems(config, [("healthbench", "oss_eval.jsonl")])
    assert str(mirror / "healthbench" / "oss_eval_items.jsonl") in lacking
    (unlisted,) = fetch_problems(config, [("summedits", "summedits_shakespeare.json")])
    assert "has no mirror copy" in unlisted and "unset data_mirror" in unlisted
    minimal["data_mirror"] = None
    (needs,) = fetch_problems(validate_config(minimal, schema),
                              [("healthbench", "srh_subset_partial.jsonl")])
    assert "exists only in a data mirror" in needs
    with pytest.raises(ConfigError, match="the data cannot be fetched"):
        check_before_first_job(config, warn=print, job_params=[],
                               fetches=[("healthbench", "oss_eval.jsonl")])


# --- a target given as runs/<name>/... -------------------------------------------------------

def test_a_target_under_the_named_runs_folder_is_made_and_another_runs_is_refused(
        tmp_path, minimal):
    """Snakemake reads targets inside runs/<name>/, where a named run works (rubriclab.runs)."""
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(minimal))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RUBRICLAB_DATA_MIRROR", "RUBRICLAB_CACHE")}

    def dry(*extra):
        return run_snakemake(
            [sys.executable, "-m", "snakemake", "-n", "-s", str(REPO / "Snakefile"),
             "--configfile", str(path), *extra], cwd=tmp_path, env=env,
            bound_s=DRY_RUN_BOUND_S)

    target = "figures/carry/fig2_checklist_length.png"
    made = dry("--config", "run=smoke", "--", f"runs/smoke/{target}")
    assert made.returncode == 0, (made.stdout + made.stderr)[-3000:]
    assert "carry_fig2_plot" in made.stdout and "MissingRule" not in made.stdout + made.stderr
    refused = dry("--", f"runs/smoke/{target}")
    assert refused.returncode != 0 and "MissingRule" not in refused.stdout + refused.stderr
    assert (f"--configfile runs/smoke/results/effective_config.yaml -- {target}"
            in refused.stdout + refused.stderr)


# --- the run stops before its first job: snakemake -n ------------------------------------------

def _without_chains(config):
    del config["carry"]["chains"]


def _long_run_name(config):
    config["run"] = "r" * 300


def _bad_api_base(config):
    config["llm"] = {"per_model": {"openai/served": {"api_base": "localhost:8000/v1"}}}


def _api_base_without_its_key(config):
    config["models"]["judge"] = "openai/served"
    config["llm"] = {"per_model": {"openai/served": {"api_base": "http://127.0.0.1:8000/v1"}}}


def _grok_effort(config):
    config["models"]["judge"] = "xai/grok-4"
    config["llm"] = {"roles": {"judge": {"reasoning_effort": "high"}}}


def _missing_mirror(config):
    config["data_mirror"] = "/nonexistent/mirror"


def _bad_retires(config):
    config["llm"] = {"per_model": {"openai/gpt-5": {"retires": "next spring"}}}


@pytest.mark.parametrize("change, named", [
    (_without_chains, "config key 'carry.chains' is missing"),
    (_long_run_name, "config key 'run': 300 characters"),
    (_bad_api_base, "llm.per_model['openai/served'].api_base: 'localhost:8000/v1' is not an "
                    "http(s) URL"),
    (_api_base_without_its_key, "llm.per_model['openai/served'].api_base: "
                                "'http://127.0.0.1:8000/v1' is not openai's own API"),
    (_grok_effort, "config key 'llm.roles.judge.reasoning_effort' ('high') for model "
                   "'xai/grok-4'"),
    (_missing_mirror, "config key 'data_mirror' (or the environment variable "
                      "RUBRICLAB_DATA_MIRROR): /nonexistent/mirror does not exist"),
    (_bad_retires, "llm.per_model['openai/gpt-5'].retires: expected a date as YYYY-MM-DD"),
])
def test_a_dry_run_stops_with_the_message_not_a_raw_error(tmp_path, minimal, change, named):
    change(minimal)
    result = dry_run(tmp_path, minimal)
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert named in said, said[-2000:]
    assert "KeyError" not in said and "OSError" not in said and "Traceback" not in said
    assert not (tmp_path / "work" / "runs").exists()


def test_the_minimal_config_itself_dry_runs(tmp_path, minimal):
    result = dry_run(tmp_path, minimal)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]


# --- cache stats and cache export: read-only, and no cache -------------------------------------

def _fill(cache_dir: Path, n: int = 3) -> None:
    requests = [Request.chat("fake/hash", [{"role": "user", "content": f"q{i}"}])
                for i in range(n)]
    with LLMClient(LLMConfig(cache_dir=cache_dir)) as client:
        client.run(requests)


@pytest.mark.parametrize("action", [["stats"], ["export", "out.jsonl.gz"]])
def test_stats_and_export_say_there_is_no_cache_and_create_none(tmp_path, capsys, action):
    folder = tmp_path / "nothing-here"
    args = [a if a != "out.jsonl.gz" else str(tmp_path / a) for a in action]
    assert main(["--cache-dir", str(folder), "cache", *args]) == 1
    assert f"no cache at {folder / 'llm_cache.sqlite'}" in capsys.readouterr().err
    assert not folder.exists() and not (tmp_path / "out.jsonl.gz").exists()


@pytest.fixture
def read_only_folder(tmp_path):
    """(folder, freeze): a folder to fill, then make read-only with freeze(): by permissions
    for an ordinary user, by a tmpfs remounted read-only for root (whom permissions do not
    stop); skipped where neither can be had."""
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = False
    if os.geteuid() == 0:
        if shutil.which("mount") is None or subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)],
                capture_output=True).returncode != 0:
            pytest.skip("root, and no tmpfs can be mounted to make a read-only folder")
        mounted = True

    def freeze():
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            for path in [folder, *folder.iterdir()]:
                path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            (folder / "probe").write_text("x")
        except OSError:
            return
        pytest.skip("the folder could not be made read-only here")

    yield folder, freeze
    if mounted:
        subprocess.run(["umount", str(folder)], check=False)
    else:
        for path in [folder, *folder.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_stats_and_export_read_a_read_only_cache(read_only_folder, tmp_path, capsys):
    folder, freeze = read_only_folder
    _fill(folder)
    before = {p.name: p.read_bytes() for p in folder.rglob('*') if p.is_file()}
    assert set(before) == {"llm_cache.sqlite"}  # closed cleanly: no -wal, no -shm
    freeze()
    assert main(["--cache-dir", str(folder), "cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "       3  fake/hash" in out and "       3  total" in out
    exported = tmp_path / "out.jsonl.gz"
    assert main(["--cache-dir", str(folder), "cache", "export", str(exported)]) == 0
    assert "exported 3 cached answers" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.rglob('*') if p.is_file()} == before
    # what was exported is whole: it imports into a writable cache
    assert main(["--cache-dir", str(tmp_path / "copy"), "cache", "import", str(exported)]) == 0
    assert "3 added" in capsys.readouterr().out


def test_read_only_opening_writes_nothing_and_reads_rows_still_in_the_wal(tmp_path):
    """An unclean stop leaves rows in the -wal file: the read-only opening sees them, and
    neither the database nor its -wal changes."""
    folder = tmp_path / "cache"
    code = ("import os, sys\nfrom rubriclab.llm import LLMClient, LLMConfig, Request\n"
            "from pathlib import Path\nc = LLMClient(LLMConfig(cache_dir=Path(sys.argv[1])))\n"
            "c.run([Request.chat('fake/hash', [{'role': 'user', 'content': 'q'}])])\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, str(folder)], check=True, timeout=600)
    wal = folder / "llm_cache.sqlite-wal"
    assert wal.is_file() and wal.stat().st_size > 0
    before = {p.name: p.read_bytes() for p in folder.rglob("*")
              if p.is_file() and p.name != "llm_cache.sqlite-shm"}
    with SQLiteCache.read_only(folder / "llm_cache.sqlite") as cache:
        assert cache.counts_by_model() == [("fake/hash", 1)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            cache._db.execute("DELETE FROM answers")
    after = {p.name: p.read_bytes() for p in folder.rglob("*")
              if p.is_file() and p.name != "llm_cache.sqlite-shm"}
    assert after == before


def test_a_cache_from_before_fingerprints_is_read_without_being_upgraded(tmp_path, capsys):
    path = tmp_path / "llm_cache.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT "
               "NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
               "cost_usd REAL, request_json TEXT NOT NULL, created_at REAL NOT NULL)")
    db.execute("INSERT INTO answers VALUES ('k', 'openai/old', 'Yes', 1, 1, 0.0, '{}', 0.0)")
    db.commit()
    db.close()
    before = path.read_bytes()
    assert main(["--cache-dir", str(tmp_path), "cache", "stats"]) == 0
    assert "       1  openai/old" in capsys.readouterr().out
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_cache_is_named(tmp_path, capsys):
    (tmp_path / "llm_cache.sqlite").write_text("hello")
    assert main(["--cache-dir", str(tmp_path), "cache", "stats"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rubriclab: cannot read the cache") and "Traceback" not in err


# --- the Makefile: RUN, BASE and the data folders reach the shell quoted ------------------------

def make(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


@pytest.fixture
def fake_venv(tmp_path):
    """A venv whose snakemake, rubriclab and python write the arguments they get (as JSON) to
    args.json: what the shell handed the command, after its quoting."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name in ("snakemake", "rubriclab", "python"):
        tool = venv / "bin" / name
        tool.write_text(f"#!{sys.executable}\nimport json, sys\n"
                        f"json.dump(sys.argv[1:], open({str(tmp_path / 'args.json')!r}, 'w'))\n")
        tool.chmod(0o755)
    (venv / ".installed").touch()  # newer than pyproject.toml: no install
    return venv


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_an_injected_command_in_run_is_refused_and_never_runs(tmp_path, fake_venv):
    marker = tmp_path / "pwned"
    for target in ("reproduce", "report"):
        result = make("-n", target, f"VENV={fake_venv}", f"RUN=a; touch {marker}")
        assert result.returncode != 0 and f"RUN=a; touch {marker} is not a run name" in \
            result.stderr
    result = make("reproduce", f"VENV={fake_venv}", "RUN=ok", f"BASE=b$(touch {marker})")
    assert result.returncode != 0 and "BASE=b$(touch" in result.stderr
    result = make("-n", "reproduce", f"VENV={fake_venv}", f"RUN=$(shell touch {marker})")
    assert result.returncode != 0 and "RUN=$(shell touch" in result.stderr  # make expands nothing
    long = make("-n", "reproduce", f"VENV={fake_venv}", "RUN=" + "r" * 101)
    assert long.returncode != 0 and "at most 100 characters" in long.stderr
    assert not marker.exists()
    ran = make("reproduce", f"VENV={fake_venv}", "RUN=ablation-1", "BASE=.")
    assert ran.returncode == 0, ran.stderr
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[-3:] == ["--config", "run=ablation-1", "base_run=."]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_config_files_reach_snakemake_after_the_embedded_default_each_one_quoted_word(
        tmp_path, fake_venv):
    marker = tmp_path / "pwned"
    # Unquoted, the shell would run the touch (${IFS}: a space make does not split on).
    swap, odd = "swap.yaml", "it's;$(touch${IFS}" + f"{marker}).yaml"
    ran = make("reproduce", f"VENV={fake_venv}", "RUN=b", "BASE=a", f"CONFIG={swap} {odd}")
    assert ran.returncode == 0, ran.stderr
    args = json.loads((tmp_path / "args.json").read_text())
    # A config stands alone (Snakefile): config/config.yaml first, the swap over it.
    start = args.index("--configfile")
    assert args[start:start + 4] == ["--configfile", "config/config.yaml", swap, odd]
    assert args[-3:] == ["--config", "run=b", "base_run=a"] and not marker.exists()
    plain = make("reproduce", f"VENV={fake_venv}")
    assert plain.returncode == 0 and "--configfile" not in json.loads(
        (tmp_path / "args.json").read_text())


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_report_without_run_where_only_named_runs_are_names_them(tmp_path, fake_venv):
    """After the smoke test (runs/smoke/ only), `make report` says to type RUN=smoke."""
    launch = tmp_path / "launch"
    (launch / "runs" / "smoke" / "results").mkdir(parents=True)
    (launch / "runs" / "smoke" / "results" / "effective_config.yaml").write_text("run: smoke\n")
    (launch / "pyproject.toml").touch()
    os.utime(launch / "pyproject.toml", (0, 0))  # older than the venv's stamp: no install

    def report(*args):
        return make("-f", str(REPO / "Makefile"), "report", f"VENV={fake_venv}", *args,
                    cwd=launch)

    refused = report()
    assert refused.returncode != 0 and not (tmp_path / "args.json").exists()
    assert "the named runs here: smoke" in refused.stderr
    assert "make report RUN=smoke" in refused.stderr
    named = report("RUN=smoke")
    assert named.returncode == 0, named.stderr
    assert json.loads((tmp_path / "args.json").read_text())[-2:] == [
        "--configfile", "runs/smoke/results/effective_config.yaml"]
    (launch / "results").mkdir()
    (launch / "results" / "effective_config.yaml").write_text("run: null\n")
    assert report().returncode == 0  # an unnamed run here too: its report, as before


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("target, flag", [("plan", "--data-mirror"), ("rehearse", "--data-mirror"),
                                          ("known-truth", None)])
def test_a_data_folder_with_shell_characters_reaches_the_command_as_one_word(
        tmp_path, fake_venv, target, flag):
    marker = tmp_path / "pwned"
    folder = f"{tmp_path}/my data's; touch {marker} $(touch {marker})"
    shown = make("-n", target, f"VENV={fake_venv}", env={"RUBRICLAB_DATA_MIRROR": folder})
    assert shown.returncode == 0, shown.stderr
    assert f"; touch {marker}" in shown.stdout  # printed, inside the quotes
    assert f" {folder}" not in shown.stdout  # never bare
    ran = make(target, f"VENV={fake_venv}", env={"RUBRICLAB_DATA_MIRROR": folder})
    assert ran.returncode == 0, ran.stderr
    args = json.loads((tmp_path / "args.json").read_text())
    if flag:
        assert args[args.index(flag) + 1] == folder
    else:
        assert f"data_mirror={folder}" in args
    assert not marker.exists()


# --- HealthBench: every mirror copy checked --------------------------------------------------

def test_a_healthbench_copy_cut_at_a_line_boundary_is_refused(tmp_path):
    source = SHARED_DATA / "healthbench"
    if not source.is_dir():
        pytest.fail(f"the shared data folder {source} is missing (CI lays it beside the clone)")
    (spec,) = dataset_files("healthbench", ["oss_eval.jsonl"])
    mirror = tmp_path / "mirror" / "healthbench"
    mirror.mkdir(parents=True)
    lines = (source / spec["mirror_name"]).read_bytes().splitlines(keepends=True)
    (mirror / spec["mirror_name"]).write_bytes(b"".join(lines[:300]))  # 300 of 321 items
    with pytest.raises(ChecksumError) as caught:
        acquire(spec, tmp_path / "raw", mirror)
    assert str(mirror / spec["mirror_name"]) in str(caught.value)
    assert spec["mirror_sha256"] in str(caught.value)
    assert not (tmp_path / "raw" / "oss_eval.jsonl").exists()
    # the intact copy passes, and so does each HealthBench file the project reads
    for entry in dataset_files("healthbench"):
        assert acquire(entry, tmp_path / "raw", source).read_bytes() == \
            (source / entry["mirror_name"]).read_bytes()


# --- the start's key check follows the model layer's credential rule ---------------------------

def test_a_placeholder_key_model_needs_no_key_at_the_start(schema, minimal, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    minimal["models"]["judge"] = "openai/served"
    minimal["cache_dir"] = str(tmp_path)
    errors, _ = key_problems(validate_config(minimal, schema))
    assert len(errors) == 1 and "OPENAI_API_KEY" in errors[0]  # without the placeholder
    # (no server listens there: the key check alone, without the preflight's lookup)
    minimal["llm"] = {"per_model": {"openai/served": {"api_base": "http://127.0.0.1:9/v1",
                                                      "placeholder_api_key": True}},
                      "preflight": False}
    config = validate_config(minimal, schema)
    assert key_problems(config) == ([], [])
    check_before_first_job(config, warn=print, job_params=[["openai/served"]])
    # the same rule as the model layer's own check before a job's first call
    llm = LLMConfig.from_dict(config["llm"], cache_dir=tmp_path)
    assert Backends(llm).missing_api_keys("openai/served") == []
    assert Backends(LLMConfig()).missing_api_keys("openai/served") == ["OPENAI_API_KEY"]
