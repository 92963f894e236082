"""The check that the slurm executor can read job states (rubriclab.slurm_status), on real
`scontrol show config` outputs of Debian's Slurm 22.05 (tests/fixtures/slurm_show_config/,
captured from one-node clusters: no accounting database with MinJobAge 300, 60 and 0 (which
22.05 reports as 2), and slurmdbd accounting with MinJobAge 300 and 150)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from rubriclab.slurm_status import (
    SlurmStatusError,
    check_slurm_status,
    effective_command,
    min_job_age_needed,
    parse_show_config,
    status_problems,
)

REPO = Path(__file__).resolve().parents[1]
CAPTURED = REPO / "tests" / "fixtures" / "slurm_show_config"


def captured(name: str):
    return parse_show_config((CAPTURED / f"22.05_{name}.txt").read_text())


def test_the_captured_outputs_are_read():
    assert captured("no_accounting_minjobage_300").accounting == "accounting_storage/none"
    assert captured("no_accounting_minjobage_300").min_job_age_s == 300
    assert captured("no_accounting_minjobage_60").min_job_age_s == 60
    assert captured("no_accounting_minjobage_0").min_job_age_s == 2  # 22.05 raises 0 to 2
    assert captured("slurmdbd_minjobage_300").accounting == "accounting_storage/slurmdbd"
    assert captured("slurmdbd_minjobage_150").min_job_age_s == 150


def test_units_and_a_text_that_is_not_scontrols():
    text = "AccountingStorageType = accounting_storage/none\nMinJobAge = 1h\n"
    assert parse_show_config(text).min_job_age_s == 3600
    with pytest.raises(ValueError, match="AccountingStorageType"):
        parse_show_config("slurm_load_ctl_conf error: Unable to contact slurm controller")


BOTH = {"sacct": True, "squeue": True}


# (captured config, status command chosen) -> the command the plugin 2.8.0 really polls with
@pytest.mark.parametrize("name, chosen, polled", [
    ("no_accounting_minjobage_300", "squeue", "squeue"),
    ("no_accounting_minjobage_60", "squeue", "sacct"),  # below 3 x 40 s: the plugin's fallback
    ("no_accounting_minjobage_0", "squeue", "sacct"),
    ("no_accounting_minjobage_300", None, "sacct"),  # the plugin's default where sacct exists
    ("slurmdbd_minjobage_150", "squeue", "squeue"),
])
def test_the_command_polled_follows_the_plugins_fallbacks(name, chosen, polled):
    assert effective_command(chosen, captured(name), **BOTH) == polled


def test_the_profiles_squeue_works_on_both_kinds_of_cluster_at_slurms_default_age():
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "profile.yaml").read_text())
    chosen = profile["slurm-status-command"]
    assert chosen == "squeue"
    for name in ("no_accounting_minjobage_300", "slurmdbd_minjobage_300"):
        assert status_problems(captured(name), chosen, **BOTH) == [], name


def test_sacct_without_accounting_is_refused_naming_squeue():
    (line,) = status_problems(captured("no_accounting_minjobage_300"), "sacct", **BOTH)
    assert "accounting_storage/none" in line and "--slurm-status-command squeue" in line


@pytest.mark.parametrize("name", ["no_accounting_minjobage_60", "no_accounting_minjobage_0"])
def test_a_short_age_without_accounting_names_minjobage_and_the_fallback(name):
    (line,) = status_problems(captured(name), "squeue", **BOTH)
    assert "switches from squeue to sacct" in line and f"MinJobAge={min_job_age_needed()}" in line


def test_squeue_with_an_age_shorter_than_the_plugins_polling_is_refused():
    # 150 s: above the plugin's own 120 s threshold, below its 180 s polling + 60 s query
    (line,) = status_problems(captured("slurmdbd_minjobage_150"), "squeue", **BOTH)
    assert "MinJobAge is 150 s" in line and "slurm-status-command: sacct" in line
    no_sacct = status_problems(captured("slurmdbd_minjobage_150"), "squeue",
                               sacct=False, squeue=True)
    assert "MinJobAge=240" in no_sacct[0]
    # a longer first wait raises the age the plugin itself asks for
    assert min_job_age_needed(init_s=100) == 300


def test_sacct_with_accounting_and_neither_command():
    assert status_problems(captured("slurmdbd_minjobage_150"), "sacct", **BOTH) == []
    (line,) = status_problems(captured("slurmdbd_minjobage_300"), None, sacct=False, squeue=False)
    assert "neither `sacct` nor `squeue`" in line


def test_the_runner_checks_only_the_slurm_executor_and_raises_one_message():
    config = (CAPTURED / "22.05_no_accounting_minjobage_60.txt").read_text()
    settings = SimpleNamespace(status_command="squeue", init_seconds_before_status_checks=40)
    on_path = {"scontrol": "/usr/bin/scontrol", "sacct": "/usr/bin/sacct",
               "squeue": "/usr/bin/squeue"}
    asked = []

    def run(command):
        asked.append(command)
        return config

    check_slurm_status("local", settings, run=run, which=on_path.get)
    check_slurm_status("cluster-generic", settings, run=run, which=on_path.get)
    assert asked == []
    with pytest.raises(SlurmStatusError, match="MinJobAge=240") as caught:
        check_slurm_status("slurm", settings, run=run, which=on_path.get)
    assert asked == [["scontrol", "show", "config"]]
    assert "accounting_storage/none" in str(caught.value)
    fine = (CAPTURED / "22.05_no_accounting_minjobage_300.txt").read_text()
    check_slurm_status("slurm", settings, run=lambda _: fine, which=on_path.get)
    with pytest.raises(SlurmStatusError, match="scontrol"):
        check_slurm_status("slurm", settings, run=run, which={}.get)


def test_a_failing_scontrol_is_named(tmp_path, monkeypatch):
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'Unable to contact slurm controller' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmStatusError, match="Unable to contact slurm controller"):
        check_slurm_status("slurm", SimpleNamespace(status_command="squeue"))
