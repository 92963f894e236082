from rubriclab.cli import main
from rubriclab.llm import LLMClient, LLMConfig, Request


def test_cache_export_then_import_into_another_cache(tmp_path, capsys):
    source = tmp_path / "source"
    requests = [Request.chat("fake/hash", [{"role": "user", "content": f"q{i}"}]) for i in range(3)]
    with LLMClient(LLMConfig(cache_dir=source)) as client:
        client.run(requests)
    assert main(["--cache-dir", str(source), "cache", "export", str(tmp_path / "x.jsonl.gz")]) == 0
    assert "exported 3 cached answers" in capsys.readouterr().out
    target = tmp_path / "target"
    assert main(["--cache-dir", str(target), "cache", "import", str(tmp_path / "x.jsonl.gz")]) == 0
    assert "3 added, 0 already present, 0 conflicting" in capsys.readouterr().out
    assert main(["--cache-dir", str(target), "cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "       3  fake/hash" in out and "       3  total" in out


def test_import_of_a_missing_file_fails_with_its_name(tmp_path, capsys):
    assert main(["--cache-dir", str(tmp_path), "cache", "import", str(tmp_path / "nope.gz")]) == 2
    assert "nope.gz" in capsys.readouterr().err


def test_version_and_no_arguments(capsys):
    import pytest

    from rubriclab import __version__
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"rubriclab {__version__}"
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: rubriclab" in err and "cache" in err and "plan" in err
