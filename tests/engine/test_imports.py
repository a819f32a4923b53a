"""engine/'s modules import one another one way: no cycle among them, counting the
imports made inside functions, which Python runs late enough to hold a cycle open (as
the referee and the rounds it reads back once did, and the referee, the disputes it
judges and the what-ifs that answer them)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def imported(source: str, modules: set[str]) -> set[str]:
    """The engine modules among `modules` that `source` imports, wherever it does."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "engine":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module.removeprefix("engine."))
        elif isinstance(node, ast.Import):
            found |= {alias.name.removeprefix("engine.") for alias in node.names}
    return found & modules


def imports(folder: Path = ENGINE) -> dict[str, set[str]]:
    """Each module of the engine, and the modules of the engine it imports."""
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return {m: imported((folder / f"{m}.py").read_text(encoding="utf-8"), modules) for m in modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle once, from its least module."""
    found: set[tuple[str, ...]] = set()

    def walk(path: list[str]) -> None:
        for then in sorted(graph[path[-1]]):
            if then == path[0]:
                found.add(tuple(path))
            elif then not in path and then > path[0]:
                walk([*path, then])

    for start in sorted(graph):
        walk([start])
    return [[*cycle, cycle[0]] for cycle in sorted(found)]


def test_the_engines_modules_import_one_another_without_a_cycle() -> None:
    assert [" -> ".join(cycle) for cycle in cycles(imports())] == []


def test_an_import_inside_a_function_counts() -> None:
    source = "def read_round():\n    from engine.referee import Referee\n"
    assert imported(source, {"referee", "rounds"}) == {"referee"}
    graph = {"referee": {"rounds"}, "rounds": {"referee"}, "fold": set()}
    assert cycles(graph) == [["referee", "rounds", "referee"]]
