"""The cluster rehearsal's own checks (make rehearse-cluster runs them end to end): which
tables two runs are compared on, and where each check's cache lives."""

from __future__ import annotations

import pytest

from rubriclab.rehearsal.cluster import cache_locations, differing_tables, tables_of


def _write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_tables_compared_leave_out_the_runs_own_history(tmp_path):
    for name in ("figures/carry/fig2.csv", "results/carry/judged/x/verdicts.csv",
                 "results/ledger/calls.csv", "results/benchmarks/job.csv", "figures/plot.png"):
        _write(tmp_path, name, "a\n1\n")
    assert sorted(tables_of(tmp_path)) == ["figures/carry/fig2.csv",
                                          "results/carry/judged/x/verdicts.csv"]


def test_a_differing_or_missing_table_is_named(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        _write(root, "figures/same.csv", "a\n1\n")
        _write(root, "results/ledger/timing.csv", str(root))  # differs, not compared
    _write(one, "figures/t.csv", "a\n1\n")
    _write(two, "figures/t.csv", "a\n2\n")
    _write(one, "results/only.csv", "a\n")
    assert differing_tables(one, one) == []
    assert differing_tables(one, two) == [f"results/only.csv: only in {one}",
                                          "figures/t.csv: differs"]


def test_each_check_gets_its_own_cache(tmp_path):
    sqlite = cache_locations("sqlite", tmp_path)
    assert sqlite("hosts") == str(tmp_path / "hosts-cache") != sqlite("one-machine")
    with pytest.raises(SystemExit, match="postgresql"):
        cache_locations("mysql://x", tmp_path)


def test_answers_are_counted_against_the_distinct_requests_of_all_ledgers(tmp_path):
    """A request answered from the cache in the other run is one request; a trial asked again
    as another sample is another, though the server sees the same body."""
    import json

    from rubriclab.rehearsal.cluster import answer_counts
    from rubriclab.rehearsal.server import RehearsalServer

    server = RehearsalServer()
    body = {"model": "gpt-4o-mini", "max_tokens": 64,
            "messages": [{"role": "user", "content": "Say hello."}]}
    for _ in range(2):
        assert server.handle("/v1/chat/completions", body)[0] == 200
    rows = {"one": [{"key": "a", "cached": False}, {"key": "b", "cached": False}],
            "two": [{"key": "a", "cached": True}]}
    for run, ledger in rows.items():
        _write(tmp_path / run, "results/ledger/x.jsonl",
               "".join(json.dumps(row) + "\n" for row in ledger))
    counts = answer_counts(server, tmp_path / "one", tmp_path / "two")
    assert counts["answers"] == 2 and counts["distinct_requests"] == 2
    assert counts["distinct_bodies"] == 1 and counts["answers_per_request"] == 1.0
    counts = answer_counts(server, tmp_path / "two")  # a key paid for twice
    assert counts["answers_per_request"] == 2.0
