"""Checks that a figure function wrote a real PNG and PDF (shared by the figure tests)."""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_figure_files(png, pdf):
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert pdf.read_bytes()[:5] == b"%PDF-"


def paths(tmp_path, name):
    return tmp_path / "out" / f"{name}.png", tmp_path / "out" / f"{name}.pdf"
