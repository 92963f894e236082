"""What the batch tests against the rehearsal server share: the three providers' models, a
config pointing one of them at the server in batch mode, requests to it, and the fixtures
(sentinel keys in the environment, a fault-free rehearsal server, each provider in turn) that
a test module imports by name."""

import signal
import time

import pytest

from rubriclab.llm import LLMConfig, ModelSettings, Request
from rubriclab.llm.batch_store import BatchStore
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

MODELS = {"openai": "openai/gpt-4o-mini-2024-07-18", "gemini": "gemini/gemini-2.5-flash",
          "anthropic": "anthropic/claude-sonnet-4-5-20250929"}
# Every variable litellm or the SDKs read a key of these providers from.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SENTINEL = "sk-sentinel-env-key-must-not-leave"
YES_NO = "Answer with exactly one word: Yes or No."


def api_base(url, provider):
    return url + "/v1" if provider == "openai" else url


def config(cache_dir, url, provider, **extra):
    # batch_max_wait_s: room for a loaded machine (the first poll of a process may take seconds);
    # a test that gives up waiting sets its own.
    values = dict(api_base=api_base(url, provider), batch=True, batch_poll_s=0.05,
                  batch_max_wait_s=120, timeout_s=5, num_retries=2, backoff_s=0.01,
                  max_backoff_s=0.02)
    values.update(extra)
    return LLMConfig(cache_dir=cache_dir, per_model={MODELS[provider]: ModelSettings(**values)},
                     progress_interval_s=0.05)


def questions(provider, numbers):
    return [Request.chat(MODELS[provider], [{"role": "user", "content": f"Is {i} even? {YES_NO}"}],
                         response_format="yes_no", max_tokens=4) for i in numbers]


def stored_jobs(cache_dir):
    store = BatchStore(cache_dir / BatchStore.FILE_NAME)
    try:
        return store.all()
    finally:
        store.close()


def paid(server, provider):
    """Requests the server answered for a provider, batch rows and ordinary calls: each paid."""
    return server.stats.requests[provider]


def kill_while_it_polls(api, job):
    """Kill `job` (a Popen) with SIGKILL once it has submitted one batch to `api` and polled it
    twice; the caller set `api.hold` before starting it, so the batch stays in progress. Waits
    at most 90 s for the polls."""
    try:
        deadline = time.monotonic() + 90
        while api.calls["retrieve"] < 2 and time.monotonic() < deadline:
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.05)
        assert api.calls["create"] == 1, "the job never submitted its batch"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
    assert job.returncode == -signal.SIGKILL


@pytest.fixture(autouse=True)
def env_keys(monkeypatch):
    for name in KEY_VARIABLES:
        monkeypatch.setenv(name, SENTINEL)


@pytest.fixture
def server():
    with RehearsalServer(faults=FaultMix.none()) as running:
        yield running


@pytest.fixture(params=sorted(MODELS))
def provider(request):
    return request.param
