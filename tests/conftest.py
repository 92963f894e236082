import os
from pathlib import Path

import pytest

from rubriclab.config import load_yaml

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()

# litellm must never wait on the network for its price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data folder {SHARED_DATA} is missing (CI lays it beside the clone)")
    return SHARED_DATA


@pytest.fixture
def schema(repo):
    """The config schema (workflow/schemas/config.schema.yaml)."""
    return load_yaml(repo / "workflow/schemas/config.schema.yaml")


@pytest.fixture
def embedded(repo):
    """The embedded default config (config/config.yaml)."""
    return load_yaml(repo / "config/config.yaml")


# The suite's longest files, longest first. `make test` runs the suite on two workers that take
# whole files in collection order (pytest-xdist, --dist loadfile --no-loadscope-reorder): begun
# first, these run beside the many short files instead of after them.
LONGEST_FIRST = (
    "tests/rehearsal/test_rehearsal.py",
    "tests/pipeline/test_workflow.py",
    "tests/pipeline/test_known_truth.py",
)


def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        path = Path(str(item.fspath)).resolve().relative_to(REPO).as_posix()
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file and among the rest is kept
