"""The docs' examples run, and say what they do: the README's and every page's under
docs/, each page's commands on a club of its own."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import click
import pytest

from engine.rules import from_mapping
from ledger.rulesource import load_ruleset

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
WALKED = {DOCS / "api.md"}
"""Pages whose ```sh blocks tests/api/test_docs_walk.py pastes into bash whole, as a
reader does (pipes, `$(...)` and all): here only their inline commands run."""


def test_the_engine_example_runs_and_pays_what_it_says() -> None:
    block = re.search(r"```python\n(.*?)```", (DOCS / "engine.md").read_text(), re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(block.group(1), namespace)
    events = namespace["events"]
    settled = events[1]  # type: ignore[index]
    assert settled.bet_id in block.group(1)
    assert settled.winner == "bob"
    assert settled.transfers[0].amount == 2000
    assert f"bet_id='{settled.bet_id}'" in block.group(1)


def readme_commands(text: str, in_blocks: bool = True) -> list[str]:
    """Every `hazard ...` command a page prints: in ```sh blocks (less comments; not
    for a page the walk runs, `in_blocks=False`) and inline, as a reader would copy it.
    Synopses (`[--opt]`, ROLE, NAME, FILE.jsonl, ...) are patterns, not commands;
    `hazard serve` and `hazard witness serve` run until stopped (tests/api/test_serve.py,
    tests/witness/test_serve.py)."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S) if in_blocks else []:
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            found += [command] if re.match(r"(\.venv/bin/)?hazard ", command) else []
    found += re.findall(r"`((?:\.venv/bin/)?hazard [^`]*)`", text)
    runnable = []
    for command in dict.fromkeys(found):
        words = command.split()[1:]
        if "[" in command or any(re.fullmatch(r"[A-Z][A-Z_|]+(\.[a-z]+)?", w) for w in words):
            continue
        if words[0] == "serve" or words[:2] == ["witness", "serve"]:
            continue
        runnable.append(command)
    return runnable


def readme_refusals(text: str) -> dict[str, str]:
    """The `hazard` commands a page shows refused, in ```sh blocks: a command whose
    comment begins `refused (code)`, as the command prints it; command to code."""
    found: dict[str, str] = {}
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command, _, comment = line.partition("#")
            said = re.match(r"\s*refused \(([a-z-]+)\)", comment)
            if said is not None:
                found[command.strip()] = said.group(1)
    return found


def readme_outputs(text: str) -> dict[str, list[str]]:
    """What a page shows a `hazard` command printing, in ```sh blocks: the `# `
    lines right under it, as it prints them; command to lines."""
    found: dict[str, list[str]] = {}
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        command = None
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith("#") and command is not None:
                found.setdefault(command, []).append(stripped.removeprefix("# "))
            elif re.match(r"(\.venv/bin/)?hazard ", stripped):
                command = stripped.split(" # ")[0].strip()
            else:
                command = None
    return found


def _page_text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _shown(page: Path) -> tuple[list[str], dict[str, str], dict[str, list[str]]]:
    """A page's commands, the refusals it shows and the outputs it shows."""
    text, in_blocks = _page_text(page), page not in WALKED
    commands = readme_commands(text, in_blocks)
    if not in_blocks:
        return commands, {}, {}
    return commands, readme_refusals(text), readme_outputs(text)


PAGES_WITH_COMMANDS = [page for page in PAGES if _shown(page)[0]]


def test_the_docs_show_commands_refused_and_what_they_print() -> None:
    commands = [c for page in PAGES for c in _shown(page)[0]]
    outputs = {c: lines for page in PAGES for c, lines in _shown(page)[2].items()}
    assert any(c.startswith("hazard dispute resolve") for c in outputs), "outputs are shown"
    assert "hazard token create --role setter" in commands  # the one the issue tried
    assert "hazard db upgrade" in commands and "hazard token list" in commands


