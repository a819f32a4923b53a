"""`hazard token` writes its events, `hazard verify --deep` holds the tokens table to
them (an insider's row or revocation is named), and `hazard books` prints the club's
books as lines, JSON and CSV; on both databases."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from click.testing import CliRunner, Result

from ledger.books.book import Book
from ledger.cli import main
from ledger.commands import Caller, Role, tables
from ledger.commands import significant as command
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import tokens
from ledger.store.vocabulary import Deposited


def hazard(store: EventStore, *args: str) -> Result:
    url = store.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(main, list(args), env={"DATABASE_URL": url})


def _made(store: EventStore, role: str, name: str) -> str:
    made = hazard(store, "token", "create", "--role", role, "--name", name)
    assert made.exit_code == 0, made.output
    with store.engine.connect() as conn:
        return str(
            conn.execute(
                sa.select(tokens.c.id).where(tokens.c.name == name, tokens.c.revoked_at.is_(None))
            ).scalar_one()
        )


def test_verify_deep_passes_tokens_made_and_revoked_by_the_cli(store: EventStore) -> None:
    _made(store, "setter", "bank")
    gone = _made(store, "croupier", "cecil")
    assert hazard(store, "token", "revoke", gone).exit_code == 0
    deep = hazard(store, "verify", "--deep")
    assert deep.exit_code == 0, deep.output
    assert "tokens: every token's row is what the token events made and revoked" in deep.output
    report = hazard(store, "books", "authentication", "--json")
    rows = [json.loads(line) for line in report.output.splitlines()]
    assert [(r["what"], r["actor"]) for r in rows] == [
        ("token created", "setter:cli"),
        ("token created", "setter:cli"),
        ("token revoked", "setter:cli"),
    ]


def test_verify_deep_names_a_token_row_an_insider_added_or_revoked(store: EventStore) -> None:
    _made(store, "setter", "bank")
    held = _made(store, "auditor", "audrey")
    with store.engine.begin() as conn:
        conn.execute(
            tokens.insert().values(id="0badc0de0badc0de", tag="0badc0de", name="mallory",
                                   role="setter", token_hash="1" * 64,
                                   created_at="2026-11-27T09:00:00.000000Z")
        )  # fmt: skip
        conn.execute(
            tokens.update().where(tokens.c.id == held).values(revoked_at="2026-11-27T09:00:00Z")
        )
    plain = hazard(store, "verify")
    assert plain.exit_code == 0, plain.output  # the log itself is untouched
    deep = hazard(store, "verify", "--deep")
    assert deep.exit_code == 1, deep.output
    assert "tokens: 2 problem(s)" in deep.output
    assert "token 0badc0de0badc0de (setter:mallory) has no event that made it" in deep.output
    assert f"token {held} (auditor:audrey) is revoked with no event revoking it" in deep.output


def test_report_prints_the_exceptions_as_lines_and_csv(store: EventStore) -> None:
    club = Club(Book(store))
    bank = Caller(Role.SETTER, "bank")
    club.create_player("ann", "setter:bank")
    club.account_command("ann", Deposited, 1000, "setter:bank")
    tables.open_table(club, "t1", bank, ruleset="english")
    tables.seat(club, "t1", bank, "ann")
    tables.cast(club, "t1", bank, "ann", 1)
    tables.call_main(club, "t1", bank, 7)
    tables.void_throw(club, "t1", bank, "cocked", 0, None)
    lines = hazard(store, "books", "exceptions")
    assert lines.exit_code == 0, lines.output
    assert "t1  throw voided: throw" in lines.output and "why: cocked" in lines.output
    csv_text = hazard(store, "books", "exceptions", "--csv").output
    header, row = csv_text.splitlines()
    assert header.startswith("position,recorded_at,table,kind") and ",cocked," in row
    empty = hazard(store, "books", "exceptions", "--until", "2000-01-01")
    assert empty.stdout == "" and "nothing recorded in this period" in empty.stderr
    assert hazard(store, "books", "exceptions", "--until", "2000-01-01", "--csv").stderr == ""
    bad = hazard(store, "books", "exceptions", "--since", "2026-11-28", "--until", "2026-11-27")
    assert bad.exit_code == 2 and "--until" in bad.output


def test_the_log_of_significant_events_is_exported_verified_and_restored(
    store: EventStore, tmp_path: Path
) -> None:
    """club:significant is inside the signed log: a whole-log export carries it, the
    offline check passes it, and a restored database's deep check passes (it holds no
    tokens, whose rows no export carries)."""
    _made(store, "setter", "bank")
    gone = _made(store, "croupier", "cecil")
    assert hazard(store, "token", "revoke", gone).exit_code == 0
    tally = command.Tally(store)
    for _ in range(30):
        tally.sign_in(command.REFUSED, command.CONSOLE, None)
    tally.flush()
    path = tmp_path / "all.jsonl"
    assert hazard(store, "export", "--all", "-o", str(path)).exit_code == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    streams = {line.get("stream") for line in lines}
    assert "club:significant" in streams
    offline = CliRunner().invoke(main, ["verify", str(path)])
    assert offline.exit_code == 0, offline.output
    restored = f"sqlite:///{tmp_path / 'restored.sqlite3'}"
    upgraded = CliRunner().invoke(main, ["db", "upgrade"], env={"DATABASE_URL": restored})
    assert upgraded.exit_code == 0, upgraded.output
    imported = CliRunner().invoke(main, ["import", str(path)], env={"DATABASE_URL": restored})
    assert imported.exit_code == 0, imported.output
    deep = CliRunner().invoke(main, ["verify", "--deep"], env={"DATABASE_URL": restored})
    assert deep.exit_code == 0, deep.output
    report = CliRunner().invoke(
        main, ["books", "authentication", "--json"], env={"DATABASE_URL": restored}
    )
    rows = [json.loads(line) for line in report.output.splitlines()]
    assert [(r["what"], r["count"]) for r in rows] == [
        ("token created", 1), ("token created", 1), ("token revoked", 1), ("sign-in refused", 30)
    ]  # fmt: skip
