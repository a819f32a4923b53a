"""engine/'s modules import one another one way: no cycle among them, counting the
imports made inside functions, which Python runs late enough to hold a cycle open (as
the referee and the rounds it reads back once did, and the referee, the disputes it
judges and the what-ifs that answer them). The reading of imports is tests/importkit.py's,
which holds all of ledger/ to the same (tests/test_layers.py)."""

from __future__ import annotations

from pathlib import Path

from tests.importkit import cycles, imports

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def imported(source: str, modules: set[str]) -> set[str]:
    """The engine modules among `modules` (by their names in engine/) that `source`
    imports, wherever it does."""
    ours = {f"engine.{m}" for m in modules}
    return {m.removeprefix("engine.") for m in imports(source, ours) if m in ours}


def engine_imports(folder: Path = ENGINE) -> dict[str, set[str]]:
    """Each module of the engine, and the modules of the engine it imports."""
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return {m: imported((folder / f"{m}.py").read_text(encoding="utf-8"), modules) for m in modules}


def test_the_engines_modules_import_one_another_without_a_cycle() -> None:
    assert [" -> ".join(cycle) for cycle in cycles(engine_imports())] == []


def test_an_import_inside_a_function_counts() -> None:
    source = "def read_round():\n    from engine.referee import Referee\n"
    assert imported(source, {"referee", "rounds"}) == {"referee"}
    graph = {"referee": {"rounds"}, "rounds": {"referee"}, "fold": set()}
    assert cycles(graph) == [["referee", "rounds", "referee"]]
