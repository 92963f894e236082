"""A job asked to stop (issue 35, item 3): on SIGINT or SIGTERM the client sends no new
request, lets the calls in flight be answered and stored within `llm.stop_grace_s`, and ends
with JobStopped naming the signal; a second Ctrl-C ends the calls in flight at once. Counted
at a loopback server; the signals are real ones, sent to this process."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from rubriclab.job_signals import pass_stop_signals_to_jobs, script_jobs
from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.stopping import JobStopped

from .loopback import LoopbackServer

MODEL = "openai/stub-judge"
BOUND_S = 300  # a bound on events on a loaded machine, never an expected time


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def judge(text):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def client(tmp_path, api_base, grace_s=30.0):
    settings = ModelSettings(api_base=api_base, backoff_s=0.0, timeout_s=60.0, deadline_s=120.0,
                             concurrency=3)
    return LLMClient(LLMConfig(cache_dir=tmp_path / "cache", defaults=settings,
                               stop_grace_s=grace_s),
                     ledger=Ledger(tmp_path / "results" / "ledger" / "judge.jsonl", "judge"))


class SlowYes:
    """Answers "Yes" after `answer_s`; `started` is set once `signal_after` requests came."""

    def __init__(self, answer_s, signal_after=3):
        self.answer_s = answer_s
        self.signal_after = signal_after
        self.count = 0
        self.lock = threading.Lock()
        self.started = threading.Event()

    def __call__(self, body, headers):
        with self.lock:
            self.count += 1
            if self.count >= self.signal_after:
                self.started.set()
        time.sleep(self.answer_s)
        return 200, "Yes", "stop"


def send_when(event, *signals):
    """Send each signal to this process (the main thread handles it) once `event` is set."""
    def send():
        if event.wait(BOUND_S):
            for sig in signals:
                os.kill(os.getpid(), sig)
                time.sleep(0.2)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def journal(tmp_path):
    path = tmp_path / "results" / "ledger" / "attempts" / "judge.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_lets_the_calls_in_flight_finish_and_sends_nothing_new(tmp_path, sig):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    behaviour = SlowYes(answer_s=1.0)
    with LoopbackServer(behaviour) as server, client(tmp_path, server.api_base) as llm:
        sender = send_when(behaviour.started, sig)
        with pytest.raises(JobStopped) as stopped:
            llm.run([judge(f"claim {i}") for i in range(30)], label="judging")
        sender.join(BOUND_S)
        cached = len(llm.cache)
    message = str(stopped.value)
    assert f"'judging': stopped by {sig.name}" in message
    assert "calls in flight were answered and stored" in message
    # every request the server answered is in the cache: none was paid and dropped
    assert cached == len(server.requests) >= 3
    assert f"{30 - cached} requests were not sent" in message
    # the handlers before the run are back
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_grace_bounds_the_wait_and_the_calls_cut_short_stay_on_the_bill(tmp_path):
    behaviour = SlowYes(answer_s=60.0, signal_after=3)
    with LoopbackServer(behaviour) as server, client(tmp_path, server.api_base,
                                                     grace_s=0.5) as llm:
        sender = send_when(behaviour.started, signal.SIGTERM)
        started = time.monotonic()
        with pytest.raises(JobStopped) as stopped:
            llm.run([judge(f"claim {i}") for i in range(30)])
        took = time.monotonic() - started
        sender.join(BOUND_S)
        assert len(llm.cache) == 0
    assert took < 60  # the 60 s answers were not waited for
    assert "ended before they were answered (3 of them: billed as of unknown cost)" in str(
        stopped.value)
    # journaled before they were sent, never closed: the bill counts them (rubriclab.llm.journal)
    assert len(journal(tmp_path)) == len(server.requests) == 3


def test_a_second_ctrl_c_ends_the_calls_in_flight_at_once(tmp_path):
    behaviour = SlowYes(answer_s=60.0, signal_after=3)
    with LoopbackServer(behaviour) as server, client(tmp_path, server.api_base,
                                                     grace_s=600) as llm:
        sender = send_when(behaviour.started, signal.SIGINT, signal.SIGINT)
        started = time.monotonic()
        with pytest.raises(JobStopped) as stopped:
            llm.run([judge(f"claim {i}") for i in range(30)])
        took = time.monotonic() - started
        sender.join(BOUND_S)
    assert took < 60
    assert "stopped by SIGINT: the calls in flight were ended" in str(stopped.value)
    assert len(server.requests) == 3


@pytest.mark.long
def test_a_supervisors_sigterm_after_ctrl_c_does_not_cut_the_grace_short(tmp_path):
    behaviour = SlowYes(answer_s=1.0)
    with LoopbackServer(behaviour) as server, client(tmp_path, server.api_base) as llm:
        sender = send_when(behaviour.started, signal.SIGINT, signal.SIGTERM)
        with pytest.raises(JobStopped) as stopped:
            llm.run([judge(f"claim {i}") for i in range(30)])
        sender.join(BOUND_S)
        assert len(llm.cache) == len(server.requests)
    assert "calls in flight were answered and stored" in str(stopped.value)


def test_a_call_in_flight_that_fails_after_the_signal_is_not_asked_again(tmp_path):
    class SlowError(SlowYes):
        def __call__(self, body, headers):
            super().__call__(body, headers)
            return 500, "overloaded", ""

    behaviour = SlowError(answer_s=1.0)
    with LoopbackServer(behaviour) as server, client(tmp_path, server.api_base) as llm:
        sender = send_when(behaviour.started, signal.SIGTERM)
        with pytest.raises(JobStopped):
            llm.run([judge(f"claim {i}") for i in range(30)])
        sender.join(BOUND_S)
    # the 3 in flight got their 500 after the signal, and no retry was sent
    assert len(server.requests) == 3


def test_a_negative_grace_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"llm.stop_grace_s: expected a number of seconds"):
        LLMConfig.from_dict({"stop_grace_s": -1})


SCRIPT_JOB = """
import pathlib, signal, sys, time
def stop(signum, frame):
    pathlib.Path(sys.argv[1]).write_text(signal.Signals(signum).name)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
