"""The log's Merkle tree and checkpoints as every write stores them, on SQLite and
PostgreSQL: the stored tree is RFC 9162's tree over the events' records, every write
signs a checkpoint of it and answers with that receipt, and the database refuses to
change either table."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.accounts import account_stream
from ledger.store import codec
from ledger.store.eventstore import EventStore, NoSigningKey
from ledger.store.log import check, merkle, tree
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.schema import checkpoints, tree_hashes
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork
from tests.signing import VERIFIER

SETTER = account_stream(hz.SETTER)


def _deposit(store: EventStore, amounts: list[int], key: str | None = None) -> dict:
    uow = UnitOfWork(store, key, {"amounts": amounts})
    if (earlier := uow.earlier()) is not None:
        return earlier
    with uow:
        version = store.stream_version(uow.conn, SETTER)
        events = [
            Deposited(version=version + i, account=hz.SETTER, amount=a)
            for i, a in enumerate(amounts, start=1)
        ]
        uow.record(SETTER, version, events, "setter")
        uow.commit({"ok": True})
    return uow.answer


def _memory_root(store: EventStore, size: int) -> bytes:
    """The root computed from the events alone, in memory, from RFC 9162's definition."""
    leaves = [tree.leaf(row) for row in store.read_all(0, limit=size)]

    def mth(items: list[bytes]) -> bytes:
        if len(items) == 1:
            return items[0]
        k = 1 << ((len(items) - 1).bit_length() - 1)
        return merkle.node_hash(mth(items[:k]), mth(items[k:]))

    return mth(leaves)


def test_every_write_signs_a_checkpoint_of_the_tree_over_every_event(store: EventStore) -> None:
    receipts = [_deposit(store, [5] * n)["receipt"] for n in (1, 3, 1, 2, 7, 1)]
    size = 0
    for receipt in receipts:
        checkpoint = open_checkpoint(receipt["checkpoint"], [VERIFIER])
        first = size + 1
        size = checkpoint.size
        # The write's events, then its seal, the last leaf the checkpoint covers.
        assert receipt["positions"] == list(range(first, size))
        assert checkpoint.root == _memory_root(store, size)
        assert checkpoint.time is not None
    with store.engine.connect() as conn:
        stored = conn.execute(sa.select(checkpoints).order_by(checkpoints.c.size)).all()
        count = conn.execute(sa.select(sa.func.count()).select_from(tree_hashes)).scalar()
    assert [row.note for row in stored] == [r["checkpoint"] for r in receipts]
    assert count == merkle.stored_hash_count(size)


def test_a_repeat_gets_the_same_receipt_and_signs_nothing_new(store: EventStore) -> None:
    first = _deposit(store, [10], key="k1")
    again = _deposit(store, [10], key="k1")
    assert again["receipt"] == first["receipt"]
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(checkpoints)).scalar() == 1


def test_a_store_that_did_not_write_last_reads_the_frontier_again(
    store: EventStore, database_url: str
) -> None:
    from ledger.store import db
    from tests.signing import SIGNER

    other = EventStore(db.make_engine(database_url), signer=SIGNER)
    try:
        writers = [store, other, other, store, store, other]
        for writer in writers:
            receipt = _deposit(writer, [1, 2, 3])["receipt"]
        size = open_checkpoint(receipt["checkpoint"], [VERIFIER]).size
        assert size == len(writers) * (3 + 1)  # three deposits a write, and its seal
        assert open_checkpoint(receipt["checkpoint"], [VERIFIER]).root == _memory_root(store, size)
    finally:
        other.close()
        other.engine.dispose()


def test_a_write_rolled_back_leaves_no_hash_and_no_checkpoint(store: EventStore) -> None:
    _deposit(store, [1])
    with UnitOfWork(store) as uow:
        uow.record(SETTER, 1, [Deposited(version=2, account=hz.SETTER, amount=2)], "setter")
    # not committed: the frontier kept must still be the committed tree's
    receipt = _deposit(store, [3])["receipt"]
    checkpoint = open_checkpoint(receipt["checkpoint"], [VERIFIER])
    assert checkpoint.size == 2 * (1 + 1)  # two writes committed, a deposit and a seal each
    assert checkpoint.root == _memory_root(store, checkpoint.size)


def test_a_store_without_a_key_writes_nothing(engine: sa.Engine) -> None:
    store = EventStore(engine, key_path="/nowhere/hazard.key")
    try:
        with pytest.raises(NoSigningKey, match=r"/nowhere/hazard\.key"):
            _deposit(store, [5])
        assert store.read_all() == []
    finally:
        store.close()


