"""What the ledger keeps of its witnesses (ledger.store.log.witnessed), on SQLite and
PostgreSQL: cosignatures only when they verify, the cosigned note a policy accepts,
gossip bounded by what the log signed, and both tables append-only."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa

from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import Checkpoint, NoteError, parse_note, sign_checkpoint
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Policy
from ledger.store.schema import checkpoints
from ledger.store.vocabulary import Deposited
from tests.signing import SIGNER

W1 = Cosigner("treasurer.example/w", hashlib.sha256(b"w1").digest())
W2 = Cosigner("auditor.example/w", hashlib.sha256(b"w2").digest())
AT = "2026-11-26T15:00:00Z"


def written(store: EventStore, n: int = 3) -> list[tuple[int, str]]:
    """`n` writes, each signing its checkpoint, as the service writes them."""
    club = Club(Book(store))
    club.create_player("ann", "setter")
    for _ in range(n - 1):
        club.account_command("ann", Deposited, 10, "setter")
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(checkpoints.c.size, checkpoints.c.note)).all()
    return [(r.size, r.note) for r in rows]


def test_a_verified_cosignature_is_kept_once_and_read_back_cosigned(store: EventStore) -> None:
    (size, note), *_ = written(store)
    text, _ = parse_note(note)
    with store.engine.begin() as conn:
        assert witnessed.record(conn, size, W1.key, W1.cosign(text, 1700000001), AT)
        assert not witnessed.record(conn, size, W1.key, W1.cosign(text, 1700000002), AT)
        assert witnessed.record(conn, size, W2.key, W2.cosign(text, 1700000003), AT)
    rule = Policy.parse(
        f"log {SIGNER.verifier.text()}\nwitness a {W1.key.text()}\n"
        f"witness b {W2.key.text()}\ngroup both all a b\nquorum both\n"
    )
    with store.engine.connect() as conn:
        newest = witnessed.newest(conn)
        assert newest is not None and newest.size == size
        assert witnessed.last_cosigned(conn, W1.key) == size
        assert witnessed.last_cosigned(conn, W2.key) == size
    verdict = rule.verify(newest.note)
    assert verdict.quorum and verdict.cosigned == {"a": 1700000001, "b": 1700000003}


def test_a_cosignature_of_another_checkpoint_is_refused_and_nothing_kept(
    store: EventStore,
) -> None:
    (first, _), (second, note), *_ = written(store)
    text, _ = parse_note(note)
    with store.engine.begin() as conn, pytest.raises(witnessed.NotCosigned):
        witnessed.record(conn, first, W1.key, W1.cosign(text, 1700000001), AT)
    with store.engine.begin() as conn, pytest.raises(witnessed.NotCosigned):
        witnessed.record(conn, second + 99, W1.key, W1.cosign(text, 1700000001), AT)
    with store.engine.connect() as conn:
        assert witnessed.newest(conn) is None


def test_gossip_keeps_one_row_per_tree_the_log_signed(store: EventStore) -> None:
    (size, note), *_ = written(store)
    text, _ = parse_note(note)
    cosigned = note + W1.cosign(text, 1700000001).line()
    with store.engine.begin() as conn:
        first, new = witnessed.report(conn, note, SIGNER.verifier, "w1", AT)
        again, new_again = witnessed.report(conn, cosigned, SIGNER.verifier, "x" * 999, AT)
    assert new and not new_again and again == first and first.note == note
    fork = sign_checkpoint(Checkpoint(SIGNER.name, size, bytes(32)), SIGNER)
    stranger = sign_checkpoint(
        Checkpoint(SIGNER.name, size, bytes(32)), Signer(SIGNER.name, bytes(32))
    )
    with store.engine.begin() as conn:
        forked, new = witnessed.report(conn, fork, SIGNER.verifier, None, AT)
        with pytest.raises(NoteError):
            witnessed.report(conn, stranger, SIGNER.verifier, None, AT)
    with store.engine.connect() as conn:
        kept = witnessed.reports(conn)
    assert new and [r.size for r in kept] == [size, size] and kept[1] == forked


def test_cosignatures_and_gossip_are_append_only(store: EventStore) -> None:
    (size, note), *_ = written(store)
    text, _ = parse_note(note)
    with store.engine.begin() as conn:
        witnessed.record(conn, size, W1.key, W1.cosign(text, 1700000001), AT)
        witnessed.report(conn, note, SIGNER.verifier, None, AT)
    for statement in (
        "UPDATE cosignatures SET cosigned_at = 1",
        "DELETE FROM cosignatures",
        "UPDATE gossip SET reported_by = 'x'",
        "DELETE FROM gossip",
    ):
        with pytest.raises(sa.exc.DatabaseError), store.engine.begin() as conn:
            conn.exec_driver_sql(statement)
