"""Import trust: an export signed with the publisher's ed25519 key is verified against it on
import (a deliberate edit with every checksum recomputed is refused), implausible token counts
are refused naming the row, and an import writes in short transactions."""

import gzip
import hashlib
import json
import sqlite3

import pytest

from rubriclab.cli import main
from rubriclab.llm import LLMClient, Request
from rubriclab.llm import answer_store as cache_module
from rubriclab.llm.cache_export import _row_sha256


def ask(text):
    return Request.chat("fake/hash", [{"role": "user", "content": text}],
                        response_format="yes_no")


@pytest.fixture
def cache_dir(tmp_path, backend, monkeypatch):
    """A cache of 6 fake answers (on each backend; there the cache the tests import into too).
    A PostgreSQL cache named by --cache-dir keeps its per-host files in the default folder,
    relative to the working directory: the test's folder."""
    if backend.server is not None:
        monkeypatch.chdir(tmp_path)
    with LLMClient(backend.config(tmp_path / "published")) as client:
        client.run([ask(f"q{i}") for i in range(6)])
    return tmp_path / "published"


@pytest.fixture
def keys(tmp_path):
    assert main(["cache", "keygen", str(tmp_path / "keys" / "publisher")]) == 0
    assert main(["cache", "keygen", str(tmp_path / "keys" / "someone")]) == 0
    return tmp_path / "keys"


def export(backend, cache_dir, path, key=None):
    args = ["--cache-dir", backend.location(cache_dir), "cache", "export", str(path)]
    assert main(args + (["--sign", str(key)] if key else [])) == 0
    return path


def import_(backend, tmp_path, path, *trusted):
    args = ["--cache-dir", backend.location(tmp_path / "importer"), "cache", "import", str(path)]
    for key in trusted:
        args += ["--trust", str(key)]
    return main(args)


def imported(backend, tmp_path):
    with backend.open(tmp_path / "importer") as store:
        return len(store)


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def rewrite(path, header, rows):
    """Write an export back with every checksum recomputed, as a deliberate edit would."""
    sums = hashlib.sha256()
    for row in rows:
        row["sha256"] = _row_sha256(row)
        sums.update(row["sha256"].encode() + b"\n")
    header["sha256"] = sums.hexdigest()
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for line in [header, *rows]:
            fh.write(json.dumps(line) + "\n")
    return path


def flipped(path, out):
    header, *rows = read_lines(path)
    rows[2]["text"] = "No" if rows[2]["text"] != "No" else "Yes"
    return rewrite(out, header, rows)


def test_a_signed_export_imports_against_its_publishers_key(tmp_path, backend, cache_dir, keys, capsys):
    bundle = export(backend, cache_dir, tmp_path / "bundle.jsonl.gz", keys / "publisher")
    header = read_lines(bundle)[0]
    assert header["signature"]["algorithm"] == "ed25519"
    capsys.readouterr()
    assert import_(backend, tmp_path, bundle, keys / "publisher.pub") == 0
    out = capsys.readouterr().out
    assert "6 added" in out and f"signed by trusted key {header['signature']['key_id']}" in out
    assert imported(backend, tmp_path) == 6


def test_a_tampered_signed_export_is_refused(tmp_path, backend, cache_dir, keys, capsys):
    bundle = export(backend, cache_dir, tmp_path / "bundle.jsonl.gz", keys / "publisher")
    tampered = flipped(bundle, tmp_path / "tampered.jsonl.gz")
    capsys.readouterr()
    assert import_(backend, tmp_path, tampered, keys / "publisher.pub") == 1
    err = capsys.readouterr().err
    assert "tampered.jsonl.gz, line 1: the signature by key" in err
    assert "does not verify: the file was altered after it was signed" in err
    assert imported(backend, tmp_path) == 0
    # Refused without --trust too: a signature present is always checked.
    assert import_(backend, tmp_path, tampered) == 1
    assert imported(backend, tmp_path) == 0


def test_checksums_alone_let_a_deliberate_edit_through(tmp_path, backend, cache_dir, capsys):
    """What signatures are for: the same edit of an unsigned export, checksums recomputed,
    passes every check an import can make without the publisher's key."""
    tampered = flipped(export(backend, cache_dir, tmp_path / "plain.jsonl.gz"), tmp_path / "edit.jsonl.gz")
    assert import_(backend, tmp_path, tampered) == 0
    assert "unsigned" in capsys.readouterr().out
    assert imported(backend, tmp_path) == 6


