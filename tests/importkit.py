"""Who imports whom, read from the source (nothing is imported): every import a module
makes, at the top or inside a function, which Python runs late enough to hold a cycle
open. What tests/test_layers.py and tests/engine/test_imports.py hold the code to.

    graph = the_code()                  # {"ledger.service": ["ledger.store.db", ...], ...}
    cycles({m: ours(t) for m, t in graph.items()})
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path = ROOT) -> str:
    """`ledger/store/db.py` is ledger.store.db; `ledger/api/__init__.py` is ledger.api."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(packages: Iterable[str], root: Path = ROOT) -> dict[str, Path]:
    """Every module of `packages` (folders under `root`), by name."""
    return {
        module_name(path, root): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }


def imports(source: str, modules: Collection[str]) -> Iterator[str]:
    """Every module `source` imports, wherever it does: `from ledger.store import db`
    imports ledger.store.db when that is one of `modules`, and ledger.store (a name its
    __init__ defines) when it is not."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                yield whole if whole in modules else node.module


def the_code(packages: Iterable[str] = ("engine", "ledger")) -> dict[str, list[str]]:
    """Each module of `packages` and every module it imports, ours or not."""
    found = sources(packages)
    return {
        module: list(imports(path.read_text(encoding="utf-8"), found))
        for module, path in found.items()
    }


def cycles(graph: Mapping[str, Collection[str]]) -> list[list[str]]:
    """Each cycle of `graph` (module: the modules it imports) once, from its least
    module; an import of what `graph` does not hold is no edge."""
    found: set[tuple[str, ...]] = set()

    def walk(path: list[str]) -> None:
        for then in sorted(graph[path[-1]]):
            if then == path[0]:
                found.add(tuple(path))
            elif then in graph and then not in path and then > path[0]:
                walk([*path, then])

    for start in sorted(graph):
        walk([start])
    return [[*cycle, cycle[0]] for cycle in sorted(found)]
