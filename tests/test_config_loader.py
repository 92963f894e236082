"""One config loader (rubriclab.config): config files merged and --config KEY=VALUE read as
Snakemake itself does, for `rubriclab preflight`, `rubriclab plan` and the rehearsal alike."""

from __future__ import annotations

import pytest
import yaml

ENTRIES = ["aa=1", "bb=2.5", "cc=True", "dd=1e3", "ee={x: 1, y: [2, three]}", "ff='quoted'",
           "gg=", "hh=text"]


def test_config_arguments_are_read_by_snakemakes_own_parser():
    from snakemake.cli import parse_config

    from rubriclab.config import config_overrides
    from rubriclab.plan import parse_config_args

    expected = parse_config(ENTRIES)
    assert config_overrides(ENTRIES) == expected
    assert parse_config_args(ENTRIES) == expected
    assert expected["dd"] == 1000.0 and expected["ee"] == {"x": "1", "y": ["2", "three"]}


def test_a_malformed_config_argument_names_the_form():
    from rubriclab.config import ConfigError, config_overrides

    with pytest.raises(ConfigError, match="--config takes KEY=VALUE"):
        config_overrides(["nonsense"])


def test_config_files_merge_as_snakemake_merges_them(tmp_path):
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config

    from rubriclab.config import merged_config
    from rubriclab.rehearsal import run

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(yaml.safe_dump({"llm": {"per_model": {"m": {"batch": True}}, "x": 1},
                                     "scalar": 1, "keep": [1, 2]}))
    second.write_text(yaml.safe_dump({"llm": {"per_model": {"m": {"retires": "2030-01-01"}}},
                                      "scalar": {"now": "a mapping"}, "keep": [3]}))
    expected: dict = {}
    for path in (first, second):
        update_config(expected, load_configfile(path))
    assert merged_config([first, second]) == expected
    assert run.merged_config([first, second]) == expected
    assert merged_config([first], ["llm={x: 2}"]) == {
        "llm": {"per_model": {"m": {"batch": True}}, "x": "2"}, "scalar": 1, "keep": [1, 2]}