pathlib.Path(sys.argv[1] + ".ready").write_text("")
time.sleep(300)
"""


def test_snakemakes_stop_signal_is_passed_on_to_its_script_jobs_then_handled_as_before(
        tmp_path):
    """As in Snakemake's `onstart`: this process plays Snakemake, a child started from a
    .snakemake/scripts/ copy plays a script job, another child is no job."""
    scripts = tmp_path / ".snakemake" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "tmp1234.judge.py").write_text(SCRIPT_JOB)
    (tmp_path / "other.py").write_text(SCRIPT_JOB)
    job = subprocess.Popen([sys.executable, str(scripts / "tmp1234.judge.py"),
                            str(tmp_path / "job-got")])
    other = subprocess.Popen([sys.executable, str(tmp_path / "other.py"),
                              str(tmp_path / "other-got")])
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    handled, said = [], []
    try:
        deadline = time.monotonic() + BOUND_S
        while not ((tmp_path / "job-got.ready").exists()
                   and (tmp_path / "other-got.ready").exists()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [p.pid for p in script_jobs()] == [job.pid]
        signal.signal(signal.SIGTERM, lambda signum, frame: handled.append(signum))
        pass_stop_signals_to_jobs(said.append)
        os.kill(os.getpid(), signal.SIGTERM)
        job.wait(timeout=BOUND_S)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for process in (job, other):
            process.kill()
            process.wait(timeout=60)
    assert (tmp_path / "job-got").read_text() == "SIGTERM"
    assert not (tmp_path / "other-got").exists()
    assert handled == [signal.SIGTERM]  # Snakemake's own handler still ran
    assert said == ["received SIGTERM: asked the 1 running jobs to stop; each model job "
                    "stores the answers of its calls in flight first (llm.stop_grace_s)"]
