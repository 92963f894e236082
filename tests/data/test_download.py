import functools
import hashlib
import http.server
import re
import threading
from pathlib import Path

import pytest

from rubriclab.data.download import (
    ChecksumError,
    DownloadError,
    acquire,
    copy_from_mirror,
    dataset_files,
    fetch,
    load_registry,
    sha256_of,
)

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
CONTENT = b"line one\nline two\n\xe2\x9c\x93 bytes, not text\n" * 100


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """Serve tmp_path/served over HTTP on 127.0.0.1; yields (base url, served folder)."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "data.bin").write_bytes(CONTENT)
    handler = functools.partial(QuietHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fetch_downloads_the_exact_bytes(server, tmp_path):
    base, _ = server
    dest = tmp_path / "out" / "data.bin"
    result = fetch(f"{base}/data.bin", dest, sha(CONTENT))
    assert result == dest
    assert dest.read_bytes() == CONTENT
    assert sha256_of(dest) == sha(CONTENT)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["data.bin"]


def test_fetch_without_checksum_still_downloads(server, tmp_path):
    base, _ = server
    dest = fetch(f"{base}/data.bin", tmp_path / "data.bin", None)
    assert dest.read_bytes() == CONTENT


def test_fetch_with_wrong_checksum_leaves_no_file(server, tmp_path):
    base, _ = server
    out = tmp_path / "out"
    url = f"{base}/data.bin"
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as caught:
        fetch(url, out / "data.bin", wrong)
    message = str(caught.value)
    assert url in message and wrong in message and sha(CONTENT) in message
    assert list(out.iterdir()) == []


def test_failed_fetch_keeps_a_previous_complete_file(server, tmp_path):
    base, _ = server
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"previous")
    with pytest.raises(ChecksumError):
        fetch(f"{base}/data.bin", dest, "0" * 64)
    assert dest.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin", "served"]


def test_fetch_404_raises_download_error_naming_the_url(server, tmp_path):
    base, _ = server
    url = f"{base}/missing.json"
    with pytest.raises(DownloadError) as caught:
        fetch(url, tmp_path / "out" / "missing.json", None)
    assert not isinstance(caught.value, ChecksumError)
    assert url in str(caught.value)
    assert list((tmp_path / "out").iterdir()) == []


def test_copy_from_mirror_copies_bytes_and_checks_them(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "sub").mkdir(parents=True)
    (mirror / "sub" / "file.jsonl").write_bytes(CONTENT)
    dest = copy_from_mirror(mirror, "sub/file.jsonl", tmp_path / "raw" / "file.jsonl", sha(CONTENT))
    assert dest.read_bytes() == CONTENT

    with pytest.raises(ChecksumError) as caught:
        copy_from_mirror(mirror, "sub/file.jsonl", tmp_path / "raw2" / "file.jsonl", "f" * 64)
    assert "f" * 64 in str(caught.value) and sha(CONTENT) in str(caught.value)
    assert list((tmp_path / "raw2").iterdir()) == []


def test_copy_from_mirror_names_the_missing_mirror_path(tmp_path):
    with pytest.raises(DownloadError) as caught:
        copy_from_mirror(tmp_path / "mirror", "absent.json", tmp_path / "raw" / "absent.json", None)
    assert str(tmp_path / "mirror" / "absent.json") in str(caught.value)


def test_acquire_prefers_the_mirror(server, tmp_path):
    base, _ = server
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "copy.bin").write_bytes(b"mirror bytes")
    spec = {"name": "data.bin", "url": f"{base}/data.bin", "sha256": None, "mirror_name": "copy.bin"}

    from_mirror = acquire(spec, tmp_path / "a", mirror)
    from_url = acquire(spec, tmp_path / "b", None)

    assert from_mirror == tmp_path / "a" / "data.bin"
    assert from_mirror.read_bytes() == b"mirror bytes"
    assert from_url.read_bytes() == CONTENT


def test_acquire_from_a_mirror_without_the_file_says_so(tmp_path):
    spec = {"name": "x.json", "url": "https://example.invalid/x.json", "sha256": None, "mirror_name": None}
    with pytest.raises(DownloadError, match="x.json has no mirror copy"):
        acquire(spec, tmp_path, tmp_path)


def test_dataset_files_reads_the_registry():
    summedits = dataset_files("summedits")
    assert len(summedits) == 10
    assert {"summedits_billsum.json", "summedits_shakespeare.json"} <= {f["name"] for f in summedits}
    assert [f["name"] for f in dataset_files("ragtruth")] == [
        "ragtruth_qa.jsonl", "ragtruth_summary.jsonl", "ragtruth_data2txt.jsonl"]
    originals = dataset_files("ragtruth", ["source_info.jsonl", "response.jsonl"])
    assert [f["name"] for f in originals] == ["source_info.jsonl", "response.jsonl"]
    with pytest.raises(ValueError, match="nope.json"):
        dataset_files("ragtruth", ["nope.json"])
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_files("imagenet")


def test_registry_entries_are_pinned_and_well_formed():
    for dataset, entry in load_registry().items():
        for spec in entry["files"] + entry.get("original_files", []):
            assert {"name", "url", "sha256", "mirror_name"} <= set(spec) <= {
                "name", "url", "sha256", "mirror_name", "mirror_sha256"}, spec
            assert spec["sha256"] is None or re.fullmatch(r"[0-9a-f]{64}", spec["sha256"]), spec
            if "mirror_sha256" in spec:  # a partial copy's own checksum, beside its mirror name
                assert spec["mirror_name"] and re.fullmatch(r"[0-9a-f]{64}", spec["mirror_sha256"])
            if spec["url"] is None:  # a mirror-only helper file
                assert spec["mirror_name"], spec
                continue
            assert spec["url"].startswith("https://")
            # Pinned: a repository commit, or OpenAI's dated file names (simple-evals).
            pinned = re.search(r"/[0-9a-f]{40}/", spec["url"]) or re.search(
                r"/simple-evals/healthbench/(hard_|consensus_)?2025-05-\d\d-", spec["url"])
            assert pinned, f"{spec['url']} is not pinned to a commit or a dated file"


def test_registry_checksums_match_the_mirror():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no dataset mirror at {SHARED_DATA}")
    checked = 0
    for dataset, entry in load_registry().items():
        for spec in entry["files"]:
            mirrored = SHARED_DATA / dataset / (spec["mirror_name"] or "")
            if spec["sha256"] and spec["mirror_name"] and mirrored.is_file():
                assert sha256_of(mirrored) == spec["sha256"], mirrored
                checked += 1
    assert checked == 11  # the 8 complete SummEdits domains and the 3 FaithJudge files


def test_every_mirror_copy_the_project_reads_has_a_checksum_that_matches():
    """The partial copies (HealthBench's six files, SummEdits' BillSum rows) are checked by
    their own checksum: each registry file with a mirror copy has one, and it is the mirror's."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no dataset mirror at {SHARED_DATA}")
    partial = []
    for dataset, entry in load_registry().items():
        for spec in entry["files"]:
            if not spec["mirror_name"]:
                continue
            assert spec.get("mirror_sha256") or spec["sha256"], spec  # never unverified
            if spec.get("mirror_sha256"):
                mirrored = SHARED_DATA / dataset / spec["mirror_name"]
                assert sha256_of(mirrored) == spec["mirror_sha256"], mirrored
                partial.append(f"{dataset}/{spec['name']}")
    assert sorted(partial) == sorted([
        "summedits/summedits_billsum.json", "healthbench/oss_eval.jsonl", "healthbench/hard.jsonl",
        "healthbench/consensus.jsonl", "healthbench/hard_prompt_ids_known.json",
        "healthbench/oss_eval_items_meta.jsonl", "healthbench/srh_subset_partial.jsonl"])


def test_a_failed_download_points_at_data_mirror(tmp_path):
    # Nothing listens on port 9 of 127.0.0.1: the connection is refused, as without network.
    with pytest.raises(DownloadError) as caught:
        fetch("http://127.0.0.1:9/data.json", tmp_path / "out" / "data.json", None, timeout=5)
    assert "set data_mirror in the config (or RUBRICLAB_DATA_MIRROR)" in str(caught.value)


def test_a_missing_mirror_file_names_data_mirror(tmp_path):
    with pytest.raises(DownloadError) as caught:
        copy_from_mirror(tmp_path / "mirror" / "ragtruth", "absent.json", tmp_path / "raw" / "a.json", None)
    assert f"data_mirror is {str(tmp_path / 'mirror')!r}" in str(caught.value)
