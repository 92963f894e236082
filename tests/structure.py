"""The source tree's shape, checked: no import circle, no import of a higher floor, no file over
600 lines, no provider chosen by a "fake/" or "local/" prefix outside the provider registry.

`python -m tests.structure` checks src/ and exits 1 on any finding (`make lint` runs it);
`findings(root)` checks any tree with a `rubriclab` package under `root` (tests/test_structure.py
gives it small trees that must fail). Imports are read with `ast`, never run: module-level and
function-level imports count, as does `importlib.import_module("literal")`; imports under
`if TYPE_CHECKING:` do not, since they never run.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "rubriclab"

# The floors of src/rubriclab, bottom up: a module may import its own floor and those below it,
# never one above. Each name is a module or subpackage directly under rubriclab (the package's
# own __init__ sits below every floor and may import none of them). A new module or subpackage
# is a finding until it is given a floor here.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"files", "config", "config_schema", "processes", "markup", "labels", "tidy",
               "schema_doc", "plotting", "browser", "job_signals", "provenance"}),
    # The model layer, statistics and the data sets. known_truth's scripted worlds sit above the
    # model layer, which finds them through an entry point (rubriclab.llm.providers).
    frozenset({"llm", "stats", "data"}),
    frozenset({"known_truth"}),
    # The works and the tools that plan, size and check a run.
    frozenset({"plan", "carry", "transfer", "verify", "recon", "sizing", "runs", "validate",
               "model_job", "runtime", "slurm_status"}),
    frozenset({"rehearsal", "reuse"}),
    frozenset({"methods", "replication", "report_items"}),
    frozenset({"cli"}),
)

MAX_LINES = 600
# The one module that may tell providers apart by their model names' prefixes.
PROVIDER_REGISTRY = f"{PACKAGE}/llm/providers.py"
PROVIDER_PREFIXES = frozenset({"fake/", "local/"})


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. rubriclab.llm.cache
    target: str  # the imported module (a package's __init__ goes by the package's name)
    path: str  # the importing file, relative to the root's parent where possible
    line: int


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _shown(root: Path, path: Path) -> str:
    """A path as a reader finds it: relative to the folder that holds the root (src/...)."""
    try:
        return str(path.relative_to(root.parent))
    except ValueError:
        return str(path)


def read_modules(root: Path) -> dict[str, Module]:
    package_dir = root / PACKAGE
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"no package {PACKAGE} under {root} ({package_dir}/__init__.py)")
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as error:
            raise SyntaxError(f"{_shown(root, path)}:{error.lineno}: cannot parse: {error.msg}") \
                from error
        name = _module_name(root, path)
        modules[name] = Module(name, path, tree)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node that can run: the bodies of `if TYPE_CHECKING:` are left out (their else kept)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(reversed(node.orelse))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _resolve_relative(module: Module, level: int, name: str | None) -> str:
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    parts = package.split(".")
    if level - 1 >= len(parts):
        raise ImportError(f"{module.path}: relative import beyond the top-level package")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{name}" if name else base


def _owner(name: str, known: set[str]) -> str | None:
    """The module of the tree that importing `name` runs last: itself, or the nearest package."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(root: Path, module: Module, known: set[str]) -> list[Import]:
    found = []
    shown = _shown(root, module.path)

    def add(target: str, line: int) -> None:
        owner = _owner(target, known)
        if owner is not None and owner != module.name:
            item = Import(module.name, owner, shown, line)
            if item not in found:
                found.append(item)

    for node in _runtime_nodes(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, node.level, node.module) if node.level
                    else node.module or "")
            for alias in node.names:
                # `from a import b`: b is a submodule when the tree has one, else a name in a.
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in known else base, node.lineno)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name)
                       and node.func.id in {"import_module", "__import__"}))):
            add(node.args[0].value, node.lineno)
    return found


def _unit(module: str) -> str:
    """The module or subpackage directly under the package that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _floors(layers: tuple[frozenset[str], ...]) -> dict[str, int]:
    floors = {"": 0}
    for number, layer in enumerate(layers, start=1):
        for unit in layer:
            if unit in floors:
                raise ValueError(f"{unit} is on two floors of LAYERS")
            floors[unit] = number
    return floors


def _strongly_connected(nodes, edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, each sorted, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def _shortest_cycle(start: str, members: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path start -> ... -> start inside one component."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, ())):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start] if node != start else [start, start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a component without a cycle through it")


def _circle_findings(kind: str, imports: list[Import], key) -> list[str]:
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for item in imports:
        source, target = key(item.source), key(item.target)
        if source != target:
            edges[source].add(target)
            where[source, target].append(item)
    found = []
    for component in _strongly_connected(set(edges), edges):
        cycle = _shortest_cycle(component[0], set(component), edges)
        lines = [f"import circle between {kind}: {' -> '.join(cycle)}"
                 + (f" (all in the circle: {', '.join(component)})"
                    if len(component) > len(cycle) - 1 else "")]
        for source, target in zip(cycle, cycle[1:]):
            lines.extend(f"    {item.path}:{item.line}: {item.source} imports {item.target}"
                         for item in where[source, target])
        found.append("\n".join(lines))
    return found


def _prefix_constants(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names bound to a provider prefix, or to a tuple holding one."""
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            prefixes = _prefixes_in(node.value, {})
            if prefixes:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = prefixes
    return constants


