"""Cache export and import: provenance in every row, a header, checksums; an import that
recomputes every key and commits a whole file or nothing."""

import gzip
import json

import pytest

from rubriclab import __version__
from rubriclab.cli import main
from rubriclab.llm import LLMClient, ModelSettings, Request
from rubriclab.llm.cache_records import make_answer
from rubriclab.llm.request import CACHE_KEY_VERSION

from .openai_stub import ScriptedOpenAIServer


def ask(text, model="fake/hash"):
    return Request.chat(model, [{"role": "user", "content": text}], response_format="yes_no")


@pytest.fixture
def exported(tmp_path, backend):
    """An export of 12 fake answers and 3 answers of a model behind a loopback server (from a
    cache on each backend)."""
    with ScriptedOpenAIServer([], then="Yes") as server:
        remote = ModelSettings(api_base=server.api_base, placeholder_api_key=True)
        cfg = backend.config(tmp_path / "paid", per_model={"openai/stub": remote})
        with LLMClient(cfg) as client:
            client.run([ask(f"q{i}") for i in range(12)]
                       + [ask(f"r{i}", "openai/stub") for i in range(3)])
            assert client.cache.export_to(tmp_path / "calls.jsonl.gz") == 15
    return tmp_path / "calls.jsonl.gz"


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def write_lines(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def refused(backend, tmp_path, path, match):
    with backend.open(tmp_path / "elsewhere") as cache:
        with pytest.raises(ValueError, match=match):
            cache.import_from(path)
        assert len(cache) == 0  # nothing committed


def test_an_export_carries_its_provenance(exported):
    header, *rows = read_lines(exported)
    assert header["format"] == "rubriclab-cache-export"
    assert header["rubriclab_version"] == __version__
    assert header["cache_key_version"] == CACHE_KEY_VERSION
    assert header["rows"] == 15 == len(rows)
    assert header["models"]["fake/hash"] == {"rows": 12, "fingerprints": ["fake-v1"]}
    (endpoint,) = header["models"]["openai/stub"]["fingerprints"]
    assert endpoint.startswith("|endpoint=http://127.0.0.1:")
    row = next(r for r in rows if r["model"] == "openai/stub")
    assert row["request"]["messages"][0]["content"].startswith("r")
    assert row["model_fingerprint"] == endpoint and row["text"] == "Yes"
    assert len(row["sha256"]) == 64


def test_an_import_adds_every_row_and_replays_it(tmp_path, backend, exported):
    target = backend.config(tmp_path / "elsewhere")
    with backend.open(tmp_path / "elsewhere") as cache:
        report = cache.import_from(exported)
        assert (report.added, report.already_present, report.conflicting) == (15, 0, 0)
        assert cache.import_from(exported).already_present == 15
    with LLMClient(target) as client:
        replay = client.run([ask(f"q{i}") for i in range(12)])
    assert all(c.cached for c in replay)


def test_a_tampered_answer_is_refused_with_its_line(tmp_path, backend, exported):
    header, *rows = read_lines(exported)
    rows[2]["text"] = "No" if rows[2]["text"] != "No" else "Yes"  # key untouched
    write_lines(tmp_path / "tampered.jsonl.gz", [header, *rows])
    refused(backend, tmp_path, tmp_path / "tampered.jsonl.gz",
            r"tampered.jsonl.gz, line 4: the row's checksum does not match its content")


def test_a_key_that_does_not_match_its_request_is_refused(tmp_path, backend, exported):
    from rubriclab.llm.cache_export import _row_sha256

    header, *rows = read_lines(exported)
    rows[5]["request"]["messages"][0]["content"] = "another question"
    rows[5]["sha256"] = _row_sha256(rows[5])  # a consistent row, with someone else's key
    write_lines(tmp_path / "mismatched.jsonl.gz", [header, *rows])
    refused(backend, tmp_path, tmp_path / "mismatched.jsonl.gz",
            r"mismatched.jsonl.gz, line 7: key [0-9a-f]{64} does not match its request")


def test_a_wrongly_typed_field_is_refused(tmp_path, backend, exported):
    header, *rows = read_lines(exported)
    rows[0]["prompt_tokens"] = "lots"
    write_lines(tmp_path / "typed.jsonl.gz", [header, *rows])
    refused(backend, tmp_path, tmp_path / "typed.jsonl.gz",
            r"typed.jsonl.gz, line 2: prompt_tokens must be an integer >= 0, got 'lots'")


def test_a_truncated_file_is_refused_and_nothing_is_committed(tmp_path, backend, exported):
    data = exported.read_bytes()
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) * 2 // 3])
    refused(backend, tmp_path, tmp_path / "cut.jsonl.gz", r"cut.jsonl.gz, line \d+: the file ends early")


