"""Tokens: stored hashed, and a player's token only ever names a player."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ledger.api.tokens import Role, create, holder
from ledger.store.schema import tokens
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