@pytest.mark.parametrize("table", ["tree_hashes", "checkpoints"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET {c} = {c}", "DELETE FROM {t}"])
def test_the_database_refuses_to_change_the_tree_or_a_checkpoint(
    store: EventStore, table: str, statement: str
) -> None:
    _deposit(store, [5, 6])
    column = "idx" if table == "tree_hashes" else "size"
    with pytest.raises(sa.exc.DatabaseError, match="append-only"), store.engine.begin() as conn:
        conn.exec_driver_sql(statement.format(t=table, c=column))


def test_the_migration_builds_the_tree_of_a_log_that_had_none(database_url: str) -> None:
    from alembic import command

    from ledger.store import db

    engine = db.make_engine(database_url)
    try:
        with db.serialised(engine, db.UPGRADE_LOCK) as conn:
            command.upgrade(db._alembic_config(conn), "0003")
        old = EventStore(engine)  # as before the tree: append only
        with old.transaction() as conn:
            events = [Deposited(version=v, account=hz.SETTER, amount=v) for v in range(1, 5009)]
            old.append(conn, SETTER, 0, events, "setter")
        old.close()
        db.upgrade(engine)
        with engine.connect() as conn:
            root = merkle.tree_hash(5008, tree.reader(conn))
        assert root == _memory_root(EventStore(engine), 5008)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("size", "issued_at"),
    [(1, "2026-01-01T00:00:00.000000Z"), (12345, "2026-11-23T10:59:59.999999Z"),
     (2**63 - 1, "1999-12-31T23:59:59.5Z")],
)  # fmt: skip
def test_the_checkpoint_a_write_signs_is_the_one_the_checkpoint_module_signs(
    size: int, issued_at: str
) -> None:
    from datetime import datetime

    from ledger.store.log.checkpoint import Checkpoint, sign_checkpoint
    from tests.signing import SIGNER

    root = bytes(range(32))
    when = datetime.fromisoformat(issued_at.replace("Z", "+00:00"))
    expected = sign_checkpoint(Checkpoint.issued(SIGNER.name, size, root, when), SIGNER)
    assert tree.signed_checkpoint(SIGNER, size, root, issued_at) == expected
    assert open_checkpoint(expected, [VERIFIER]).size == size


def test_a_checkpoint_of_no_tree_is_refused() -> None:
    from tests.signing import SIGNER

    with pytest.raises(ValueError, match="no checkpoint"):
        tree.signed_checkpoint(SIGNER, 5, b"short", "2026-01-01T00:00:00Z")
    with pytest.raises(ValueError, match="no checkpoint"):
        tree.signed_checkpoint(SIGNER, -1, bytes(32), "2026-01-01T00:00:00Z")


class _Row:
    """A stored event's columns, enough for Growth.add."""

    def __init__(self, position: int) -> None:
        self.position, self.version = position, position
        self.stream, self.actor, self.idempotency_key = f"s{position % 3}", "a", None
        self.recorded_at, self.type, self.schema_version = "2026-01-01T00:00:00Z", "T", 1
        self.payload = f'{{"n":{position}}}'

    def hashed(self) -> bytes:
        from ledger.store import codec

        return codec.frame(
            codec.Quoted(), self.position, self.stream, self.version, self.type,
            self.schema_version, self.payload, self.actor, self.idempotency_key, self.recorded_at,
        )  # fmt: skip


def test_a_growth_from_the_frontier_stores_the_hashes_merkle_defines() -> None:
    """Write after write of every width, from the frontier alone (no database): every
    stored hash and every root is merkle's, from the records one by one."""
    expected: list[bytes] = []

    def read(indexes: list[int]) -> list[bytes]:
        return [expected[i] for i in indexes]

    stored: dict[int, bytes] = {}
    frontier = merkle.Frontier()
    size = 0
    for width in [1, 1, 2, 3, 1, 7, 16, 1, 5, 32, 64, 2, 100]:
        growth = tree.grow(None, size, frontier)  # type: ignore[arg-type]  # reads nothing
        rows = [_Row(p) for p in range(size + 1, size + width + 1)]
        growth.add(rows)
        for row in rows:
            expected.extend(merkle.stored_hashes(row.position - 1, row.hashed(), read))
        stored.update(growth.made)
        size, frontier = growth.size, growth.frontier
        assert growth.root() == merkle.tree_hash(size, read)
        assert [stored[i] for i in range(len(expected))] == expected


def test_a_growth_refuses_a_frontier_that_is_not_its_trees() -> None:
    growth = tree.Growth(merkle.Frontier(3, [bytes(32)]))
    with pytest.raises(tree.LogError, match="no left half"):
        growth.add([_Row(4)])


def test_the_one_frame_gives_every_stored_hash_of_every_stored_event(store: EventStore) -> None:
    """codec.frame, with one Quoted shared across the log as a pass shares it, over the
    columns as the database hands them back: each event's stored chain hash and its
    stored leaf in the tree. Texts that JSON escapes or that are not ASCII included."""
    _deposit(store, [5, 6])
    key = 'k\\"ë\u2014\x01'
    uow = UnitOfWork(store, key, {"amounts": [7]})
    with uow:
        version = store.stream_version(uow.conn, SETTER)
        deposit = Deposited(version=version + 1, account=hz.SETTER, amount=7)
        uow.record(SETTER, version, [deposit], 'Zoë "the" setter\\\n', key)
        uow.commit({"ok": True})
    _deposit(store, [1, 2, 3])
    quoted = codec.Quoted()
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT position, stream, version, type, schema_version, payload, actor,"
            " idempotency_key, recorded_at, prev_hash, hash FROM events ORDER BY position"
        ).all()
        leaves = tree.read_hashes(conn, [merkle.stored_hash_index(0, row[0] - 1) for row in rows])
    # Six deposits in three writes, each write ended by its seal.
    assert len(rows) == 6 + 3 and any(row[7] is not None for row in rows)
    for row in rows:
        framed = codec.frame(quoted, *row[:9])
        assert codec.chain_hash(row[9], framed) == row[10]
        assert merkle.leaf_hash(framed) == leaves[merkle.stored_hash_index(0, row[0] - 1)]


