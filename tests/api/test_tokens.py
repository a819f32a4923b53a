"""Tokens: stored hashed, a player's token only ever names a player who exists, one live
token to a role and name, and the token named in every event it writes."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.commands import Caller, Role, tables
from ledger.store.schema import tokens
from ledger.web.tokens import NameTaken, create, holder, listing, revoke
from tests.api.conftest import Api, Client


def test_only_the_hash_is_kept(api: Api) -> None:
    engine = api.book.store.engine
    secret = create(engine, Role.AUDITOR, "audrey")
    with engine.connect() as conn:
        stored = conn.execute(sa.select(tokens)).one()
    assert secret not in {str(value) for value in stored}
    found = holder(engine, secret)
    assert found is not None
    assert (found.role, found.name, found.actor) == (
        Role.AUDITOR,
        "audrey",
        f"auditor:audrey#{found.tag}",
    )
    assert found.id.startswith(found.tag)
    assert holder(engine, secret + "x") is None


@pytest.mark.parametrize("name", ["setter", "ann smith", "", "a/b", "x" * 101, ".", ".."])
def test_a_player_token_must_name_a_possible_player(api: Api, name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        create(api.book.store.engine, Role.PLAYER, name)


def test_no_player_token_reads_the_banks_account(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    bank.ok("post", "/players/setter/deposits", {"amount": 100})
    assert bank.ok("get", "/players/setter/balance")["balance"] == 100
    ann = api.client("player", "ann")
    assert ann.get("/players/setter/balance").status_code == 403


@pytest.mark.parametrize("name", ["SETTER", "Cash", "escrow", "bank", "s_etter"])
def test_a_player_token_is_not_named_for_one_of_the_ledgers_own_accounts(
    api: Api, name: str
) -> None:
    with pytest.raises(ValueError, match="own accounts"):
        create(api.book.store.engine, Role.PLAYER, name)


def test_a_player_an_older_ledger_let_in_under_such_a_name_still_gets_a_token(api: Api) -> None:
    """A database from before the rule may hold a player named `Cash`: their account and
    history stand, and they may still be given a token to read and play with."""
    from ledger.store.vocabulary import AccountOpened
    from ledger.unit_of_work import UnitOfWork

    store = api.book.store
    with UnitOfWork(store) as uow:  # as create_player wrote it before the rule
        uow.record(
            "account:player:Cash",
            0,
            [AccountOpened(version=1, account="player:Cash")],
            "setter:bank",
        )
        uow.commit({})
    token = create(store.engine, Role.PLAYER, "Cash")
    cash = holder(store.engine, token)
    assert cash is not None and cash.actor == f"player:Cash#{cash.tag}"
    bank = api.client()
    bank.ok("post", "/players/Cash/deposits", {"amount": 100})
    assert bank.ok("get", "/players/Cash/balance")["balance"] == 100


# -- one holder per name, and the token named in every event it writes ------------------


def test_a_second_live_token_of_one_role_and_name_is_refused(api: Api) -> None:
    engine = api.book.store.engine
    create(engine, Role.CROUPIER, "cecil")
    with pytest.raises(NameTaken, match="already a live croupier token named 'cecil'"):
        create(engine, Role.CROUPIER, "cecil")
    create(engine, Role.AUDITOR, "cecil")  # a name is unique within its role
    assert [(t.role, t.name) for t in listing(engine)] == [
        ("croupier", "cecil"),
        ("auditor", "cecil"),
    ]


def test_the_database_refuses_two_live_tokens_of_one_role_and_name(api: Api) -> None:
    """The rule is the database's: a second live row is refused however it is written."""
    engine = api.book.store.engine
    row = {"name": "cecil", "role": "croupier", "created_at": "2026-01-01T00:00:00Z"}
    with engine.begin() as conn:
        conn.execute(tokens.insert().values(id="a" * 16, tag="a" * 8, token_hash="1" * 64, **row))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(tokens.insert().values(id="b" * 16, tag="b" * 8, token_hash="2" * 64, **row))
    with engine.begin() as conn:  # revoked, its name is free again
        conn.execute(tokens.update().values(revoked_at="2026-01-02T00:00:00Z"))
        conn.execute(tokens.insert().values(id="b" * 16, tag="b" * 8, token_hash="2" * 64, **row))


def test_a_revoked_token_s_name_is_made_again_as_another_actor(api: Api) -> None:
    """cecil's token revoked and another made for the name: the events each wrote name
    the token that wrote them, and the two are never one actor."""
    bank = api.client()
    first = api.client("croupier", "cecil")
    one = first.ok("post", "/tables", {"id": "t1", "ruleset": "english"})["events"][0]
    [old] = [t for t in listing(api.book.store.engine) if t.name == "cecil"]
    assert old.id.startswith(old.tag) and len(old.tag) == 8
    assert one["actor"] == f"croupier:cecil#{old.tag}"
    revoke(api.book.store.engine, old.id)
    second = Client(api.app.test_client(), create(api.book.store.engine, Role.CROUPIER, "cecil"))
    two = second.ok("post", "/tables", {"id": "t2", "ruleset": "english"})["events"][0]
    new = next(t for t in listing(api.book.store.engine) if t.name == "cecil" and not t.revoked_at)
    assert two["actor"] == f"croupier:cecil#{new.tag}" != one["actor"]
    written = {e["actor"] for e in bank.ok("get", "/events", query_string={"limit": 50})["items"]}
    assert {one["actor"], two["actor"]} <= written