def _names_a_command(args: list[str]) -> bool:
    """`hazard export`, `hazard dispute open`: a command's name alone, as prose names it,
    where the command itself wants arguments."""
    from ledger.cli import main

    command: click.Command = main
    for word in args:
        if not isinstance(command, click.Group) or word not in command.commands:
            return False
        command = command.commands[word]
    return bool(args)


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_hazard_command_in_the_docs_runs_as_printed(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page's commands, in order, on a club as the quick start leaves it: its
    database, and its signing key (unless the page makes the key itself)."""
    from click.testing import CliRunner

    from ledger.cli import main
    from ledger.store import db
    from ledger.store.schema import tokens

    commands, refusals, outputs = _shown(page)
    assert set(refusals) <= set(commands), "a refusal shown is a command run"
    url = f"sqlite:///{tmp_path / 'readme.sqlite3'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HAZARD_KEY")  # `hazard key create` makes hazard.key here
    engine = db.make_engine(url)
    db.upgrade(engine)
    with engine.begin() as conn:  # the token the docs revoke by its id
        conn.execute(
            tokens.insert().values(
                id="3f9c0a12b4d5e6f7", tag="3f9c0a12", name="table-9", role="croupier",
                token_hash="0" * 64, created_at="2025-06-01T00:00:00Z",
            )
        )  # fmt: skip
    engine.dispose()
    if not any(shlex.split(c)[1:3] == ["key", "create"] for c in commands):
        made = CliRunner().invoke(main, ["key", "create"])  # as the first `make run` does
        assert made.exit_code == 0, made.output
    played: list[None] = []
    disputed: list[None] = []
    for command in commands:
        args = shlex.split(command)[1:]  # as a shell reads it: a claim is one argument
        if args == ["simulate"]:
            args += ["--rounds", "2000"]  # as printed, but not the default 10 s of it
        if "checkpoint-2026-11-23.txt" in args:
            _a_kept_checkpoint(tmp_path, url)  # what the auditor kept, made as the docs say
        if "club.pub" in args and not (tmp_path / "club.pub").exists():
            _the_public_key_kept(tmp_path)  # what `hazard key show` printed, saved
        if args[0] in ("export", "evening") and not played:
            played.append(_tables_played(tmp_path, url))  # t1, ann: what the exports name
            _witnesses_kept_up(tmp_path, url)  # the club's witnesses saw its evening
        if "deposit.tlog-proof" in args and not (tmp_path / "deposit.tlog-proof").exists():
            _a_receipt_kept(tmp_path, url)  # what a player keeps of a deposit
        if "club.policy" in args:
            _witnesses_kept_up(tmp_path, url)
        if args[0] == "dispute" and not disputed:
            # docs/api.md's evening and round 2, which the docs' disputes are over, on
            # a database of their own (its t1 is not the exports' t1)
            disputed.append(_rounds_disputed(tmp_path, f"sqlite:///{tmp_path / 'guide.sqlite3'}"))
        if args[0] == "dispute":
            monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'guide.sqlite3'}")
        if args[:2] == ["token", "create"] and "player" in args:
            # A player's token is made for a player who exists: the evening's players
            # (ann among them), or the one the page names, made as the office makes one.
            if not played:
                played.append(_tables_played(tmp_path, url))
                _witnesses_kept_up(tmp_path, url)
            _player_made(tmp_path, url, args[args.index("--name") + 1])
        result = CliRunner().invoke(main, args)
        monkeypatch.setenv("DATABASE_URL", url)
        if command in refusals:  # refused as the page shows, with its rule
            assert result.exit_code == 1, (command, result.output)
            assert result.output.startswith(f"refused ({refusals[command]})"), result.output
            continue
        if _names_a_command(args) and result.exit_code == 2:  # named, wanting arguments
            result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (command, result.output)
        if command in outputs:  # prints what the page shows under it
            assert result.output.splitlines() == outputs[command], command


def _player_made(here: Path, url: str, name: str) -> None:
    """The player `name`, as the setter's office makes one before their token (a
    player's token is made only for a player who exists), unless made already."""
    from ledger.books.book import Book
    from ledger.bootstrap import load_key
    from ledger.service import AlreadyExists, Club
    from ledger.store import db
    from ledger.store.eventstore import EventStore

    signer = load_key(here / "hazard.key")
    assert signer is not None, "the page makes the key before it makes a player's token"
    store = EventStore(db.make_engine(url), signer=signer)
    try:
        Club(Book(store)).create_player(name, "setter:cli")
    except AlreadyExists:
        pass
    finally:
        store.close()
        store.engine.dispose()


def _the_public_key_kept(here: Path) -> None:
    """The public key of the key made here, saved as club.pub: what `hazard key show`
    printed on the club's machine, taken away."""
    from ledger.bootstrap import load_key

    signer = load_key(here / "hazard.key")
    assert signer is not None, "the docs make the key before they name club.pub"
    (here / "club.pub").write_text(signer.verifier.text() + "\n", encoding="utf-8")


def _witnesses_kept_up(here: Path, url: str) -> None:
    """The club's three witnesses as the ledger's pushes keep them, each having cosigned
    the newest checkpoint (signed by the key made here), and the auditor's own policy
    over them saved as club.policy: the log's key, the three, and 2 of them."""
    from ledger.bootstrap import load_key
    from ledger.store import db
    from tests.ledger.cosignkit import WITNESSES, cosign, newest_size, policy_text

    signer = load_key(here / "hazard.key")
    assert signer is not None, "the docs make the key before they name club.policy"
    policy = here / "club.policy"
    if not policy.exists():
        policy.write_text(policy_text("2", signer.verifier), encoding="utf-8")
    engine = db.make_engine(url)
    try:
        if newest_size(engine):
            cosign(engine, None, *WITNESSES.values())
    finally:
        engine.dispose()


def _a_receipt_kept(here: Path, url: str) -> None:
    """A deposit signed by the key made here, its receipt's checkpoint kept as
    deposit.txt, then cosigned by the club's witnesses, and its tlog-proof kept as
    deposit.tlog-proof: what a player keeps of a write (docs/player.md)."""
    from ledger.books.book import Book
    from ledger.bootstrap import load_key
    from ledger.service import Club
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from ledger.store.log import tlogproof
    from ledger.store.vocabulary import Deposited

    signer = load_key(here / "hazard.key")
    assert signer is not None, "the page makes the key before it keeps a receipt"
    store = EventStore(db.make_engine(url), signer=signer)
    try:
        club = Club(Book(store))
        club.create_player("dee", "setter")
        receipt = club.account_command("dee", Deposited, 250, "setter")["receipt"]
    finally:
        store.close()
        store.engine.dispose()
    (here / "deposit.txt").write_text(receipt["checkpoint"], encoding="utf-8")
    _witnesses_kept_up(here, url)
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            proof = tlogproof.of(conn, receipt["positions"][0])
    finally:
        engine.dispose()
    (here / "deposit.tlog-proof").write_text(proof, encoding="utf-8")


def _a_kept_checkpoint(here: Path, url: str) -> None:
    """A write signed by the key `hazard key create` made here, its receipt's checkpoint
    kept as checkpoint-2026-11-23.txt, and the public key as club.pub."""
    from ledger.books.book import Book
    from ledger.bootstrap import load_key
    from ledger.service import Club
    from ledger.store import db
    from ledger.store.eventstore import EventStore

    signer = load_key(here / "hazard.key")
    assert signer is not None, "the page makes the key before it checks a checkpoint"
    store = EventStore(db.make_engine(url), signer=signer)
    try:
        receipt = Club(Book(store)).create_player("kept", "setter")["receipt"]
    finally:
        store.close()
        store.engine.dispose()
    (here / "checkpoint-2026-11-23.txt").write_text(receipt["checkpoint"], encoding="utf-8")
    (here / "club.pub").write_text(signer.verifier.text() + "\n", encoding="utf-8")


def test_the_custom_rule_set_example_shows_the_loader_s_defaults(tmp_path: Path) -> None:
    """docs/rules.md says every field of its custom rule set but `name` and `table` has
    the default shown: loaded with only those two, each field comes out as shown."""
    section = re.search(r"## Custom rule sets\n(.*?)\n## ", (DOCS / "rules.md").read_text(), re.S)
    assert section is not None
    assert "Every field but `name` and `table`" in section.group(1)
    block = re.search(r"```toml\n(.*?)```", section.group(1), re.S)
    assert block is not None
    shown = tomllib.loads(block.group(1))
    path = tmp_path / "my-club.toml"
    path.write_text(block.group(1), encoding="utf-8")
    as_given = load_ruleset(str(path))  # as `--ruleset my-club.toml` reads it
    bare = from_mapping({"name": shown["name"], "table": shown["table"]})
    defaults = bare.to_mapping()
    fields = [key for key in shown if key not in ("name", "table")]
    assert fields, "the example shows no defaults"
    for key in fields:
        if isinstance(shown[key], dict):
            for sub, value in shown[key].items():
                assert value == defaults[key][sub], f"{key}.{sub}: docs/rules.md {value!r}"
        else:
            assert shown[key] == defaults[key], f"{key}: docs/rules.md {shown[key]!r}"
    assert as_given == bare


def _tables_played(here: Path, url: str) -> None:
    """Tables t1 and t2 played, with ann at t1, signed by the key made here: what the
    docs' exports name."""
    from ledger.books.book import Book
    from ledger.bootstrap import load_key
    from ledger.service import Club
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from tests.ledger.exportkit import play, ticking

    store = EventStore(db.make_engine(url), ticking(), signer=load_key(here / "hazard.key"))
    try:
        play(Club(Book(store)))
    finally:
        store.close()
        store.engine.dispose()


def _rounds_disputed(here: Path, url: str) -> None:
    """docs/api.md's evening at t1 and the round 2 of its "A dispute, in curl" (up to
    bob's dispute), sent as the page sends them, with the setter's and cecil's tokens:
    the rounds "A disputed round, start to finish" disputes, on a new database signed
    by the key made here."""
    from ledger.api import create_app
    from ledger.books.book import Book
    from ledger.bootstrap import load_key
    from ledger.commands import Role
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from ledger.web.tokens import create
    from tests.api.guidekit import requests_of

    engine = db.make_engine(url)
    db.upgrade(engine)
    store = EventStore(engine, signer=load_key(here / "hazard.key"))
    try:
        app = create_app(book=Book(store), TESTING=True)
        tokens = {
            "api": create(engine, Role.SETTER, "bank"),
            "cecil": create(engine, Role.CROUPIER, "cecil"),
        }
        client = app.test_client()
        for method, path, body, *who in requests_of() + requests_of("A dispute, in curl"):
            if who == ["bob"]:
                break  # bob's dispute: docs/setter.md's own, from the command line
            token = tokens[who[0] if who else "api"]
            response = client.open(
                path, method=method, json=body, headers={"Authorization": f"Bearer {token}"}
            )
            assert response.status_code < 300, (method, path, response.get_json())
    finally:
        store.close()
        engine.dispose()


def test_the_docs_stand_on_their_own_without_the_specification_beside_the_project() -> None:
    """The project's docs and code describe the rules in their own words (docs/rules.md):
    a clone holds nothing outside it, so no page may send a reader there."""
    root = README.parent
    pages = PAGES
    sources = [*sorted((root / "engine").glob("*.py")), *sorted((root / "ledger").rglob("*.py"))]
    for path in [*pages, *sources]:
        text = path.read_text(encoding="utf-8")
        assert "shared/seeds" not in text, path
        assert "../shared" not in text, path
    assert "(docs/rules.md)" in README.read_text(encoding="utf-8")
