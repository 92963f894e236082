"""examples/generate.py writes exactly the example tables the repository holds."""

import importlib.util

from .conftest import EXAMPLES


def test_the_example_tables_are_what_the_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("generate", EXAMPLES / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    written = generate.write(tmp_path)
    assert len(written) == 11
    for path in written:
        name = path.relative_to(tmp_path)
        assert path.read_bytes() == (EXAMPLES / name).read_bytes(), name
