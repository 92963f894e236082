"""A run that several tests read, made once per module: its failure fails one test, with the
run's log, and the tests that read it are skipped with that reason, so that one slow or broken
run is one failure, not a cascade of missing files and locks."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class SharedRun:
    name: str
    value: Any = None
    failure: str | None = None  # why it did not finish, with its log tail; None when it did

    @classmethod
    def made_by(cls, name: str, make: Callable[[], Any]) -> "SharedRun":
        try:
            return cls(name, make())
        except (Exception, pytest.fail.Exception) as exc:  # a run that failed or timed out
            return cls(name, failure=f"{type(exc).__name__}: {exc}")

    def completed(self) -> None:
        """For the one test that owns the run: fails it with the run's failure."""
        if self.failure is not None:
            pytest.fail(f"{self.name} did not finish; the tests that read it are skipped.\n"
                        f"{self.failure}", pytrace=False)

    def read(self) -> Any:
        """For a test that reads the run: what it made, or skipped with why it is missing."""
        if self.failure is not None:
            pytest.skip(f"{self.name} did not finish (its own test has the log): "
                        + self.failure.splitlines()[0].rstrip(":"))
        return self.value
