"""Rate limits per model shared by every job of a run (rubriclab.llm.ratelimit): two jobs in
two processes against one loopback server, timed at the server (on one host's SQLite schedule;
two hosts on the PostgreSQL one: test_ratelimit_pg); the schedule's bookings on both stores
(`backend`)."""

import time

import pytest

from rubriclab.llm import LLMConfig, ModelSettings
from rubriclab.llm.ratelimit import BURST_S, RateLimitWait
from rubriclab.llm.storage import open_rate_limiter

from .jobs import WARM_UP, finish, start_jobs
from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


def llm_config(tmp_path, server, **settings):
    return {"cache_dir": str(tmp_path / "cache"),
            "defaults": {"api_base": server.api_base, "timeout_s": 5.0, "num_retries": 3,
                         "backoff_s": 0.01, "max_backoff_s": 0.05, "concurrency": 8,
                         "deadline_s": 60.0, **settings}}


def test_two_jobs_of_one_model_share_its_requests_per_minute(tmp_path):
    rpm = 120.0  # one request every 0.5 s, a burst of BURST_S worth
    per_job = 6
    with ScriptedOpenAIServer([], then="Yes") as server:
        llm = llm_config(tmp_path, server, requests_per_minute=rpm)
        jobs = start_jobs(tmp_path, llm, [
            [(MODEL, f"job {j} question {i}") for i in range(per_job)] for j in range(2)])
        for job in jobs:
            job[-1].set()
        results = finish(jobs)
        asked = [(t, body) for t, body in zip(server.times, server.requests)
                 if body["model"] != WARM_UP.split("/", 1)[1]]
        times = sorted(t for t, _ in asked)
        askers = {body["messages"][0]["content"].split()[1] for _, body in asked}
    assert [r["outcomes"] for r in results] == [["ok"] * per_job] * 2
    assert len(times) == 2 * per_job and askers == {"0", "1"}
    interval = 60.0 / rpm
    # The schedule lets request k start no earlier than k intervals after the first, less one
    # burst: together the two jobs sent no faster than the one limit allows.
    assert times[-1] - times[0] >= (len(times) - 1) * interval - BURST_S - 0.2
    burst = int(BURST_S / interval) + 1
    for k in range(len(times)):
        in_window = sum(1 for t in times if times[k] <= t < times[k] + 1.0)
        assert in_window <= 1.0 / interval + burst, (k, times)


def test_a_429_with_retry_after_pauses_the_other_job_too(tmp_path):
    retry_after = 3
    # the two jobs' warm-up calls first, then the first job's request meets a 429
    with ScriptedOpenAIServer(["Yes", "Yes", f"429:{retry_after}"], then="Yes") as server:
        llm = llm_config(tmp_path, server)  # no configured limit: only the provider's pause
        first, second = start_jobs(tmp_path, llm, [[(MODEL, "job 0 question")],
                                                   [(MODEL, f"job 1 question {i}")
                                                    for i in range(3)]])
        first[-1].set()
        # wait until the first job met the 429 and paused the model for every process
        deadline = time.monotonic() + 60
        schedule = open_rate_limiter(LLMConfig(cache_dir=tmp_path / "cache"))
        paused_until = 0.0
        while time.monotonic() < deadline and not paused_until:
            paused_until = schedule.not_before(MODEL)
            time.sleep(0.02)
        schedule.close()
        assert paused_until, "the 429 set no pause"
        second[-1].set()  # ... so the second job, let go now, sends nothing before it ends
        results = finish([first, second])
        asked = [t for t, body in zip(server.times, server.requests)
                 if body["model"] != WARM_UP.split("/", 1)[1]]
        rate_limited_at, later = asked[0], asked[1:]
    assert [r["outcomes"] for r in results] == [["ok"], ["ok"] * 3]
    assert len(later) == 4
    assert min(later) >= rate_limited_at + retry_after - 0.1, (rate_limited_at, later)


def test_tokens_per_minute_book_each_request_by_its_tokens_and_settle_to_its_usage(tmp_path,
                                                                                   backend):
    limiter = open_rate_limiter(backend.config(tmp_path / "cache"))
    settings = ModelSettings(tokens_per_minute=60_000)  # 1,000 tokens a second
    far = time.time() + 3600
    first = limiter.book(MODEL, settings, 2_000, far)
    second = limiter.book(MODEL, settings, 2_000, far)
    third = limiter.book(MODEL, settings, 500, far)
    # the first goes at once; each next one waits for the tokens before it, less one burst
    assert first.wait_s() == pytest.approx(0, abs=0.05)
    assert second.start - first.start == pytest.approx(2.0 - BURST_S, abs=0.05)
    assert third.start - first.start == pytest.approx(4.0 - BURST_S, abs=0.05)
    # the first two used 500 tokens each, not their 2,000: the next request goes 3 s earlier
    limiter.settle(first, settings, 500)
    limiter.settle(second, settings, 500)
    fourth = limiter.book(MODEL, settings, 100, far)
    assert fourth.start - first.start == pytest.approx(4.5 - 3.0 - BURST_S, abs=0.05)
    limiter.close()


def test_no_wait_passes_the_deadline(tmp_path, backend):
    limiter = open_rate_limiter(backend.config(tmp_path / "cache"))
    settings = ModelSettings(requests_per_minute=6)  # one every 10 s
    soon = time.time() + 5
    first = limiter.book(MODEL, settings, 1, soon)
    with pytest.raises(RateLimitWait, match="past its deadline"):
        limiter.book(MODEL, settings, 1, soon)  # its start would be 9 s away
    # a refused start books nothing: the next one is still 9 s away, not 19
    later = limiter.book(MODEL, settings, 1, time.time() + 60)
    assert later.start - first.start == pytest.approx(10 - BURST_S, abs=0.05)
    limiter.pause("openai/other", 30)
    with pytest.raises(RateLimitWait, match="429"):
        limiter.book("openai/other", ModelSettings(), 1, soon)
    limiter.close()


def test_limits_are_model_settings_from_config():
    cfg = LLMConfig.from_dict({"per_model": {MODEL: {"requests_per_minute": 2000,
                                                     "tokens_per_minute": 4_000_000}}})
    assert cfg.settings_for(MODEL).requests_per_minute == 2000
    assert cfg.settings_for(MODEL).tokens_per_minute == 4_000_000
    assert cfg.settings_for("openai/unlimited").requests_per_minute is None
