"""The replication page (rubriclab.replication.page): claims and arithmetic apart, counts that
never take an arithmetic check for a replication, and every claim file entry valid."""

from pathlib import Path

import pandas as pd
import pytest

from rubriclab.replication.page import (NOTE_CHARS, READERS, load_claims,
                                        replication_markdown, replication_table)

SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"
SEED_FILES = {"carry": "000_545245b50996773a.txt", "verify": "001_8272b02ca984f3fa.txt",
              "transfer": "002_8ea0400aefc4df5a.txt"}
FEWEST_GROUPS = {"carry": 25, "verify": 10, "transfer": 15}
ROW = dict(group="g", min_n="", interval="", n="", models="", note="")


def rows():
    return pd.DataFrame([
        {**ROW, "id": "carry.table1.credit_A", "group": "carry.table1", "work": "carry",
         "where": "Table 1", "kind": "arithmetic", "sentence": "A has credit 1.5", "seed": "1.5",
         "run": "1.5", "as_measured": "matches", "verdict": "matches"},
        {**ROW, "id": "carry.fig6.only_sp", "group": "carry.fig6", "work": "carry",
         "where": "Figure 6", "kind": "qualitative", "sentence": "Only Gate S+P | stays near",
         "seed": "yes", "run": "", "as_measured": "holds", "verdict": "stand-in",
         "note": "part: yes " * 200},
        {**ROW, "id": "verify.cited.x", "group": "verify.cited", "work": "verify",
         "where": "intro", "kind": "measured", "sentence": "Another work found 66%", "seed": "66",
         "run": "", "as_measured": "not computed", "verdict": "not computed",
         "note": "not part of this pipeline"},
    ])


def test_arithmetic_checks_stand_apart_and_never_count_as_replications():
    page = replication_markdown(rows(), "demo", ["Reading: one."])
    summary = page.split("\n")[2]
    assert "3 claim groups of the three works (3 rows)" in summary
    assert "Claims tested on this run's models (1): 1 stand-in" in summary
    assert "not replications (1): 1 matches" in summary and "Not computed by this pipeline: 1" \
        in summary
    claims, rest = page.split("## Arithmetic checks")
    assert "A has credit 1.5" not in claims and "A has credit 1.5" in rest
    assert "Another work found 66%" in rest.split("## Not computed")[1]
    assert "Reading: Reading: one." in page


def test_a_long_note_is_cut_on_the_page_and_a_pipe_cannot_break_the_table():
    page = replication_markdown(rows())
    line = next(l for l in page.split("\n") if "Only Gate S+P" in l)
    assert "Only Gate S+P \\| stays near" in line
    assert "(the whole note: replication.csv)" in line and len(line) < NOTE_CHARS + 400
    assert line.count(" | ") == 9  # ten cells, the escaped pipe not among the separators


def test_every_claim_file_entry_is_valid_and_the_page_has_forty_groups():
    claims = load_claims()
    assert len({c["group"] for c in claims if "missing" not in c}) >= 40
    assert all(len(c["sentence"]) > 20 for c in claims)
    assert all(len(c["missing"]) > 30 for c in claims if "missing" in c)
    # a reader for every claim the run tests, and none for a claim it cannot
    assert set(READERS) == {c["id"] for c in claims if "missing" not in c}


def test_a_reader_whose_output_the_run_did_not_build_cannot_tell(tmp_path):
    claim = next(c for c in load_claims() if c["id"] == "carry.fig6.only_sp")
    table = replication_table({name: tmp_path / f"{name}.csv" for name in
                               ("fig6", "carry_decisions_recon", "fig6_supplement")},
                              {"models": {"judge": "fake/hash", "reviser": "fake/hash"},
                               "carry": {}}, [claim])
    assert table.loc[0, "verdict"] == "cannot tell"
    assert "fig6.csv does not exist in this run" in table.loc[0, "note"]


@pytest.mark.parametrize("work", SEED_FILES)
def test_each_claim_quotes_its_seed_and_names_the_size_it_needs(work):
    seed = SEEDS / SEED_FILES[work]
    if not seed.exists():
        pytest.fail(f"the seed {seed} is missing (CI lays ../shared beside the clone)")
    text = seed.read_text(encoding="utf-8")
    claims = [c for c in load_claims() if c["work"] == work]
    assert len({c["group"] for c in claims}) >= FEWEST_GROUPS[work]
    for claim in claims:
        assert claim["sentence"] in text, claim["id"]
        if claim["kind"] != "arithmetic" and "missing" not in claim:
            assert "min_n" in claim, claim["id"]
