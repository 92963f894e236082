from rubriclab.files import sha256_of, tree_fingerprint


def test_tree_fingerprint_changes_with_content_and_names_only(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    first = tree_fingerprint(tmp_path / "pkg")
    (tmp_path / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"junk")
    assert tree_fingerprint(tmp_path / "pkg") == first
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    second = tree_fingerprint(tmp_path / "pkg")
    assert second != first
    (tmp_path / "pkg" / "a.py").rename(tmp_path / "pkg" / "b.py")
    assert tree_fingerprint(tmp_path / "pkg") not in (first, second)


def test_sha256_of_a_known_string(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_of(tmp_path / "f") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
