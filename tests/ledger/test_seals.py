"""Each write's seal, on SQLite and PostgreSQL: the last event of every write, at the
size of the checkpoint it signs, committing the head of every stream and the chain of
every account's postings (ledger.store.log.heads), as anyone holding the events can
work them out again; kept in `heads_log` so that the heads at any seal can be proven,
and right whichever server wrote last."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.books.book import Book
from ledger.service import Club
from ledger.store import codec
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import heads as hd
from ledger.store.log import merkle, sealing
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.log.heads import Head, Heads
from ledger.store.vocabulary import LogSealed
from tests.ledger.exportkit import evening, ticking
from tests.signing import SIGNER, VERIFIER


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 9162's MTH, as the RFC writes it: the reference the heads tree is held to."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return merkle.node_hash(_mth(leaves[:k]), _mth(leaves[k:]))


def test_the_heads_tree_is_rfc_9162s_tree_however_its_heads_are_added_and_moved() -> None:
    chance = random.Random(25)
    heads = Heads()
    names = [f"table:t{i}" for i in range(40)]
    for step in range(300):
        name = chance.choice(names[: 1 + step // 6])
        head = heads.get(hd.STREAM, name)
        version = 1 if head is None else head.count + 1
        heads.step_stream(name, version, hashlib.sha256(f"{name}{version}".encode()).hexdigest())
        if step % 3:  # several heads moved or added between two roots, now and then
            continue
        leaves = [h.leaf() for h in heads.heads]
        assert heads.root() == _mth(leaves)
        i = chance.randrange(len(leaves))
        merkle.check_record(heads.prove(i), len(leaves), heads.root(), i, leaves[i])


def test_an_accounts_chain_steps_over_the_hash_of_each_event_that_posts_to_it() -> None:
    heads = Heads()
    heads.step_account("player:ann", "a" * 64)
    heads.step_account("player:ann", "b" * 64)
    first = hashlib.sha256(("0" * 64 + "\n" + "a" * 64).encode()).hexdigest()
    second = hashlib.sha256((first + "\n" + "b" * 64).encode()).hexdigest()
    assert heads.get(hd.ACCOUNT, "player:ann") == Head(hd.ACCOUNT, "player:ann", 2, second)
    leaf = b'\x00["account","player:ann",2,"' + second.encode() + b'"]'
    assert heads.get(hd.ACCOUNT, "player:ann").leaf() == hashlib.sha256(leaf).digest()


@pytest.fixture
def club_store(engine: sa.Engine) -> Iterator[EventStore]:
    yield from evening(engine)


def _events(store: EventStore) -> list[Recorded]:
    rows = store.read_all(0, limit=100_000)
    return rows


def test_every_write_ends_with_a_seal_at_the_size_its_checkpoint_signs(
    club_store: EventStore,
) -> None:
    rows = _events(club_store)
    with club_store.engine.connect() as conn:
        notes = [n for (n,) in conn.execute(sa.text("SELECT note FROM checkpoints ORDER BY size"))]
    sizes = [open_checkpoint(note, [VERIFIER]).size for note in notes]
    seals = [r for r in rows if r.stream == hd.SEALS]
    # One seal per checkpoint, numbered as the checkpoints are, each the last leaf its
    # checkpoint covers; by the ledger, at the time of its write's events.
    assert [s.position for s in seals] == sizes
    assert [s.version for s in seals] == list(range(1, len(sizes) + 1))
    assert {s.actor for s in seals} == {sealing.ACTOR}
    by_position = {r.position: r for r in rows}
    for seal in seals:
        assert by_position[seal.position - 1].recorded_at == seal.recorded_at
        assert isinstance(seal.event(), LogSealed)


def test_every_seal_commits_the_heads_its_events_make_and_heads_log_keeps_them(
    club_store: EventStore,
) -> None:
    rows = [r._replace() for r in _events(club_store)]
    checked = list(sealing.check(iter(rows)))
    assert len(checked) == sum(r.stream == hd.SEALS for r in rows)
    final = checked[-1][1]
    # Every table, account stream and non-escrow account has a head; escrows have none.
    names = {(h.kind, h.name) for h in final.heads}
    assert (hd.STREAM, "table:t1") in names and (hd.ACCOUNT, "player:ann") in names
    assert not any(n.startswith("escrow:") for _, n in names)
    assert (hd.STREAM, hd.SEALS) not in names
    # The heads at a seal mid-log, read back from heads_log, are the ones it commits.
    middle = len(checked) // 2
    replay = Heads()
    for seal_row, heads, _ in sealing.check(iter(rows), replay):
        if seal_row.position == checked[middle][0].position:
            expected = [h for h in heads.heads]
            break
    with club_store.engine.connect() as conn:
        stored = sealing.heads_at(conn, checked[middle][0].position)
    assert stored.heads == expected
    assert stored.root().hex() == checked[middle][0].event().root


def test_an_account_chain_holds_every_event_that_posts_to_the_account(
    club_store: EventStore,
) -> None:
    rows = _events(club_store)
    chain, count = hd.GENESIS, 0
    with club_store.engine.connect() as conn:
        posted = {
            p
            for (p,) in conn.execute(
                sa.text("SELECT DISTINCT position FROM postings WHERE account = 'player:cat'")
            )
        }
        final = sealing.heads_at(conn, rows[-1].position)
    for row in rows:
        if row.position in posted:
            chain, count = hd.account_step(chain, row.hash), count + 1
    assert count >= 4  # a deposit and three of the bets cat played at t1 and t2
    assert final.get(hd.ACCOUNT, "player:cat") == Head(hd.ACCOUNT, "player:cat", count, chain)


def test_two_servers_writing_in_turn_each_seal_what_the_other_wrote(engine: sa.Engine) -> None:
    clock = ticking()
    one = EventStore(engine, clock=clock, signer=SIGNER)
    two = EventStore(engine, clock=clock, signer=SIGNER)
    clubs = [Club(Book(one)), Club(Book(two))]
    from ledger.store.vocabulary import Deposited

    try:
        clubs[0].account_command("setter", Deposited, 1000, "setter")
        for i, name in enumerate(("ann", "bob", "cat", "dan")):
            clubs[i % 2].create_player(name, "setter")
            clubs[(i + 1) % 2].account_command(name, Deposited, 100 + i, "setter")
        rows = one.read_all(0, limit=1000)
    finally:
        one.close()
        two.close()
    assert len(list(sealing.check(iter(rows)))) == 9


def test_a_write_that_fails_after_its_seal_leaves_the_next_seal_right(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    from ledger.store.log import tree
    from ledger.store.vocabulary import Deposited

    club.account_command("setter", Deposited, 1000, "setter")
    real = tree.seal

    def fail(*args: object, **kwargs: object) -> str:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(tree, "seal", fail)
    with pytest.raises(RuntimeError):
        club.account_command("setter", Deposited, 7, "setter")
    monkeypatch.setattr(tree, "seal", real)
    club.account_command("setter", Deposited, 9, "setter")
    rows = store.read_all(0, limit=1000)
    store.close()
    assert [r.stream for r in rows].count(hd.SEALS) == 2
    list(sealing.check(iter(rows)))  # raises at a seal that is wrong


def test_a_seal_that_commits_other_heads_is_named_at_its_position(
    club_store: EventStore,
) -> None:
    rows = _events(club_store)
    seal = [r for r in rows if r.stream == hd.SEALS][3]
    forged = seal._replace(payload=seal.payload.replace(seal.event().root, "00" * 32))
    forged = Recorded(*forged)  # decoded afresh from the forged payload
    rows = [forged if r.position == seal.position else r for r in rows]
    with pytest.raises(sealing.SealError, match=f"position {seal.position}"):
        list(sealing.check(iter(rows)))


def test_heads_log_is_append_only(club_store: EventStore) -> None:
    with club_store.engine.connect() as conn:
        for statement in ("UPDATE heads_log SET count = 0", "DELETE FROM heads_log"):
            with pytest.raises(sa.exc.DatabaseError), conn.begin():
                conn.execute(sa.text(statement))


def test_the_migration_builds_the_heads_of_a_log_from_before_seals(database_url: str) -> None:
    """A log from before seals (revision 0011) gets its heads from its events, once; its
    first write after seals is seal 1, committing everything before it too."""
    from alembic import command

    from ledger.store import db
    from ledger.store.vocabulary import Deposited

    engine = db.make_engine(database_url)
    try:
        with db.serialised(engine, db.UPGRADE_LOCK) as conn:
            command.upgrade(db._alembic_config(conn), "0011")
        old = EventStore(engine, clock=ticking(), signer=SIGNER)
        old.seals = False  # as the code before seals wrote
        club = Club(Book(old))
        club.account_command("setter", Deposited, 1000, "setter")
        for name in ("ann", "bob"):
            club.create_player(name, "setter")
            club.account_command(name, Deposited, 50, "setter")
        old.close()
        before = old.read_all(0, limit=1000)
        assert not any(r.stream == hd.SEALS for r in before)
        db.upgrade(engine)
        with engine.connect() as conn:
            built = sealing.heads_at(conn, before[-1].position)
        expected = Heads()
        hd.apply(expected, before, sealing.accounts_of)
        assert built.heads == expected.heads and built.root() == expected.root()

        new = EventStore(engine, clock=ticking(), signer=SIGNER)
        Club(Book(new)).account_command("ann", Deposited, 7, "setter")
        new.close()
        rows = new.read_all(0, limit=1000)
        ((seal, heads, _),) = list(sealing.check(iter(rows)))
        assert seal.version == 1 and seal.position == rows[-1].position
        assert heads.get(hd.ACCOUNT, "player:ann").count == 2  # both ann's deposits
    finally:
        engine.dispose()


def _forged_seal(engine: sa.Engine, position: int) -> None:
    """Behind the triggers, as an insider would: a seal committing another root."""
    with engine.connect() as conn, conn.begin():
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER events_refuse_update")
        else:
            conn.exec_driver_sql("ALTER TABLE events DISABLE TRIGGER ALL")
        payload = json.loads(
            conn.execute(
                sa.text("SELECT payload FROM events WHERE position = :p"), {"p": position}
            ).scalar_one()
        )
        forged = codec.canonical(payload | {"root": "00" * 32}).decode()
        conn.execute(
            sa.text("UPDATE events SET payload = :x WHERE position = :p"),
            {"x": forged, "p": position},
        )


def test_verify_names_a_seal_that_commits_other_heads(club_store: EventStore) -> None:
    from ledger.store.log import check

    seals = [r for r in _events(club_store) if r.stream == hd.SEALS]
    target = seals[len(seals) // 2]
    _forged_seal(club_store.engine, target.position)
    with club_store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, VERIFIER)
    assert any(
        f.position == target.position and "the seal commits" in str(f) for f in report.findings
    ), report.findings


def test_verify_names_a_checkpoint_missing_behind_its_seal(club_store: EventStore) -> None:
    from ledger.store.log import check

    seals = [r for r in _events(club_store) if r.stream == hd.SEALS]
    target = seals[5]
    with club_store.engine.connect() as conn, conn.begin():
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("DROP TRIGGER checkpoints_refuse_delete")
        else:
            conn.exec_driver_sql("ALTER TABLE checkpoints DISABLE TRIGGER ALL")
        conn.execute(sa.text("DELETE FROM checkpoints WHERE size = :s"), {"s": target.position})
    with club_store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, VERIFIER)
    assert any(
        f.position == target.position
        and f"checkpoint {target.version} (size {target.position}) is missing" in str(f)
        for f in report.findings
    ), report.findings


def test_an_import_refuses_a_backup_missing_a_checkpoint_line_naming_it(
    club_store: EventStore, tmp_path: Path
) -> None:
    from ledger.exports import offline, restore
    from ledger.exports.scope import scope_of
    from ledger.store import db
    from tests.ledger.exportkit import export

    data = export(club_store.engine, scope_of(everything=True))
    lines = data.split(b"\n")[:-1]
    seal_line = next(
        i for i, line in enumerate(lines) if b'"stream":"log"' in line and b'"version":7}' in line
    )
    assert b'"record":"checkpoint"' in lines[seal_line + 1]
    del lines[seal_line + 1]
    target = db.make_engine(f"sqlite:///{tmp_path / 'restored.sqlite3'}")
    db.upgrade(target)
    with pytest.raises(offline.Disagreement) as caught:
        restore.restore(target, [line + b"\n" for line in lines], VERIFIER)
    assert caught.value.line == seal_line + 1
    assert "checkpoint 7 " in caught.value.reason and "is missing" in caught.value.reason
    with target.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar() == 0
    target.dispose()


def test_a_file_in_the_format_before_seals_still_verifies_and_says_it_proves_no_completeness() -> (
    None
):
    """Files written by the exporter before seals (format 1; these two were exported by
    it from tests/ledger/exportkit.py's evening, with a test key of their own)."""
    from ledger.exports import offline

    data = Path(__file__).parent / "data"
    for name in ("format1-all.jsonl", "format1-table-t1.jsonl"):
        lines = (data / name).read_bytes().splitlines(keepends=True)
        verified = offline.verify(lines)
        (said,) = verified.complete
        assert said.startswith("nothing proven: the file is in format 1")
        assert any("format 1" in t and "proves nothing about completeness" in t
                   for t in verified.trusted)  # fmt: skip


def test_a_heads_leaf_is_the_hash_of_its_canonical_json_array() -> None:
    for head in (
        Head(hd.STREAM, "table:t1", 57, "ab" * 32),
        Head(hd.ACCOUNT, 'player:Zoë "z"', 0, hd.GENESIS),
    ):
        text = codec.canonical({"h": head.view()})[len(b'{"h":') : -1]
        assert head.leaf() == merkle.leaf_hash(text)


def test_the_accounts_a_rebuild_folds_are_the_chained_accounts_of_every_events_transfers() -> None:
    """sealing.accounts_of names a table's accounts from its local names without making
    the transfers: for every kind of event, the accounts with a head are transfers_of's."""
    from ledger.store.eventstore import Known
    from ledger.store.vocabulary import Deposited, Withdrawn, transfers_of
    from tests.ledger.everyevent import a_server_dice_turn, a_table_with_every_event

    events = [*a_table_with_every_event(), *a_server_dice_turn()]
    rows = [("table:t1", e) for e in events]
    rows += [("account:ann", Deposited(1, "player:ann", 50)),
             ("account:ann", Withdrawn(2, "player:ann", 20))]  # fmt: skip
    assert any(transfers_of(stream, e) for stream, e in rows)
    for stream, event in rows:
        row = Known.of((1, stream, event.version, "T", 1, "{}", "", None, "", "", ""), event)
        made = {a for t in transfers_of(stream, event) for a in (t.source, t.target)}
        assert set(sealing.accounts_of(row)) == {a for a in made if hd.chained(a)}, event
