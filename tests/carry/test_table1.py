import pytest

from rubriclab.carry.table1 import load_example, per_check_table, table1_markdown


def test_table1_reproduces_the_seed_exactly():
    checks, outputs = load_example()
    table = per_check_table(checks, outputs).set_index("check_id")
    assert table.loc["A", "credit"] == pytest.approx(1.5) and table.loc["A", "unique_catches"] == 1
    assert table.loc["B", "credit"] == pytest.approx(5 / 6) and table.loc["B", "unique_catches"] == 0
    assert table.loc["C", "credit"] == pytest.approx(1 / 3) and table.loc["C", "unique_catches"] == 0
    assert table.loc["D", "credit"] == pytest.approx(1 / 3) and table.loc["D", "blame"] == pytest.approx(1)
    assert table["blame"].drop("D").eq(0).all()
    assert table["credit"].sum() == pytest.approx(3) and table["blame"].sum() == pytest.approx(1)


def test_table1_markdown_states_shares_and_totals():
    checks, outputs = load_example()
    markdown = table1_markdown(checks, outputs, per_check_table(checks, outputs))
    assert "| R1 | flawed | A | A: 1 (unique catch) |" in markdown
    assert "| R3 | flawed | B, C, D | B, C, D: 1/3 each |" in markdown
    assert "| R4 | correct | D | D: 1 of blame |" in markdown
    assert "| A | 1.50 | 0.00 | 1 | 2 |" in markdown and "| B | 0.83 | 0.00 | 0 | 2 |" in markdown
    assert "Credits sum to 3.00 = the 3 flawed outputs caught; blame sums to 1.00" in markdown


def test_share_text_of_every_shape():
    from rubriclab.carry.table1 import share_text
    assert share_text([], "flawed") == share_text([], "correct") == "none"
    assert share_text(["A"], "flawed") == "A: 1 (unique catch)"
    assert share_text(["A", "B"], "flawed") == "A, B: 1/2 each"
    assert share_text(["D"], "correct") == "D: 1 of blame"
    # a correct output failing two checks: half the blame each (was "1 of blame/2 each")
    assert share_text(["A", "B"], "correct") == "A, B: 1/2 of blame each"
