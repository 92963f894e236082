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
