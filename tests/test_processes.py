"""rubriclab.processes: whether a claim's holder or a stand-in host's job still runs."""

import os
import subprocess
import sys
import time

from rubriclab.processes import process_running


def test_this_process_runs():
    assert process_running(os.getpid())


def test_a_reaped_process_has_ended():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    assert not process_running(child.pid)


def test_a_zombie_has_ended_though_its_pid_is_still_taken():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 60
    # Not reaped: the pid stays in the process table as a zombie until wait().
    while process_running(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        os.kill(child.pid, 0)  # the kernel still knows the pid ...
        assert not process_running(child.pid)  # ... and it counts as ended
    finally:
        child.wait(timeout=60)


def test_a_process_of_another_user_counts_as_running():
    assert process_running(1)  # init: may not be signalled by most users, always running
