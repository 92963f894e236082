"""workflow/envs/rubriclab.yaml (every rule's conda environment) holds pyproject.toml's
dependencies, so `snakemake --use-conda` runs with what `make install` installs."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_conda_environment_has_every_dependency_of_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [r for r in [*project["dependencies"], *extras["pipeline"], *extras["local"]]
              if _name(r) != "rubriclab"]  # local's "rubriclab[pipeline]": the pipeline's, above
    env = yaml.safe_load((ROOT / "workflow/envs/rubriclab.yaml").read_text())["dependencies"]
    conda = {_name(d) for d in env if isinstance(d, str)}
    pip = {_name(d) for d in env if isinstance(d, dict) for d in d["pip"]}
    # conda-forge names matplotlib's library without its Qt/Tk extras
    conda |= {"matplotlib"} if "matplotlib-base" in conda else set()
    missing = [r for r in wanted if _name(r) not in conda | pip and _name(r) != "snakemake"]
    assert not missing, f"workflow/envs/rubriclab.yaml lacks {missing}"