def test_missing_rows_are_refused(tmp_path, backend, exported):
    header, *rows = read_lines(exported)
    write_lines(tmp_path / "short.jsonl.gz", [header, *rows[:-2]])
    refused(backend, tmp_path, tmp_path / "short.jsonl.gz",
            r"short.jsonl.gz, line 15: the file holds 13 rows, its header \(line 1\) says 15")


def test_a_plain_file_is_refused_as_not_gzip(tmp_path, backend, exported):
    (tmp_path / "plain.jsonl").write_text("\n".join(json.dumps(r) for r in read_lines(exported)))
    refused(backend, tmp_path, tmp_path / "plain.jsonl", r"plain.jsonl: not a gzip file")


def test_an_export_without_a_header_is_refused(tmp_path, backend, exported):
    _, *rows = read_lines(exported)
    legacy = [{"key": r["key"], "model": r["model"], "text": r["text"],
               "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.0,
               "request_json": json.dumps(r["request"]), "created_at": 0.0} for r in rows]
    write_lines(tmp_path / "old.jsonl.gz", legacy)
    refused(backend, tmp_path, tmp_path / "old.jsonl.gz", r"old.jsonl.gz, line 1: an export without a header")


def test_a_refused_import_leaves_an_existing_cache_as_it_was(tmp_path, backend, exported):
    header, *rows = read_lines(exported)
    rows[-1]["cost_usd"] = "free"
    write_lines(tmp_path / "bad.jsonl.gz", [header, *rows])
    with backend.open(tmp_path / "own") as cache:
        cache.put(make_answer("0" * 64, ask("mine"), "Yes", 1, 1, 0.0, "fake-v1"))
        with pytest.raises(ValueError, match="line 16: cost_usd must be a number"):
            cache.import_from(tmp_path / "bad.jsonl.gz")
        assert len(cache) == 1


def test_the_command_line_names_the_file_and_line_and_imports_nothing(tmp_path, backend, exported,
                                                                     capsys, monkeypatch):
    header, *rows = read_lines(exported)
    rows[0]["completion_tokens"] = -3
    write_lines(tmp_path / "neg.jsonl.gz", [header, *rows])
    monkeypatch.chdir(tmp_path)  # where a URL's per-host files go (the default folder)
    target = backend.location(tmp_path / "cli-target")
    assert main(["--cache-dir", target, "cache", "import", str(tmp_path / "neg.jsonl.gz")]) == 1
    err = capsys.readouterr().err
    assert "neg.jsonl.gz, line 2: completion_tokens must be an integer >= 0" in err
    assert "nothing was imported" in err


def test_entries_stored_before_fingerprints_were_recorded_are_exported_with_theirs(tmp_path,
                                                                                  backend):
    """Their fingerprint is the one that reproduces their key; one that nothing reproduces is
    refused by name."""
    from rubriclab.llm.request import cache_key

    with backend.open(tmp_path / "old.sqlite") as cache:
        fake, remote, local = ask("a"), ask("b", "openai/x"), ask("c", "local/some.gguf")
        cache.put(make_answer(cache_key(fake, "fake-v1"), fake, "Yes", 1, 1, 0.0))
        cache.put(make_answer(cache_key(remote, ""), remote, "No", 1, 1, None))
        cache.put(make_answer(cache_key(local, "gguf-sha256:abc"), local, "Yes", 1, 1, 0.0))
        with pytest.raises(ValueError, match="1 of 'local/some.gguf'"):
            cache.export_to(tmp_path / "x.jsonl.gz")
        assert cache.export_to(tmp_path / "x.jsonl.gz",
                               {"local/some.gguf": "gguf-sha256:abc"}) == 3
    header, *rows = read_lines(tmp_path / "x.jsonl.gz")
    assert {r["model"]: r["model_fingerprint"] for r in rows} == {
        "fake/hash": "fake-v1", "openai/x": "", "local/some.gguf": "gguf-sha256:abc"}
    with backend.open(tmp_path / "new.sqlite") as cache:
        assert cache.import_from(tmp_path / "x.jsonl.gz").added == 3


def test_an_entry_keyed_before_numbers_were_normalised_is_exported_once_canonically(tmp_path,
                                                                                    backend):
    from rubriclab.llm.request import _key, cache_key
    import dataclasses

    request = ask("q")
    payload = dataclasses.asdict(request)
    payload["temperature"] = 0
    with backend.open(tmp_path / "c.sqlite") as cache:
        cache.put(make_answer(_key(payload, "fake-v1"), request, "Yes", 1, 1, 0.0))
        # the same entry, stored again under its canonical key when a run found it
        cache.put(make_answer(cache_key(request, "fake-v1"), request, "Yes", 1, 1, 0.0, "fake-v1"))
        assert cache.export_to(tmp_path / "x.jsonl.gz") == 1
    header, row = read_lines(tmp_path / "x.jsonl.gz")
    assert row["key"] == cache_key(request, "fake-v1") and header["rows"] == 1