def test_a_player_token_for_a_player_who_does_not_exist_is_refused(api: Api) -> None:
    engine = api.book.store.engine
    with pytest.raises(ValueError, match="there is no player 'zed'"):
        create(engine, Role.PLAYER, "zed")
    assert listing(engine) == []
    api.client().ok("post", "/players", {"name": "zed"})
    zed = holder(engine, create(engine, Role.PLAYER, "zed"))
    assert zed is not None and zed.actor == f"player:zed#{zed.tag}"


def test_a_token_s_name_holds_no_hash_sign(api: Api) -> None:
    """`#` ends the name in an actor, before the token's id."""
    with pytest.raises(ValueError, match="#"):
        create(api.book.store.engine, Role.CROUPIER, "cecil#3f9c0a1b")


def test_a_croupier_sees_what_its_token_recorded_and_its_name_did_before_tags(
    api: Api,
) -> None:
    """The inclusion proof's event goes to the croupier who recorded it: the token named
    in its actor; an event from before actors named their token (`croupier:cecil`),
    to any cecil. A revoked cecil's events are not the new cecil's."""
    club = api.app.extensions["hazard.club"]
    before = tables.open_table(club, "t0", Caller(Role.CROUPIER, "cecil"))["events"][0]
    assert before["actor"] == "croupier:cecil"  # as every event was written before tags
    old = api.client("croupier", "cecil")
    by_old = old.ok("post", "/tables", {"id": "t1", "ruleset": "english"})["events"][0]
    [old_token] = listing(api.book.store.engine)
    revoke(api.book.store.engine, old_token.id)
    new = Client(api.app.test_client(), create(api.book.store.engine, Role.CROUPIER, "cecil"))
    by_new = new.ok("post", "/tables", {"id": "t2", "ruleset": "english"})["events"][0]
    dora = api.client("croupier", "dora")

    def sees(client: Client, event: dict[str, Any]) -> bool:
        found = client.ok(
            "get", "/log/proofs/inclusion", query_string={"position": event["position"]}
        )
        return "event" in found

    assert (sees(new, before), sees(new, by_old), sees(new, by_new)) == (True, False, True)
    assert (sees(dora, before), sees(dora, by_new)) == (False, False)


REVOKE_ELSEWHERE = """
import sys
from ledger.cli import main
main(["token", "revoke", sys.argv[1], "--database-url", sys.argv[2]], prog_name="hazard")
"""


@pytest.mark.parametrize("where", ["in this process", "in another process"])
def test_a_revoked_token_is_refused_at_its_very_next_request(api: Api, where: str) -> None:
    """The service may remember the tokens it has looked up (ledger.store.livetokens),
    but a revocation, here or by `hazard token revoke` beside the server, ends a token at
    once: its next request is a 401, whatever it had been answered just before."""
    audrey = api.client("auditor", "audrey")
    for _ in range(3):  # looked up, and looked up again
        assert audrey.get("/events", query_string={"limit": 1}).status_code == 200
    [held] = [t for t in listing(api.book.store.engine) if t.name == "audrey"]
    if where == "in this process":
        assert revoke(api.book.store.engine, held.id)
    else:
        url = api.book.store.engine.url.render_as_string(hide_password=False)
        ran = subprocess.run(
            [sys.executable, "-c", REVOKE_ELSEWHERE, held.id, url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        assert "revoked" in ran.stdout
    refused = audrey.get("/events", query_string={"limit": 1})
    assert refused.status_code == 401, refused.get_json()
    assert holder(api.book.store.engine, api.tokens["auditor", "audrey"]) is None


def test_a_revocation_during_a_lookup_is_not_missed(
    sqlite_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup that finds the token live just before a revocation commits must not be
    remembered past it: what it found is stamped with the revocations file as it was
    before the lookup began (ledger.store.livetokens), which the revocation then grows."""
    from ledger.store import livetokens
    from ledger.store import tokens as stored

    engine = sqlite_api.book.store.engine
    secret = create(engine, Role.AUDITOR, "audrey")
    [held] = [t for t in listing(engine) if t.name == "audrey"]
    looked_up = stored.live

    def revoked_meanwhile(engine: sa.Engine, token_hash: str) -> Any:
        found = looked_up(engine, token_hash)  # live, as the row was read
        monkeypatch.setattr(livetokens.stored, "live", looked_up)
        assert revoke(engine, held.id)  # commits, forgets, and grows the file
        return found

    monkeypatch.setattr(livetokens.stored, "live", revoked_meanwhile)
    assert holder(engine, secret) is not None  # answered as it was when the lookup ran
    assert holder(engine, secret) is None