def test_the_checks_own_frame_chain_and_frontier_are_codec_and_merkle(store: EventStore) -> None:
    """The log's check writes codec.frame, codec.chain_hash and merkle.Frontier.append
    out by hand, for speed: on a log written through them (texts that JSON escapes
    included), a pass in pages of every length finds nothing and stands, after each
    page, on the frontier merkle.Frontier builds from codec.frame's leaves."""
    key = 'k\\"ë\u2014'
    for amounts, actor, idempotency_key in [
        ([5, 6], "setter", None), ([7], 'Zoë "the" setter\n', key), ([1, 2, 3, 4, 5], "s", None)
    ]:  # fmt: skip
        uow = UnitOfWork(store, idempotency_key, {"amounts": amounts})
        with uow:
            version = store.stream_version(uow.conn, SETTER)
            deposits = [
                Deposited(version=version + i, account=hz.SETTER, amount=a)
                for i, a in enumerate(amounts, start=1)
            ]
            uow.record(SETTER, version, deposits, actor, idempotency_key)
            uow.commit({"ok": True})
    expected = [merkle.Frontier()]
    quoted = codec.Quoted()
    for row in store.read_all(0, limit=100):
        assert codec.chain_hash(row.prev_hash, codec.frame(quoted, *row[:9])) == row.hash
        frontier = expected[-1].copy()
        frontier.append(merkle.leaf_hash(codec.frame(quoted, *row[:9])))
        expected.append(frontier)
    size = (2 + 1 + 5) + 3  # eight deposits in three writes, each ended by its seal
    assert len(expected) == size + 1
    for page in (1, 2, 3, 5, 8):
        resume = None
        with store.engine.connect() as conn, conn.begin():
            while True:
                report = check.check_log(conn, VERIFIER, resume=resume, limit=page)
                assert report.ok, report.findings
                at = expected[report.size]
                assert (report.frontier, report.root) == (at.hashes, at.root())
                if report.complete:
                    break
                resume = merkle.Frontier(report.size, report.frontier)
        assert report.size == size


def test_a_write_of_more_hashes_than_one_insert_takes_stores_them_all(store: EventStore) -> None:
    amounts = [1] * (tree.INSERT_ROWS // 2 + 150)  # about 2 stored hashes an event
    receipt = _deposit(store, [7])["receipt"]
    receipt = _deposit(store, amounts)["receipt"]
    size = open_checkpoint(receipt["checkpoint"], [VERIFIER]).size
    assert size == (1 + 1) + (len(amounts) + 1)  # two writes, each ended by its seal
    assert open_checkpoint(receipt["checkpoint"], [VERIFIER]).root == _memory_root(store, size)
    with store.engine.connect() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(tree_hashes)).scalar()
        assert merkle.tree_hash(size, tree.reader(conn)) == _memory_root(store, size)
    assert count == merkle.stored_hash_count(size)


def test_a_proof_reads_the_database_and_works_out_nothing_else(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proof's cost is its one query: the reader does not split each index into its
    level (which cost as much as the query, bench.tlog)."""
    _deposit(store, [1] * 40)

    def refuse(index: int) -> tuple[int, int]:
        raise AssertionError("a proof's reader worked out a stored hash's level")

    monkeypatch.setattr(merkle, "split_stored_hash_index", refuse)
    root = _memory_root(store, 40)
    leaves = [tree.leaf(row) for row in store.read_all(0, limit=40)]
    with store.engine.connect() as conn:
        read = tree.reader(conn)
        for n in (0, 17, 39):
            merkle.check_record(merkle.prove_record(40, n, read), 40, root, n, leaves[n])
        merkle.check_tree(merkle.prove_tree(40, 23, read), 40, root, 23, _memory_root(store, 23))


def test_sqlite_keys_the_tree_hashes_on_their_index_as_migrated_and_as_declared(
    tmp_path: Path,
) -> None:
    """A proof reads its hashes by index: keyed on idx (WITHOUT ROWID) that is one B-tree
    lookup per hash on SQLite, not two. compare_metadata does not see this option, so
    the migrated table and the declared one are both checked here. (SQLite's option
    only: PostgreSQL tables have no rowid.)"""
    from ledger.store import db

    engine = db.make_engine(f"sqlite:///{tmp_path / 'migrated.sqlite3'}")
    db.upgrade(engine)
    declared = sa.create_engine("sqlite://")
    tree_hashes.metadata.create_all(declared)
    for eng in (engine, declared):
        with eng.connect() as conn:
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'tree_hashes'"
            ).scalar_one()
        assert sql.rstrip().endswith("WITHOUT ROWID")
    engine.dispose()
