"""The scenario configs of .test/config/ (.test/README.md): each a valid config as its README
line gives it, and each the same as the config its pipeline test builds."""

import pytest
import yaml

from rubriclab.config import load_yaml, merged_config, validate_config
from rubriclab.config_schema import unknown_keys

from .conftest import REPO

SCENARIOS = REPO / ".test" / "config"
# What each scenario is given after, as .test/README.md runs it.
GIVEN_AFTER = {
    "small.yaml": ["config/config.yaml"],
    "fake.yaml": ["config/config.yaml", ".test/config/small.yaml"],
    "known_truth.yaml": ["config/config.yaml"],
    "ablation.yaml": ["config/config.yaml", ".test/config/small.yaml", ".test/config/fake.yaml"],
}


def test_every_scenario_is_listed_and_documented():
    assert sorted(p.name for p in SCENARIOS.glob("*.yaml")) == sorted(GIVEN_AFTER)
    readme = (REPO / ".test" / "README.md").read_text(encoding="utf-8")
    assert all(f".test/config/{name}" in readme for name in GIVEN_AFTER)


@pytest.mark.parametrize("name", sorted(GIVEN_AFTER))
def test_a_scenario_is_a_valid_config(name, schema):
    files = [REPO / path for path in GIVEN_AFTER[name]] + [SCENARIOS / name]
    config = merged_config(files)
    assert unknown_keys(config, schema) == []
    validate_config(config, schema)


def test_the_fake_scenario_is_the_pipeline_tests_models():
    from .pipeline.test_workflow import fake_models

    assert load_yaml(SCENARIOS / "fake.yaml") == fake_models("fake/hash")


def test_the_known_truth_scenario_is_the_known_truth_world_at_a_small_size():
    from .pipeline.test_known_truth import JUDGES, MAIN_JUDGE

    world = yaml.safe_load((REPO / "config" / "known_truth.yaml").read_text(encoding="utf-8"))
    small = load_yaml(SCENARIOS / "known_truth.yaml")
    assert small["transfer"] == world["transfer"]
    assert small["carry"]["judges"] == JUDGES and small["models"]["judge"] == MAIN_JUDGE
    assert set(JUDGES) <= set(world["carry"]["judges"])
    assert {role: small["models"][role] for role in ("agent", "generator", "reviser")} == \
        {role: world["models"][role] for role in ("agent", "generator", "reviser")}
