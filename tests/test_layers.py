"""Imports point one way: engine <- store <- books <- service <- api and cli.

Every module of engine/ and ledger/ is read (not imported) and each import it makes,
at the top or inside a function, is held to its layer: a module may import its own
layer and the ones below, never one above. So the engine never learns that a ledger
exists, the store never reaches into the books, and nothing below the API knows it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS = (
    ("engine", ("engine",)),
    ("store", ("ledger.store",)),
    ("books", ("ledger.books",)),
    (
        "service",
        (
            "ledger",  # the package itself
            "ledger.unit_of_work",
            "ledger.service",
            "ledger.bootstrap",
            "ledger.rulesource",
            "ledger.simulate",
            "ledger.jsonlogging",
            "ledger.exports",  # reads the store and the books; the CLI and API serve it
            "ledger.audit",
        ),
    ),
    (
        "api and cli",
        ("ledger.api", "ledger.console", "ledger.cli", "ledger.wsgi", "ledger.__main__"),
    ),
)


def layer(module: str) -> int | None:
    """The index in LAYERS of `module`, by the longest prefix that names it; None for
    what is not ours (the standard library, packages)."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[1]
            ):
                best = (index, len(prefix))
    return None if best is None else best[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> Iterator[str]:
    """Every module `path` imports: `from ledger import db` imports ledger.db."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in ("engine", "ledger"):
                yield from (f"{node.module}.{alias.name}" for alias in node.names)
            else:
                yield node.module


def upward(graph: Mapping[str, list[str]]) -> list[str]:
    """Each import in `graph` (module: what it imports) that points to a higher layer."""
    found = []
    for module, targets in sorted(graph.items()):
        own = layer(module)
        assert own is not None, f"{module} has no layer: add it to LAYERS"
        for target in targets:
            theirs = layer(target)
            if theirs is not None and theirs > own:
                found.append(f"{module} ({LAYERS[own][0]}) imports {target} ({LAYERS[theirs][0]})")
    return found


def the_code() -> dict[str, list[str]]:
    return {
        module_name(path): list(imports(path))
        for package in ("engine", "ledger")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_every_import_points_down_or_across() -> None:
    assert upward(the_code()) == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in the_code() if layer(m) is None] == []


def test_the_check_catches_an_import_that_points_up() -> None:
    """The check itself, on imports the code must never make."""
    assert upward(
        {
            "engine.fold": ["ledger.store.codec"],
            "ledger.store.codec": ["ledger.books.accounts"],
            "ledger.books.projections": ["ledger.service"],
            "ledger.service": ["ledger.api.tokens"],
            "ledger.api.tokens": ["ledger.cli", "ledger.store.db", "engine"],
        }
    ) == [
        "engine.fold (engine) imports ledger.store.codec (store)",
        "ledger.books.projections (books) imports ledger.service (service)",
        "ledger.service (service) imports ledger.api.tokens (api and cli)",
        "ledger.store.codec (store) imports ledger.books.accounts (books)",
    ]
