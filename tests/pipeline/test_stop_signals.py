"""A run stopped by a signal (issue 35, item 3): Ctrl-C at a terminal (SIGINT to the whole
process group) and a supervisor's SIGTERM to snakemake's own process each stop the model job
from sending, let its calls in flight be answered and stored, and end it naming the signal;
the rerun pays for no request twice, counted at the judge's server."""

import os
import signal
import subprocess
import threading
import time

import pytest
import yaml

from ..llm.loopback import LoopbackServer
from .test_workflow import run, snakemake_cmd, write_config

pytestmark = [pytest.mark.pipeline, pytest.mark.long]

TARGET = "results/carry/fig2/summedits/verdicts.csv"
JOB_LOG = "logs/carry_fig2_judge/summedits.log"
JUDGE = "openai/slow-judge"
# 4 items x 2 runs x (10 per-check + 3 paragraph) requests
DISTINCT_REQUESTS = 104
SENT_BEFORE_THE_SIGNAL = 12
ANSWER_S = 0.4
# Generous bounds on events (a loaded machine is slow to start snakemake and its job), never
# the expected time of anything.
BOUND_S = 900


def slow_yes(body, headers):
    time.sleep(ANSWER_S)
    return 200, "Yes", "stop"


def a_judge_config(tmp_path, server):
    config = write_config(tmp_path, JUDGE, n=2, api_base=server.api_base,
                          placeholder_api_key=True, concurrency=4)
    values = yaml.safe_load(config.read_text())
    values["carry"]["judges"] = [JUDGE]
    values["models"] = {role: "fake/hash" for role in values["models"]}
    values["models"]["judge"] = JUDGE
    config.write_text(yaml.safe_dump(values))
    return config


def wait_for(condition, what):
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {BOUND_S} s for {what}")
        time.sleep(0.1)


def stopped_run(tmp_path, server, send_signal):
    """Start the judge job, send the signal once it has sent a few requests, and return
    snakemake's exit status and output, and how many requests the server got before it."""
    config = a_judge_config(tmp_path, server)
    process = subprocess.Popen(snakemake_cmd(tmp_path, config, "--", TARGET),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: (len(server.requests) >= SENT_BEFORE_THE_SIGNAL
                          or process.poll() is not None), "the judge job's first requests")
        assert process.poll() is None, "".join(output)
        send_signal(process)
        status = process.wait(timeout=BOUND_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    reader.join(timeout=60)
    return status, "".join(output), len(server.requests), config


@pytest.mark.parametrize("send_signal, name", [
    (lambda process: os.killpg(process.pid, signal.SIGINT), "SIGINT"),  # Ctrl-C at a terminal
    (lambda process: os.kill(process.pid, signal.SIGTERM), "SIGTERM"),  # kill, a supervisor
], ids=["ctrl-c-to-the-group", "sigterm-to-snakemake"])
def test_a_stopped_run_stores_its_calls_in_flight_and_pays_for_none_twice(
        tmp_path, send_signal, name):
    with LoopbackServer(slow_yes) as server:
        status, output, sent, config = stopped_run(tmp_path, server, send_signal)
        log = (tmp_path / JOB_LOG).read_text()
        stopped_target = (tmp_path / TARGET).exists()
        run(tmp_path, config, "--", TARGET)
        # every request paid once: the answers of the calls in flight at the signal were
        # stored, not asked again
        assert len(server.requests) == DISTINCT_REQUESTS, log[-3000:]
    assert status != 0 and not stopped_target, output
    # the job stopped sending: far from every request was sent
    assert sent < DISTINCT_REQUESTS / 2, (sent, output)
    assert "JobStopped" in log and f"stopped by {name}" in log, log[-3000:]
    assert "calls in flight were answered and stored" in log, log[-3000:]
    if name == "SIGTERM":
        assert "received SIGTERM: asked the 1 running jobs to stop" in output, output[-3000:]
    assert (tmp_path / TARGET).read_text().count("\n") == DISTINCT_REQUESTS + 1
