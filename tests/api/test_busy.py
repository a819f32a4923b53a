"""A write stuck behind another writer is answered 503 `busy`, on both databases."""

from __future__ import annotations

import sqlalchemy as sa

from ledger.api import create_app
from ledger.api.tokens import Role, create
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.schema import commands, events, postings
from tests.signing import SIGNER


def _counts(engine: sa.Engine) -> list[int]:
    with engine.connect() as conn:
        return [
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (events, postings, commands)
        ]


def test_a_write_behind_a_long_writer_is_503_busy_and_writes_nothing(database_url: str) -> None:
    engine = db.make_engine(database_url, lock_timeout=0.3)
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    app = create_app(book=Book(store), TESTING=True)
    auth = {"Authorization": f"Bearer {create(engine, Role.SETTER, 'bank')}"}
    client = app.test_client()
    assert client.post("/players", json={"name": "ann"}, headers=auth).status_code == 201
    other = EventStore(db.make_engine(database_url), signer=SIGNER)
    try:
        before = _counts(engine)
        with other.transaction():  # another writer holds the append lock (a rebuild, ...)
            answer = client.post(
                "/players/ann/deposits",
                json={"amount": 100},
                headers={**auth, "Idempotency-Key": "k1"},
            )
        assert answer.status_code == 503, answer.get_json()
        assert answer.headers["Retry-After"] == "1"
        assert answer.mimetype == "application/problem+json"
        assert answer.get_json()["type"] == "urn:hazard:busy"
        assert _counts(engine) == before
        # The same request, retried with the same key, now goes through once.
        again = client.post(
            "/players/ann/deposits", json={"amount": 100}, headers={**auth, "Idempotency-Key": "k1"}
        )
        assert again.status_code == 201, again.get_json()
        balance = client.get("/players/ann/balance", headers=auth).get_json()
        assert balance["balance"] == 100
    finally:
        other.close()
        other.engine.dispose()
        store.close()
        engine.dispose()
