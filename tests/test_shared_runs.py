"""A shared run that fails is one failure and skipped readers, not a cascade."""

import pytest

from .shared_runs import SharedRun
from .snakemake_run import RunTimedOut


def test_a_run_that_finished_is_read_as_it_was_made():
    made = SharedRun.made_by("the run", lambda: 42)
    made.completed()
    assert made.read() == 42


@pytest.mark.parametrize("failure", [
    RunTimedOut("snakemake ran past its bound of 3600 s and was killed:\nlog tail"),
    pytest.fail.Exception("snakemake failed (1) after 9 s:\nlog tail"),
    FileNotFoundError("report.json"),
])
def test_a_run_that_failed_fails_its_own_test_and_skips_its_readers(failure):
    def make():
        raise failure

    broken = SharedRun.made_by("the run in /tmp/x", make)
    with pytest.raises(pytest.fail.Exception) as owner:
        broken.completed()
    assert "the run in /tmp/x did not finish" in str(owner.value)
    assert "log tail" in str(owner.value) or "report.json" in str(owner.value)
    with pytest.raises(pytest.skip.Exception) as reader:
        broken.read()
    assert f"{type(failure).__name__}: " in str(reader.value)
    assert "log tail" not in str(reader.value)  # the reason's first line, not the whole log