def test_a_signature_by_another_key_or_none_is_refused_where_one_is_trusted(tmp_path, backend, cache_dir,
                                                                            keys, capsys):
    by_someone = export(backend, cache_dir, tmp_path / "someone.jsonl.gz", keys / "someone")
    unsigned = export(backend, cache_dir, tmp_path / "unsigned.jsonl.gz")
    capsys.readouterr()
    assert import_(backend, tmp_path, by_someone, keys / "publisher.pub") == 1
    assert "which is not among the trusted keys" in capsys.readouterr().err
    assert import_(backend, tmp_path, unsigned, keys / "publisher.pub") == 1
    assert "the file is not signed" in capsys.readouterr().err
    assert imported(backend, tmp_path) == 0
    # Any one of several trusted keys will do.
    assert import_(backend, tmp_path, by_someone, keys / "publisher.pub", keys / "someone.pub") == 0
    assert imported(backend, tmp_path) == 6


def test_keys_are_never_overwritten_and_bad_keys_are_named(tmp_path, backend, keys, cache_dir, capsys):
    assert main(["cache", "keygen", str(keys / "publisher")]) == 1
    assert "exists; a key is never overwritten" in capsys.readouterr().err
    args = ["--cache-dir", backend.location(cache_dir), "cache", "export",
            str(tmp_path / "x.jsonl.gz"),
            "--sign", str(keys / "publisher.pub")]
    assert main(args) == 2
    assert "publisher.pub: not an unencrypted PEM private key" in capsys.readouterr().err
    assert import_(backend, tmp_path, tmp_path / "x.jsonl.gz", "not-a-key") == 2
    assert "'not-a-key': neither a public key file nor a base64" in capsys.readouterr().err


@pytest.mark.parametrize("field,value", [("prompt_tokens", 10**12),
                                         ("completion_tokens", 10**12)])
def test_implausible_token_counts_are_refused_naming_the_row(tmp_path, backend, cache_dir, capsys,
                                                             field, value):
    header, *rows = read_lines(export(backend, cache_dir, tmp_path / "bundle.jsonl.gz"))
    rows[3][field] = value
    bad = rewrite(tmp_path / "bad.jsonl.gz", header, rows)
    assert import_(backend, tmp_path, bad) == 1
    err = capsys.readouterr().err
    assert (f"bad.jsonl.gz, line 5: row of key {rows[3]['key']}: {field} 1,000,000,000,000 "
            "is implausible") in err
    assert imported(backend, tmp_path) == 0


def test_an_import_releases_the_write_lock_between_its_batches(tmp_path, backend, cache_dir,
                                                              monkeypatch):
    """Another process's write, with no wait for the lock at all, gets in between batches,
    and sees the rows of the batches before (on PostgreSQL: each batch is committed as it
    comes, and the row of another process's claim is written without waiting)."""
    bundle = export(backend, cache_dir, tmp_path / "bundle.jsonl.gz")
    monkeypatch.setattr(cache_module, "IMPORT_BATCH_ROWS", 2)
    target = tmp_path / "importer" / "llm_cache.sqlite"
    checked = []
    written = []
    real = cache_module._answer_from_row

    def write_from_elsewhere(key):
        if backend.server is not None:
            import psycopg

            with psycopg.connect(backend.url(target), autocommit=True) as other:
                other.execute("SET lock_timeout = 1")
                other.execute("INSERT INTO claims VALUES (%s, 'other', 'host', 1, 0, 0)", (key,))
                return other.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        other = sqlite3.connect(target, timeout=0, isolation_level=None)
        other.execute("PRAGMA busy_timeout=0")
        other.execute("INSERT INTO claims VALUES (?, 'other', 'host', 1, 0)", (key,))
        count = other.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        other.close()
        return count

    def row_then_a_write_from_elsewhere(line):
        checked.append(line)
        if len(checked) in (6 + 3, 6 + 5):  # second pass, after its first and second batch
            written.append(write_from_elsewhere(f"k{len(checked)}"))
        return real(line)

    monkeypatch.setattr(cache_module, "_answer_from_row", row_then_a_write_from_elsewhere)
    with backend.open(target) as store:
        report = store.import_from(bundle)
        assert report.added == 6 and len(store) == 6
    assert written == [2, 4]  # each batch committed as it came, the lock free between