def _prefixes_in(value: ast.expr, constants: dict[str, set[str]]) -> set[str]:
    if isinstance(value, ast.Constant) and value.value in PROVIDER_PREFIXES:
        return {value.value}
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_prefixes_in(item, constants) for item in value.elts))
    if isinstance(value, ast.Name):
        return constants.get(value.id, set())
    return set()


def prefix_findings(root: Path, modules: dict[str, Module]) -> list[str]:
    constants = {name: _prefix_constants(module.tree) for name, module in modules.items()}
    found = []
    for module in modules.values():
        shown = _shown(root, module.path)
        if module.path.relative_to(root).as_posix() == PROVIDER_REGISTRY:
            continue
        visible = dict(constants[module.name])
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                base = (_resolve_relative(module, node.level, node.module) if node.level
                        else node.module or "")
                for alias in node.names:
                    if alias.name in constants.get(base, {}):
                        visible[alias.asname or alias.name] = constants[base][alias.name]
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"startswith", "removeprefix"} and node.args):
                continue
            # str.startswith(model, "fake/") names the prefix second.
            argument = node.args[1] if (len(node.args) > 1 and isinstance(node.func.value, ast.Name)
                                        and node.func.value.id == "str") else node.args[0]
            prefixes = _prefixes_in(argument, visible)
            if prefixes:
                found.append((shown, node.lineno, f"{shown}:{node.lineno}: {node.func.attr}("
                              f"{', '.join(repr(p) for p in sorted(prefixes))}) chooses a provider "
                              f"by its prefix outside the provider registry ({PROVIDER_REGISTRY})"))
    return [line for *_, line in sorted(found)]


def long_file_findings(root: Path, max_lines: int = MAX_LINES) -> list[str]:
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts \
                or any(part.endswith(".egg-info") for part in path.parts):
            continue
        lines = path.read_bytes().count(b"\n")
        if lines > max_lines:
            found.append(f"{_shown(root, path)}: {lines} lines, over {max_lines}")
    return found


def findings(root: Path, layers: tuple[frozenset[str], ...] = LAYERS,
             max_lines: int = MAX_LINES) -> list[str]:
    """Everything wrong with the tree under `root` (the folder holding the package), as lines
    that say what and where; empty when the tree keeps every rule."""
    root = Path(root)
    modules = read_modules(root)
    known = set(modules)
    imports = [item for module in modules.values() for item in imports_of(root, module, known)]
    floors = _floors(layers)
    found = []

    for unit in sorted({_unit(name) for name in modules} - set(floors)):
        paths = sorted(_shown(root, m.path) for n, m in modules.items() if _unit(n) == unit)
        found.append(f"{PACKAGE}.{unit} ({paths[0]}{', ...' if len(paths) > 1 else ''}) is on no "
                     f"floor: give it one in LAYERS (tests/structure.py)")
    for item in imports:
        source, target = _unit(item.source), _unit(item.target)
        if source in floors and target in floors and floors[target] > floors[source]:
            found.append(f"{item.path}:{item.line}: {item.source} (floor {floors[source]}, "
                         f"{source or PACKAGE}) imports {item.target} (floor {floors[target]}, "
                         f"{target}), a higher floor")

    found += _circle_findings("modules", imports, lambda name: name)
    found += _circle_findings(f"{PACKAGE}'s packages", imports,
                              lambda name: f"{PACKAGE}.{_unit(name)}" if _unit(name) else PACKAGE)
    found += long_file_findings(root, max_lines)
    found += prefix_findings(root, modules)
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "src"
    found = findings(root)
    for finding in found:
        print(finding)
    if found:
        print(f"structure: {len(found)} finding(s) under {root}", file=sys.stderr)
        return 1
    print(f"structure: no import circle, no import of a higher floor, no file over {MAX_LINES} "
          f"lines, no provider prefix outside {PROVIDER_REGISTRY} ({root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
