"""`hazard token create|list|revoke`, through click's runner: a token printed alone, the
one time it is shown, that the API then takes; named for its role unless told (a
player's must be); listed with no secret; revoked, and refused by the API from then on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ledger.cli import main
from ledger.commands import Role
from ledger.web.tokens import holder, listing
from tests.api.conftest import Api


def test_token_create_names_the_token_for_its_role_unless_told(url: str) -> None:
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    made = CliRunner().invoke(main, ["token", "create", "--role", "setter"])
    assert made.exit_code == 0, made.output
    assert "for setter:setter" in made.output
    named = CliRunner().invoke(main, ["token", "create", "--role", "auditor", "--name", "audrey"])
    assert "for auditor:audrey" in named.output
    player = CliRunner().invoke(main, ["token", "create", "--role", "player"])
    assert player.exit_code == 2
    assert "a player's token needs --name" in player.output
    listed = CliRunner().invoke(main, ["token", "list"]).output
    assert [line.split()[1] for line in listed.splitlines()[1:]] == ["setter", "auditor"]


def test_token_create_refuses_a_player_named_for_one_of_the_ledgers_own_accounts(url: str) -> None:
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    for name in ("SETTER", "cash"):
        made = CliRunner().invoke(main, ["token", "create", "--role", "player", "--name", name])
        assert made.exit_code == 2, made.output
        assert "own accounts (setter, cash, escrow, bank)" in made.output
    assert CliRunner().invoke(main, ["token", "list"]).output.count("\n") <= 1


def _hazard(sqlite_api: Api, *args: str) -> Any:
    """`hazard ARGS --database-url` the app's database."""
    url = sqlite_api.book.store.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(main, [*args, "--database-url", url], catch_exceptions=False)


def test_token_create_prints_the_secret_alone_and_it_works(sqlite_api: Api) -> None:
    made = _hazard(sqlite_api, "token", "create", "--role", "croupier", "--name", "cro")
    assert made.exit_code == 0, made.output
    secret = made.stdout.strip()
    assert secret.startswith("hz_") and "\n" not in secret
    who = holder(sqlite_api.book.store.engine, secret)
    assert who is not None and (who.role, who.name) == (Role.CROUPIER, "cro")
    assert who.id in made.stderr and "only its hash is kept" in made.stderr


def test_token_create_refuses_a_bad_role_or_name(sqlite_api: Api) -> None:
    assert _hazard(sqlite_api, "token", "create", "--role", "king", "--name", "x").exit_code == 2
    bad = _hazard(sqlite_api, "token", "create", "--role", "player", "--name", "")
    assert bad.exit_code == 2 and "1 to 200 characters" in bad.output


def test_token_list_shows_no_secret_and_revoke_refuses_the_token(sqlite_api: Api) -> None:
    sqlite_api.app.extensions["hazard.club"].create_player("ann", "setter:cli")
    ann = sqlite_api.client("player", "ann")
    assert ann.get("/players/ann/balance").status_code != 401
    [row] = listing(sqlite_api.book.store.engine)

    listed = _hazard(sqlite_api, "token", "list")
    assert listed.exit_code == 0
    assert row.id in listed.output and "player" in listed.output and "ann" in listed.output
    assert ann.token is not None and ann.token not in listed.output
    assert "hz_" not in listed.output

    revoked = _hazard(sqlite_api, "token", "revoke", row.id)
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    refused = ann.get("/players/ann/balance")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == "Bearer"
    [after] = listing(sqlite_api.book.store.engine)
    assert after.revoked_at is not None
    assert after.revoked_at in _hazard(sqlite_api, "token", "list").output

    again = _hazard(sqlite_api, "token", "revoke", row.id)
    assert again.exit_code == 0 and "already revoked" in again.output
    unknown = _hazard(sqlite_api, "token", "revoke", "nope")
    assert unknown.exit_code == 1 and "no token nope" in unknown.output


def test_token_commands_say_when_the_database_cannot_be_opened(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite3'}"
    result = CliRunner().invoke(main, ["token", "list", "--database-url", url])
    assert result.exit_code == 1
    assert "cannot open the database" in result.output


def test_token_create_refuses_a_name_a_live_token_of_the_role_holds(sqlite_api: Api) -> None:
    """One live token to a role and name, the message naming the one that holds it; once
    it is revoked, the name is free, and the new token's events name it by its tag."""
    first = _hazard(sqlite_api, "token", "create", "--role", "croupier", "--name", "cecil")
    assert first.exit_code == 0, first.output
    [held] = listing(sqlite_api.book.store.engine)
    again = _hazard(sqlite_api, "token", "create", "--role", "croupier", "--name", "cecil")
    assert again.exit_code == 2 and again.stdout == ""
    assert f"there is already a live croupier token named 'cecil' (token {held.id})" in (
        again.output
    )
    assert len(listing(sqlite_api.book.store.engine)) == 1
    _hazard(sqlite_api, "token", "revoke", held.id)
    made = _hazard(sqlite_api, "token", "create", "--role", "croupier", "--name", "cecil")
    assert made.exit_code == 0, made.output
    who = holder(sqlite_api.book.store.engine, made.stdout.strip())
    assert who is not None and who.tag != held.tag
    assert f"for croupier:cecil#{who.tag}:" in made.stderr


def test_token_create_refuses_a_player_who_does_not_exist(sqlite_api: Api) -> None:
    made = _hazard(sqlite_api, "token", "create", "--role", "player", "--name", "zed")
    assert made.exit_code == 2 and "there is no player 'zed'" in made.output
    assert listing(sqlite_api.book.store.engine) == []
