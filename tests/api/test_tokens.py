"""Tokens: stored hashed, and a player's token only ever names a player."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ledger.commands import Role
from ledger.store.schema import tokens
from ledger.web.tokens import create, holder
from tests.api.conftest import Api


def test_only_the_hash_is_kept(api: Api) -> None:
    engine = api.book.store.engine
    secret = create(engine, Role.AUDITOR, "audrey")
    with engine.connect() as conn:
        stored = conn.execute(sa.select(tokens)).one()
    assert secret not in {str(value) for value in stored}
    found = holder(engine, secret)
    assert found is not None
    assert (found.role, found.name, found.actor) == (Role.AUDITOR, "audrey", "auditor:audrey")
    assert holder(engine, secret + "x") is None


@pytest.mark.parametrize("name", ["setter", "ann smith", "", "a/b", "x" * 101, ".", ".."])
def test_a_player_token_must_name_a_possible_player(api: Api, name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        create(api.book.store.engine, Role.PLAYER, name)


def test_no_player_token_reads_the_banks_account(api: Api) -> None:
    bank = api.client()
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
    assert cash is not None and cash.actor == "player:Cash"
    bank = api.client()
    bank.ok("post", "/players/Cash/deposits", {"amount": 100})
    assert bank.ok("get", "/players/Cash/balance")["balance"] == 100
