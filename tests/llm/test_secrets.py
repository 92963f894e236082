"""Secrets never written (issue 24, item 7): a key a server echoes back, and credentials in an
`api_base`, appear in no log, journal, exception, cache row or export."""

import logging
import traceback
import uuid
from pathlib import Path

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.client import SecretInError
from rubriclab.llm.redact import REDACTED, RedactingFilter, redact, strip_userinfo
from rubriclab.llm.request import cache_key

from .loopback import LoopbackServer, answers, echoes_key_in_401

MODEL = "openai/stub-judge"
SERVER_KEY = "STUB_SERVER_API_KEY"


@pytest.fixture
def sentinel(monkeypatch):
    """A key in the environment: the provider's, and the stub server's (`api_key_env`; an
    endpoint that is not the provider's is never sent the provider's key)."""
    key = f"sk-sentinel-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv(SERVER_KEY, key)
    return key


@pytest.fixture
def job_log(tmp_path):
    """A rule's log file on the root logger, as rubriclab.runtime.configure_logging adds one."""
    path = tmp_path / "logs" / "job.log"
    path.parent.mkdir(parents=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield path
    root.removeHandler(handler)
    root.setLevel(old_level)
    handler.close()


def judge(text):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def files_holding(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_key_echoed_in_a_401_is_written_to_no_file_log_or_exception(tmp_path, sentinel,
                                                                     job_log, caplog):
    caplog.set_level(logging.DEBUG)
    ledger = tmp_path / "results" / "ledger" / "judge.jsonl"
    cfg = LLMConfig(cache_dir=tmp_path / "cache",
                    defaults=ModelSettings(backoff_s=0.0, timeout_s=5.0, concurrency=2))
    with LoopbackServer(echoes_key_in_401) as server:
        cfg = LLMConfig(cache_dir=cfg.cache_dir,
                        defaults=ModelSettings(api_base=server.api_base, backoff_s=0.0,
                                               timeout_s=5.0, concurrency=2,
                                               api_key_env=SERVER_KEY))
        with LLMClient(cfg, ledger=Ledger(ledger, "judge")) as client:
            with pytest.raises(ModelCallsFailed) as failed:
                client.run([judge(f"claim {i}") for i in range(4)])
            # as the job's uncaught error is logged (rubriclab.runtime._log_uncaught)
            logging.getLogger("rubriclab").critical("%s: %s", type(failed.value).__name__,
                                                    failed.value, exc_info=failed.value)
    # the server did get the key, and did echo it
    assert server.headers[0]["authorization"] == f"Bearer {sentinel}"
    shown = "".join(traceback.format_exception(failed.value))
    assert sentinel not in shown and "AuthenticationError" in shown
    (tmp_path / "traceback.txt").write_text(shown)
    assert files_holding(tmp_path, sentinel) == []
    assert sentinel not in caplog.text
    # the echo did reach the journal and the log, redacted
    journal = ledger.parent / "attempts" / ledger.name
    assert f"Incorrect API key provided: {REDACTED}" in journal.read_text()
    assert REDACTED in job_log.read_text()


def test_credentials_in_an_api_base_are_in_no_cache_row_export_or_ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    # litellm's default aiohttp transport refuses credentials in a URL ("Cannot combine
    # AUTHORIZATION header with ... credentials encoded in URL"); its httpx transport, like the
    # batch path's SDK clients, sends them (as basic auth), so an answer gets stored.
    from rubriclab.llm.litellm_import import import_litellm

    monkeypatch.setattr(import_litellm(), "disable_aiohttp_transport", True)
    password = f"pw-{uuid.uuid4().hex}"
    with LoopbackServer(answers("Yes")) as server:
        with_credentials = f"http://judge-user:{password}@127.0.0.1:{server.port}/v1"

        def client(api_base, ledger):
            return LLMClient(LLMConfig(cache_dir=tmp_path / "cache",
                                       defaults=ModelSettings(api_base=api_base, backoff_s=0.0,
                                                              timeout_s=5.0)),
                             ledger=Ledger(tmp_path / "results" / "ledger" / ledger, "judge"))

        with client(with_credentials, "first.jsonl") as first:
            (answer,) = first.run([judge("Is the sky blue?")])
            assert answer.outcome == "ok" and not answer.cached
            assert first.backends.fingerprint(MODEL) == f"|endpoint={server.api_base}"
        # the same endpoint without them: the same key, served from the cache
        with client(server.api_base, "second.jsonl") as second:
            (again,) = second.run([judge("Is the sky blue?")])
        assert again.cached and again.key == answer.key and len(server.requests) == 1
        assert server.headers[0]["authorization"].startswith("Basic ")  # they were sent
    with SQLiteCache(tmp_path / "cache" / "llm_cache.sqlite") as cache:
        cache.export_to(tmp_path / "export.jsonl")
    assert (tmp_path / "export.jsonl").stat().st_size > 0
    for secret in (password, "judge-user:"):
        assert files_holding(tmp_path, secret) == []


def test_an_answer_keyed_under_an_endpoint_with_credentials_is_still_found(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    with LoopbackServer(answers("No")) as server:
        api_base = f"http://u:secret-pass-1@127.0.0.1:{server.port}/v1"
        request = judge("Is grass red?")
        cfg = LLMConfig(cache_dir=tmp_path / "cache",
                        defaults=ModelSettings(api_base=api_base, backoff_s=0.0))
        earlier = f"|endpoint={api_base}"  # as keyed before credentials were stripped
        with LLMClient(cfg) as client:
            prepared = client.prepare(request)
            client.cache.put(make_answer(cache_key(prepared, earlier), prepared, "Yes", 3, 1,
                                         0.0, earlier))
            (answer,) = client.run([request])
            assert answer.cached and answer.parsed == "yes" and server.requests == []
            stored = client.cache.get(client.key_for(prepared))
            assert stored is not None and stored.model_fingerprint == (
                f"|endpoint=http://127.0.0.1:{server.port}/v1")


def test_an_error_raised_through_the_client_is_raised_again_without_the_key(tmp_path,
                                                                           sentinel):
    class BrokenCache:
        def get(self, key):
            raise RuntimeError(f"backend refused token {sentinel}")

        def put(self, answer):
            raise AssertionError("never reached")

        def close(self):
            pass

    cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(backoff_s=0.0))
    with LLMClient(cfg, cache=BrokenCache()) as client:
        with pytest.raises(SecretInError) as raised:
            client.run([judge("anything")])
    shown = "".join(traceback.format_exception(raised.value))
    assert sentinel not in shown and f"backend refused token {REDACTED}" in shown


def test_which_environment_values_are_secrets(monkeypatch):
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "abcdefgh12345678")
    monkeypatch.setenv("HF_TOKEN", "hf_token_value_42")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false-but-longer")  # not a key's name
    monkeypatch.setenv("SHORT_API_KEY", "abc")  # too short to be told from a word
    text = "abcdefgh12345678 hf_token_value_42 false-but-longer abc"
    assert redact(text) == f"{REDACTED} {REDACTED} false-but-longer abc"
    # percent-encoded, as in a URL
    monkeypatch.setenv("PROXY_PASSWORD", "p@ss/word+1")
    assert redact("http://u:p%40ss%2Fword%2B1@h/") == f"http://u:{REDACTED}@h/"


def test_the_log_filter_redacts_arguments_and_tracebacks(sentinel):
    try:
        raise ValueError(f"refused {sentinel}")
    except ValueError as exc:
        record = logging.LogRecord("litellm", logging.ERROR, __file__, 1, "call failed: %s",
                                   (exc,), (type(exc), exc, exc.__traceback__))
    assert RedactingFilter().filter(record)
    formatted = logging.Formatter().format(record)
    assert sentinel not in formatted and formatted.count(REDACTED) == 2


def test_strip_userinfo():
    assert strip_userinfo("https://u:p@Host:8443/v1?x=1") == "https://Host:8443/v1?x=1"
    assert strip_userinfo("https://host/v1") == "https://host/v1"


def test_redact_is_a_leaf():
    from .test_layers import imported

    assert imported("redact") == set()
