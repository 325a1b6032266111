"""The package's modules import each other one way: no module imports,
directly or through others, a module that imports it. Every import counts,
wherever it is written: at the top, inside a function, under
`if TYPE_CHECKING:`, absolute (`handlestore.x`) or relative (`from . import
x`), in the package and its subpackages (`handlestore.mcp`). No cluster
needed: the modules are parsed, not imported.

`from package import name` depends on the submodule `package.name` if there
is one, else on the package's `__init__`. That importing a submodule first
runs its parents' `__init__` is not counted: then every module would depend
on `handlestore/__init__.py`, which imports them."""

from __future__ import annotations

import ast
import pathlib
from collections import deque
from dataclasses import dataclass
from itertools import pairwise

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"

#: Module -> the package modules it imports -> the imports saying so.
Graph = dict[str, dict[str, list["Import"]]]


@dataclass(frozen=True)
class Import:
    """One import of a package module, and where it is written."""

    target: str
    where: str
    source: str


def modules(root: pathlib.Path, package: str) -> dict[str, pathlib.Path]:
    """Every module of `package` (a folder under `root`), by dotted name."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def base_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a `from ... import` names, made absolute."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    parts = package[: len(package) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def longest_module(name: str, known: set[str]) -> str:
    """`import a.b.c` runs a.b.c: the longest of its names that is a module."""
    parts = name.split(".")
    return next((m for n in range(len(parts), 0, -1) if (m := ".".join(parts[:n])) in known), "")


def targets(node: ast.AST, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The package modules one statement imports (none if not an import)."""
    if isinstance(node, ast.Import):
        return [longest_module(a.name, known) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = base_of(node, module, is_package)
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    return []


def imports(root: pathlib.Path, module: str, path: pathlib.Path, known: set[str]) -> list[Import]:
    """Every import of another package module in `module`, wherever written."""
    text = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        for target in dict.fromkeys(targets(node, module, path.name == "__init__.py", known)):
            if target in known and target != module:
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                found.append(Import(target, where, " ".join((ast.get_source_segment(text, node) or "").split())))
    return found


def graph(root: pathlib.Path, package: str) -> Graph:
    """The import graph of `package`'s modules."""
    found = modules(root, package)
    edges: Graph = {module: {} for module in found}
    for module, path in found.items():
        for imp in imports(root, module, path, set(found)):
            edges[module].setdefault(imp.target, []).append(imp)
    return edges


def shortest_cycle(edges: Graph, start: str) -> list[str] | None:
    """The shortest chain of imports from `start` back to it, if any."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for there in sorted(edges[here]):
            if there == start:
                path = [here]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1] + [start]
            if there not in came_from:
                came_from[there] = here
                queue.append(there)
    return None


def cycles(edges: Graph) -> list[list[str]]:
    """Shortest cycles: one through each module on a cycle, unless one
    found before passes through it."""
    found: list[list[str]] = []
    on_one: set[str] = set()
    for start in sorted(edges):
        if start not in on_one and (cycle := shortest_cycle(edges, start)):
            found.append(cycle)
            on_one.update(cycle)
    return found


def describe(edges: Graph, cycle: list[str]) -> str:
    """The cycle, and the imports that make it."""
    lines = [" -> ".join(cycle)]
    for here, there in pairwise(cycle):
        lines += [f"    {imp.where}: {imp.source}" for imp in edges[here][there]]
    return "\n".join(lines)


def test_the_package_imports_one_way() -> None:
    edges = graph(SRC, "handlestore")
    # The parser sees the package, its subpackages and its imports.
    assert "handlestore.mcp.event_store" in edges
    assert "handlestore.handles" in edges["handlestore.client"]
    found = cycles(edges)
    assert not found, "import cycles in handlestore:\n" + "\n".join(describe(edges, c) for c in found)


def write(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


#: Ways pkg/sub/b.py can import pkg/a.py back.
BACK = {
    "import": "import pkg.a",
    "import as": "import pkg.a as a",
    "from module": "from pkg.a import thing",
    "from package": "from pkg import a",
    "relative": "from ..a import thing",
    "relative package": "from .. import a",
    "type checking": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.a import thing\n",
    "in a function": "def f():\n    from ..a import thing\n    return thing\n",
    "in a method": "class C:\n    def f(self):\n        import pkg.a\n",
}


@pytest.mark.parametrize("back", BACK.values(), ids=list(BACK))
def test_every_kind_of_import_closes_a_cycle(tmp_path: pathlib.Path, back: str) -> None:
    files = {"pkg/__init__.py": "", "pkg/a.py": "from pkg.sub import b\n", "pkg/sub/__init__.py": ""}
    write(tmp_path, files | {"pkg/sub/b.py": back})
    edges = graph(tmp_path, "pkg")
    assert cycles(edges) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
    assert describe(edges, ["pkg.a", "pkg.sub.b", "pkg.a"]).startswith("pkg.a -> pkg.sub.b -> pkg.a\n    pkg/a.py:1: ")


def test_a_name_from_the_package_is_an_import_of_its_init(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "from pkg.a import thing\n", "pkg/a.py": "from pkg import other\n"})
    assert cycles(graph(tmp_path, "pkg")) == [["pkg", "pkg.a", "pkg"]]


def test_one_way_imports_are_no_cycle(tmp_path: pathlib.Path) -> None:
    files = {
        "pkg/__init__.py": "from pkg.a import thing\nfrom . import b\n",
        "pkg/a.py": "from pkg import b\nimport pkg.sub.c\n",
        "pkg/b.py": "import os\nfrom typing import TYPE_CHECKING\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from ..b import x\nfrom . import d\n",
        "pkg/sub/d.py": "",
    }
    write(tmp_path, files)
    edges = graph(tmp_path, "pkg")
    assert cycles(edges) == []
    assert set(edges["pkg.sub.c"]) == {"pkg.b", "pkg.sub.d"}
