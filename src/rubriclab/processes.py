"""Whether a process of this machine is still running (a leaf: imports nothing of rubriclab)."""

from __future__ import annotations

import psutil


def process_running(pid: int) -> bool:
    """True while `pid` runs here. A zombie (ended, not yet reaped by its parent) has ended;
    a process of another user, which may not be signalled, still counts as running."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
