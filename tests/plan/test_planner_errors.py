"""A script that fails while the plan runs it is reported where the plan's user reads it: the
script's own logging set-up (handlers on the silenced stderr, an excepthook into them) does not
outlive it."""

from __future__ import annotations

import logging
import sys

import pytest
from snakemake.iocontainers import Namedlist

from rubriclab.plan.dag import PlannedJob
from rubriclab.plan.planner import _execute

FAILING_SCRIPT = """
from rubriclab.runtime import configure_logging
configure_logging(snakemake.log[0])
raise ValueError("no other example to take an unrelated rubric from")
"""


def test_a_failing_script_leaves_the_plan_its_own_logging_and_excepthook(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(FAILING_SCRIPT, encoding="utf-8")
    log = Namedlist(["logs/failing.log"])
    job = PlannedJob(index=0, rule="transfer_degrade", wildcards={}, params=Namedlist(),
                     input=Namedlist(), output=Namedlist(), log=log, resources={},
                     script=script, needs=())
    root = logging.getLogger()
    handlers, hook = root.handlers[:], sys.excepthook
    with pytest.raises(RuntimeError, match="transfer_degrade .* ValueError: no other example"):
        _execute(job, {}, tmp_path / "shadow", set())
    assert sys.excepthook is hook
    assert root.handlers == handlers
