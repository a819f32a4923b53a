"""Migration 0014 on a database written before it, on SQLite and PostgreSQL: two live
tokens of one role and name, which the new rule refuses, do not make it fail. The
newest of them stays live and the others are revoked, so the database can hold the
rule from then on; every token gets its tag, its id's first eight characters, or its
whole id where two ids share those."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command

from ledger.commands import Role
from ledger.store import db
from ledger.store.schema import tokens
from ledger.web.tokens import NameTaken, create, listing

LIVE = None
GONE = "2025-12-02T00:00:00.000000Z"
OLD = [  # id, name, role, created_at, revoked_at
    ("c0c0c0c0c0c0c0c0", "cecil", "croupier", "2025-12-01T00:00:00.000000Z", GONE),
    ("c1c1c1c1c1c1c1c1", "cecil", "croupier", "2026-01-01T00:00:00.000000Z", LIVE),
    ("c2c2c2c2c2c2c2c2", "cecil", "croupier", "2026-01-02T00:00:00.000000Z", LIVE),
    ("aaaaaaaaaaaaaaaa", "ann", "player", "2026-01-03T00:00:00.000000Z", LIVE),
    ("bbbbbbbbbbbbbbbb", "ann", "player", "2026-01-03T00:00:00.000000Z", LIVE),  # same time
    ("3f9c0a1b00000001", "cecil", "auditor", "2026-01-04T00:00:00.000000Z", LIVE),
    ("3f9c0a1b00000002", "bank", "setter", "2026-01-05T00:00:00.000000Z", LIVE),
]  # fmt: skip


def _before(engine: sa.Engine) -> None:
    with db.serialised(engine, db.UPGRADE_LOCK) as conn:
        command.upgrade(db._alembic_config(conn), "0013")
    with engine.begin() as conn:
        for i, (id_, name, role, created, revoked) in enumerate(OLD):
            conn.execute(
                sa.text(
                    "INSERT INTO tokens (id, name, role, token_hash, created_at, revoked_at) "
                    "VALUES (:id, :name, :role, :hash, :created, :revoked)"
                ),
                {"id": id_, "name": name, "role": role, "hash": f"{i:064x}",
                 "created": created, "revoked": revoked},
            )  # fmt: skip


def _tokens(engine: sa.Engine) -> dict[str, tuple[str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(tokens.c.id, tokens.c.tag, tokens.c.revoked_at)).all()
    return {row.id: (row.tag, row.revoked_at) for row in rows}


def test_the_migration_keeps_the_newest_live_token_of_a_name_and_revokes_the_rest(
    database_url: str,
) -> None:
    engine = db.make_engine(database_url)
    try:
        _before(engine)
        db.upgrade(engine)
        found = _tokens(engine)
        live = {id_ for id_, (_, revoked) in found.items() if revoked is None}
        assert live == {"c2c2c2c2c2c2c2c2", "bbbbbbbbbbbbbbbb", "3f9c0a1b00000001",
                        "3f9c0a1b00000002"}  # fmt: skip
        assert found["c0c0c0c0c0c0c0c0"][1] == GONE  # as it was
        assert found["c1c1c1c1c1c1c1c1"][1] is not None
        assert found["aaaaaaaaaaaaaaaa"][1] is not None
        assert {id_: tag for id_, (tag, _) in found.items()} == {
            "c0c0c0c0c0c0c0c0": "c0c0c0c0",
            "c1c1c1c1c1c1c1c1": "c1c1c1c1",
            "c2c2c2c2c2c2c2c2": "c2c2c2c2",
            "aaaaaaaaaaaaaaaa": "aaaaaaaa",
            "bbbbbbbbbbbbbbbb": "bbbbbbbb",
            "3f9c0a1b00000001": "3f9c0a1b00000001",  # two ids share 3f9c0a1b: whole
            "3f9c0a1b00000002": "3f9c0a1b00000002",
        }
        # From here the rule holds: the live cecil's name is taken, and a new token's
        # tag is none of those kept.
        with pytest.raises(NameTaken):
            create(engine, Role.CROUPIER, "cecil")
        create(engine, Role.CROUPIER, "dora")
        [dora] = [t for t in listing(engine) if t.name == "dora"]
        assert dora.tag == dora.id[:8] and dora.tag not in {tag for tag, _ in found.values()}
    finally:
        engine.dispose()


def test_the_migration_goes_down_and_up_again(database_url: str) -> None:
    engine = db.make_engine(database_url)
    try:
        _before(engine)
        db.upgrade(engine)
        with db.serialised(engine, db.UPGRADE_LOCK) as conn:
            command.downgrade(db._alembic_config(conn), "0013")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM tokens")).scalar() == len(OLD)
        db.upgrade(engine)
        assert len(_tokens(engine)) == len(OLD)
    finally:
        engine.dispose()
