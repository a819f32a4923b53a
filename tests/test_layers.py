"""Imports point one way: engine <- store <- books <- service <- web <- api, cli, witness.

Every module of engine/ and ledger/ is read (not imported, tests/importkit.py) and each
import it makes, at the top or inside a function, is held to its layer: a module may
import its own layer and the ones below, never one above. So the engine never learns
that a ledger exists, the store never reaches into the books, and nothing below the API
knows it. Beside the layers: only the store and the books touch the tables' schema, no
two modules import each other (however late), and no test module leans on another's
helpers (they are in kits).
"""

from __future__ import annotations

from collections.abc import Mapping

from tests.importkit import cycles, imports, the_code

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
            "ledger.commands",  # the club's commands, which every surface calls
            "ledger.watch",  # a client that remembers: hazard watch, and the console's check
        ),
    ),
    ("web", ("ledger.web",)),  # what the API and the console share, below both
    (
        "api and cli",
        (
            "ledger.api",
            "ledger.console",
            "ledger.cli",
            "ledger.wsgi",
            "ledger.__main__",
            "ledger.witness",  # a service of its own, run by others, served as `hazard serve` is
        ),
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


# -- the console and the API, side by side ------------------------------------------------

APART = (("ledger.console", "ledger.api"), ("ledger.api", "ledger.console"))
"""Two surfaces of one layer that never import each other: what both need is below both
(ledger.web, ledger.commands), so neither's pages or routes can lean on the other's."""
WIRING = {"ledger.api"}
"""Where the app is wired together (ledger.api.create_app registers the console): the
one module that may import both."""


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossings(graph: Mapping[str, list[str]]) -> list[str]:
    """Each import in `graph` from one of APART's surfaces into the other, but in WIRING."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if module not in WIRING
        for source, other in APART
        if within(module, source)
        for target in targets
        if within(target, other)
    ]


def test_the_console_and_the_api_import_nothing_of_each_other() -> None:
    assert crossings(the_code()) == []


def test_the_check_catches_the_console_importing_the_api_and_back() -> None:
    assert crossings(
        {
            "ledger.console.views": ["ledger.api.tables", "ledger.web.views"],
            "ledger.api.tables": ["ledger.console", "ledger.commands.tables"],
            "ledger.api": ["ledger.console"],
            "ledger.apiary": ["ledger.console"],
        }
    ) == [
        "ledger.api.tables imports ledger.console",
        "ledger.console.views imports ledger.api.tables",
    ]


# -- the tables' schema -------------------------------------------------------------------

SCHEMA = "ledger.store.schema"
TABLE_KEEPERS = ("ledger.store", "ledger.books")
"""Who may import SCHEMA: the store, and the books that keep the read models. Everything
above asks them (eventstore, tokens, proofs, queries.Reader, asof, auditreads, ...), so
that a table's SQL sits beside its other SQL, and a change to a table is one layer's."""


def table_users(graph: Mapping[str, list[str]]) -> list[str]:
    """Each import of SCHEMA in `graph` by a module outside TABLE_KEEPERS."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        if not any(within(module, keeper) for keeper in TABLE_KEEPERS)
        for target in targets
        if within(target, SCHEMA)
    ]


def test_only_the_store_and_the_books_import_the_schema() -> None:
    assert table_users(the_code()) == []


def test_the_check_catches_the_schema_imported_above_the_books() -> None:
    # `from ledger.store import schema` imports the module, not the package.
    source = "from ledger.store import db, schema\n"
    assert list(imports(source, {"ledger.store.db", SCHEMA})) == ["ledger.store.db", SCHEMA]
    assert table_users(
        {
            "ledger.web.tokens": [SCHEMA, "ledger.store.db"],
            "ledger.audit.recall": ["ledger.books.auditreads", SCHEMA],
            "ledger.storefront": [SCHEMA],
            "ledger.store.tokens": [SCHEMA],
            "ledger.books.tableviews": [SCHEMA],
            "ledger.api": ["ledger.store.schemata"],
        }
    ) == [
        "ledger.audit.recall imports ledger.store.schema",
        "ledger.storefront imports ledger.store.schema",
        "ledger.web.tokens imports ledger.store.schema",
    ]


# -- cycles -------------------------------------------------------------------------------


def test_no_modules_import_one_another_in_a_cycle() -> None:
    """Counting the imports made inside functions, which Python runs late enough to hold
    a cycle open (create_app and the blueprints that took `require` from it did)."""
    assert cycles(the_code()) == []


def test_the_cycle_check_counts_an_import_inside_a_function() -> None:
    source = "def create_app():\n    from ledger.api import tables\n"
    assert list(imports(source, {"ledger.api.tables"})) == ["ledger.api.tables"]
    graph = {
        "ledger.api": ["ledger.api.tables", "flask"],
        "ledger.api.tables": ["ledger.api", "ledger.web"],
        "ledger.web": [],
    }
    assert cycles(graph) == [["ledger.api", "ledger.api.tables", "ledger.api"]]


# -- the tests' helpers -------------------------------------------------------------------


def is_test_module(module: str) -> bool:
    """A module pytest collects: its name begins with test_."""
    return module.rpartition(".")[2].startswith("test_")


def leaning(graph: Mapping[str, list[str]]) -> list[str]:
    """Each import in `graph` of a test module. What tests share is in a kit (a *kit.py
    beside them, as tests/engine/tablekit.py), a conftest, or a helper module such as
    tests/signing.py: a test module is run, never imported."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in targets
        if within(target, "tests") and is_test_module(target) and target != module
    ]


def test_no_test_module_imports_another() -> None:
    assert leaning(the_code(("tests", "bench"))) == []


def test_the_check_catches_a_test_module_imported() -> None:
    source = (
        "from tests.api.test_reads import play\n"
        "from tests.api import gamekit, test_roles as roles\n"
        "from tests.ledger.exportkit import check\n"
    )
    modules = {"tests.api.test_reads", "tests.api.test_roles", "tests.api.gamekit"}
    assert leaning(
        {
            "tests.api.test_audit": list(imports(source, modules)),
            "tests.api.gamekit": ["tests.api.test_reads", "tests.signing"],
            "tests.api.conftest": ["tests.api.gamekit", "tests.testkit"],
        }
    ) == [
        "tests.api.gamekit imports tests.api.test_reads",
        "tests.api.test_audit imports tests.api.test_reads",
        "tests.api.test_audit imports tests.api.test_roles",
    ]
