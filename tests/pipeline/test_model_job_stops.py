"""One model job of the pipeline, run by Snakemake (issue 24, items 4 and 7): a judge whose
answers never parse fails the job and the run; a key a server echoes is in no file and no
captured output of the run."""

import json
import uuid

import pytest
import yaml

from rubriclab.llm.redact import REDACTED

from ..llm.loopback import LoopbackServer, echoes_key_in_401
from .test_workflow import run, write_config

pytestmark = [pytest.mark.pipeline, pytest.mark.long]

TARGET = "results/carry/fig2/summedits/verdicts.csv"
JOURNAL = "results/ledger/attempts/carry_fig2_judge-summedits.jsonl"


def test_a_judge_whose_answers_never_parse_fails_its_job_and_the_run(tmp_path):
    config = write_config(tmp_path, "fake/unparseable", n=2, max_unusable_in_a_row=5)
    result = run(tmp_path, config, "--", TARGET, check=False)
    assert result.returncode != 0
    assert not (tmp_path / TARGET).exists()
    log = (tmp_path / "logs/carry_fig2_judge/summedits.log").read_text()
    assert "UnusableAnswers" in log and "5 of 5 answers unusable (100%)" in log
    assert "max_unusable_in_a_row" in log
    # 4 items x 2 runs x (10 + 3) requests, of which 5 were asked, each 3 times; the
    # journal (which outlives the failed job's ledger) holds what was paid
    journal = [json.loads(line) for line in (tmp_path / JOURNAL).read_text().splitlines()]
    assert [row["attempts"] for row in journal] == [3] * 5


def test_a_key_echoed_by_the_judges_server_is_in_no_file_of_the_run(tmp_path):
    key = f"sk-sentinel-{uuid.uuid4().hex}"
    judge = "openai/echoing-judge"
    with LoopbackServer(echoes_key_in_401) as server:
        config = write_config(tmp_path, judge, n=2, api_base=server.api_base,
                              api_key_env="JUDGE_SERVER_API_KEY")
        # the paper's second judge string is a fake one: leave it out
        values = yaml.safe_load(config.read_text())
        values["carry"]["judges"] = [judge]
        config.write_text(yaml.safe_dump(values))
        provider_key = f"sk-provider-{uuid.uuid4().hex}"
        result = run(tmp_path, config, "--", TARGET, check=False,
                     env={"JUDGE_SERVER_API_KEY": key, "OPENAI_API_KEY": provider_key})
    assert result.returncode != 0
    # the server got the key its api_key_env names, never the provider's from the environment
    assert server.headers and server.headers[0]["authorization"] == f"Bearer {key}"
    assert all(provider_key not in str(h) for h in server.headers)
    holding = [p for p in tmp_path.rglob("*")
               if p.is_file() and key.encode() in p.read_bytes()]
    assert holding == []
    assert key not in result.stdout and key not in result.stderr
    assert REDACTED in (tmp_path / "logs/carry_fig2_judge/summedits.log").read_text()
    assert REDACTED in (tmp_path / JOURNAL).read_text()
