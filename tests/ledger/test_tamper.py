"""Tampering with a played log behind the database's back, as its administrator could,
on SQLite and PostgreSQL: every change is found by the log check and named at the
position where the log parts from what was signed, both from the database alone and
against a receipt (a signed checkpoint) taken before the change."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

import engine as hz
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store import codec
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import check, merkle, tree
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited, Withdrawn
from tests.signing import ORIGIN, VERIFIER


def _play(store: EventStore) -> None:
    """A small evening at the club: players paid in and out, a round with money."""
    club = Club(Book(store))
    for name in ("ann", "bob", "cat"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")
    club.account_command("setter", Deposited, 100_000, "setter")
    steps: list[Callable[[hz.TableState], list[hz.Event]]] = [
        lambda s: hz.seat(s, "ann"),
        lambda s: hz.seat(s, "bob"),
        lambda s: hz.cast_for_caster(s, "ann", 1),
        lambda s: hz.cast_for_caster(s, "bob", 6),
        lambda s: hz.call_main(s, 7),
        lambda s: hz.stake(s, 1000),
        lambda s: hz.lay(s, "bob", 400),
        lambda s: hz.cover(s, 4000),
        lambda s: hz.throw(s, 2, 2),
        lambda s: hz.throw(s, 1, 3),
    ]
    club.command(
        "t1", "croupier:cy", lambda s, _: hz.open_table(hz.BUILTIN["english"]), new_table=True
    )
    for step in steps:
        club.command("t1", "croupier:cy", lambda s, _, step=step: step(s))
    for i in range(1, 51):
        name = ("ann", "bob", "cat")[i % 3]
        kind = Deposited if i % 4 else Withdrawn
        club.account_command(name, kind, 10 * i, "setter", key=f"pay-{i}-é" if i % 5 == 0 else None)


@dataclass
class Log:
    engine: sa.Engine
    size: int
    receipt: str
    """The newest checkpoint, as a player would have kept it before any tampering."""
    tmp: Path

    def rows(self, where: str = "1 = 1") -> list[Recorded]:
        with self.engine.connect() as conn:
            return [
                Recorded(**row._mapping)
                for row in conn.execute(
                    sa.text(f"SELECT * FROM events WHERE {where} ORDER BY position")
                )
            ]


@pytest.fixture
def log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    _play(store)
    with store.engine.connect() as conn:
        size, note = conn.execute(
            sa.text("SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1")
        ).one()
    assert size == store.read_all(0, limit=10_000)[-1].position > 60
    yield Log(store.engine, size, note, tmp_path)


@contextmanager
def _unguarded(log: Log) -> Iterator[sa.Connection]:
    """What a database administrator can do: switch off the append-only triggers (and
    the foreign keys of the read models), then change what they like."""
    with log.engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # outside a transaction, or SQLite ignores it
            conn.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        with conn.begin():
            for table in ("events", "tree_hashes", "checkpoints"):
                if sqlite:
                    for what in ("update", "delete"):
                        conn.exec_driver_sql(f"DROP TRIGGER {table}_refuse_{what}")
                else:
                    conn.exec_driver_sql(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
            yield conn
        conn.invalidate()  # not back into the pool without its foreign keys


def _set(conn: sa.Connection, at: int, /, **values: object) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    conn.execute(
        sa.text(f"UPDATE events SET {assignments} WHERE position = :where_at"),
        {**values, "where_at": at},
    )


def _rehash(conn: sa.Connection, stream: str, from_version: int) -> None:
    """Recompute the hash chain of `stream` from `from_version` on, as a forger would."""
    rows = [
        Recorded(**row._mapping)
        for row in conn.execute(
            sa.text("SELECT * FROM events WHERE stream = :s ORDER BY version"), {"s": stream}
        )
    ]
    prev = rows[from_version - 2].hash if from_version > 1 else "0" * 64
    for row in rows[from_version - 1 :]:
        digest = codec.chain_hash(prev, row._replace(prev_hash=prev).hashed())
        _set(conn, row.position, prev_hash=prev, hash=digest)
        prev = digest


def _more(payload: str, factor: int = 100) -> str:
    data = json.loads(payload)
    data["amount"] *= factor
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _a_deposit(log: Log, name: str = "ann", nth: int = 2) -> Recorded:
    rows = log.rows(f"stream = 'account:player:{name}' AND type = 'Deposited'")
    return rows[nth - 1]


# Each tampering changes the log and returns the position where it now parts from
# what was signed, and where that receipt check names it: an exact position, or the
# (first, last) range when the data can only bound it.


def forged_deposit_at_the_end_of_a_stream(log: Log, conn: sa.Connection) -> int:
    head = log.rows("stream = 'account:player:ann'")[-1]
    name, schema, text = codec.payload_text(
        Deposited(version=head.version + 1, account="player:ann", amount=1_000_000)
    )
    row = Recorded(
        log.size + 1, head.stream, head.version + 1, name, schema, text, "setter", None,
        head.recorded_at, head.hash, "",
    )  # fmt: skip
    row = row._replace(hash=codec.chain_hash(head.hash, row.hashed()))
    conn.execute(
        sa.text(
            "INSERT INTO events VALUES (:position, :stream, :version, :type, :schema_version,"
            " :payload, :actor, :idempotency_key, :recorded_at, :prev_hash, :hash)"
        ),
        row._asdict(),
    )
    return log.size + 1


def amount_changed_and_stream_rehashed(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log)
    _set(conn, row.position, payload=_more(row.payload))
    _rehash(conn, row.stream, row.version)
    return row.position


def last_50_truncated(log: Log, conn: sa.Connection) -> int:
    keep = log.size - 50
    conn.execute(sa.text("DELETE FROM events WHERE position > :k"), {"k": keep})
    conn.execute(
        sa.text("DELETE FROM tree_hashes WHERE idx >= :i"), {"i": merkle.stored_hash_count(keep)}
    )
    return keep + 1


def whole_stream_deleted(log: Log, conn: sa.Connection) -> int:
    first = log.rows("stream = 'account:player:bob'")[0].position
    conn.execute(sa.text("DELETE FROM events WHERE stream = 'account:player:bob'"))
    return first


def payload_changed(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log, "cat")
    _set(conn, row.position, payload=_more(row.payload, 10))
    return row.position


def hash_changed(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log, "bob")
    _set(conn, row.position, hash="f" * 64)
    return row.position


def actor_changed(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log, "ann", 3)
    _set(conn, row.position, actor="setter:eve")
    return row.position


def two_rows_swapped(log: Log, conn: sa.Connection) -> int:
    first, second = _a_deposit(log, "ann", 2).position, _a_deposit(log, "bob", 3).position
    _set(conn, first, position=-1)
    _set(conn, second, position=first)
    _set(conn, -1, position=second)
    return min(first, second)


def row_deleted_mid_stream(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log, "cat", 2)
    conn.execute(sa.text("DELETE FROM events WHERE position = :p"), {"p": row.position})
    return row.position


def forged_row_with_its_own_hash(log: Log, conn: sa.Connection) -> int:
    row = _a_deposit(log, "bob", 2)
    forged = row._replace(payload=_more(row.payload, 10))
    _set(conn, row.position, payload=forged.payload,
         hash=codec.chain_hash(row.prev_hash, forged.hashed()))  # fmt: skip
    return row.position


OTHER = Signer.generate(ORIGIN)


def whole_log_rehashed_and_resigned(log: Log, conn: sa.Connection) -> tuple[int, int]:
    """Everything made again from a changed history, signed by a key of the same name:
    nothing stored is left to say where, and only the receipt says that it changed."""
    row = _a_deposit(log)
    _set(conn, row.position, payload=_more(row.payload))
    _rehash(conn, row.stream, row.version)
    issued = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints ORDER BY size")).all()
    conn.execute(sa.text("DELETE FROM checkpoints"))
    conn.execute(sa.text("DELETE FROM tree_hashes"))
    assert tree.build(conn) >= log.size
    for size, issued_at in issued:
        tree.issue(conn, OTHER, size, merkle.tree_hash(size, tree.reader(conn)), issued_at)
    return (1, log.size)


TAMPERINGS = [
    forged_deposit_at_the_end_of_a_stream,
    amount_changed_and_stream_rehashed,
    last_50_truncated,
    whole_stream_deleted,
    payload_changed,
    hash_changed,
    actor_changed,
    two_rows_swapped,
    row_deleted_mid_stream,
    forged_row_with_its_own_hash,
    whole_log_rehashed_and_resigned,
]


def _verify(log: Log, *args: str, env: dict[str, str] | None = None) -> Result:
    """`hazard verify` on the log's database."""
    url = log.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(main, ["verify", *args], env={"DATABASE_URL": url, **(env or {})})


def _receipt_file(log: Log) -> str:
    path = log.tmp / "receipt.txt"
    path.write_text(log.receipt, encoding="utf-8")
    return str(path)


def _check(log: Log) -> check.Report:
    with log.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        return check.check_log(conn, VERIFIER, watch=[log.size], batch=7)


def test_the_played_log_verifies(log: Log) -> None:
    report = _check(log)
    assert report.findings == []
    assert report.size == log.size and report.complete
    receipt = open_checkpoint(log.receipt, [VERIFIER])
    assert report.root == receipt.root
    assert report.checkpoints > 40
    assert check.against(receipt, report).agrees


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=lambda f: f.__name__)
def test_a_tampering_is_found_and_named(
    log: Log, tamper: Callable[[Log, sa.Connection], int | tuple[int, int]]
) -> None:
    with _unguarded(log) as conn:
        where = tamper(log, conn)
    report = _check(log)
    assert report.findings, "not detected"
    parting = check.against(open_checkpoint(log.receipt, [VERIFIER]), report)
    cli = _verify(log, "--checkpoint", _receipt_file(log))
    assert cli.exit_code == 1, cli.output
    if isinstance(where, tuple):
        assert f"somewhere in positions 1..{log.size}: only a range can be named" in (cli.output)
        # Re-signed by another key: every stored checkpoint is refused, and the receipt
        # can say only that the log parts from it somewhere up to its size.
        (finding,) = report.findings
        assert finding.position == 1
        assert "the stored checkpoint of size 1 is not signed by the trusted key" in finding.what
        assert (
            f"{report.checkpoints - 1} later stored checkpoints are not signed by it"
            in finding.what
        )
        assert (parting.agrees, parting.first, parting.last) == (False, *where)
        assert "only a range" in str(parting)
        return
    assert report.findings[0].position == where, report.findings
    assert f"the first at position {where}:" in cli.output, cli.output
    if tamper in (forged_deposit_at_the_end_of_a_stream, hash_changed):
        # What the receipt signed is untouched: a later event, or the chain hash, which
        # the tree does not cover; the database check alone names it.
        assert parting.agrees
        assert "the log agrees with the checkpoint" in cli.output
    else:
        assert (parting.agrees, parting.first, parting.last) == (False, where, where), parting
        assert f"the log parts from the checkpoint at position {where}:" in cli.output


def test_a_pass_in_pages_finds_what_a_whole_pass_finds(log: Log) -> None:
    with _unguarded(log) as conn:
        where = actor_changed(log, conn)
    found: list[check.Finding] = []
    resume = None
    with log.engine.connect() as conn, conn.begin():
        while True:
            page = check.check_log(conn, VERIFIER, resume=resume, limit=9)
            found += page.findings
            if page.complete:
                break
            resume = tree.load_frontier(conn, page.size)
    assert page.size == log.size
    assert [f.position for f in found] == [where] * len(found) and found


def test_verify_says_what_it_checked_and_with_which_key(log: Log, signing_key: Path) -> None:
    result = _verify(log)
    assert result.exit_code == 0, result.output
    root = open_checkpoint(log.receipt, [VERIFIER]).root.hex()
    assert f"events: {log.size} in the log, {log.size} read (positions 1..{log.size})" in (
        result.output
    )
    assert f"key: {VERIFIER.text()} (the public half of the signing key at {signing_key})" in (
        result.output
    )
    assert f"root: {root} (the tree of {log.size} events)" in result.output
    assert "every hash chain verifies" in result.output
    given = _verify(log, "--key", VERIFIER.text(), "--checkpoint", _receipt_file(log))
    assert given.exit_code == 0, given.output
    assert f"key: {VERIFIER.text()} (--key)" in given.output
    assert f"the log agrees with the checkpoint of size {log.size}" in given.output


def test_a_key_that_did_not_sign_the_log_is_a_problem_and_no_key_an_error(
    log: Log, tmp_path: Path
) -> None:
    other = tmp_path / "other.vkey"
    other.write_text(OTHER.verifier.text() + "\n", encoding="utf-8")
    result = _verify(log, "--key", str(other))
    assert result.exit_code == 1
    assert f"key: {OTHER.verifier.text()} (--key {other})" in result.output
    assert "position 1: the stored checkpoint of size 1 is not signed by the trusted key" in (
        result.output
    )
    refused = _verify(log, "--key", str(other), "--checkpoint", _receipt_file(log))
    assert refused.exit_code == 1
    assert "is not a checkpoint signed by the trusted key" in refused.output
    nowhere = _verify(log, env={"HAZARD_KEY": str(tmp_path / "none.key")})
    assert nowhere.exit_code == 1
    assert "no key to check the checkpoints with" in nowhere.output
    assert "--key" in nowhere.output


def test_an_incremental_run_reads_only_newer_events_and_rereads_a_rewritten_tree(
    log: Log, store: EventStore, tmp_path: Path
) -> None:
    state = str(tmp_path / "verified.json")
    first = _verify(log, "--state", state)
    assert first.exit_code == 0, first.output
    assert f"now holds the tree of {log.size} events verified" in first.output
    club = Club(Book(store))
    for amount in (1, 2, 3):
        club.account_command("ann", Deposited, amount, "setter")
    again = _verify(log, "--state", state)
    assert again.exit_code == 0, again.output
    assert (
        f"events: {log.size + 3} in the log, 3 read (positions {log.size + 1}..{log.size + 3})"
        in (again.output)
    )
    assert f"(incremental: the first {log.size} were verified before" in again.output
    with _unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn)
    rewritten = _verify(log, "--state", state)
    assert rewritten.exit_code == 1
    assert "is not the one verified then: a full run" in rewritten.output
    assert f"events: {log.size + 3} in the log, {log.size + 3} read" in rewritten.output


def test_a_changed_stored_hash_of_the_tree_is_named_where_it_was_stored(log: Log) -> None:
    """An interior hash of the tree is stored by the event that completes its subtree:
    level 2, number 3 covers records 12..15, so the event at position 16."""
    with _unguarded(log) as conn:
        conn.execute(
            sa.text("UPDATE tree_hashes SET hash = :h WHERE idx = :i"),
            {"h": b"\x07" * 32, "i": merkle.stored_hash_index(2, 3)},
        )
    report = _check(log)
    assert [f.position for f in report.findings] == [16]
    assert "a stored hash of a subtree it completes is not the tree's" in report.findings[0].what
    assert report.first_leaf_differs is None


def test_events_cut_but_their_tree_and_checkpoints_kept_are_named(log: Log) -> None:
    with _unguarded(log) as conn:
        conn.execute(sa.text("DELETE FROM events WHERE position > :k"), {"k": log.size - 5})
    report = _check(log)
    assert report.findings[0].position == log.size - 4
    assert "beyond the" in report.findings[0].what
    assert "the log was cut here" in report.findings[0].what


def test_the_pass_reports_its_progress_a_batch_at_a_time(log: Log) -> None:
    seen: list[tuple[int, int]] = []
    with log.engine.connect() as conn, conn.begin():
        check.check_log(conn, VERIFIER, batch=20, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(d, log.size) for d in [*range(20, log.size, 20), log.size]]


def test_a_pass_reads_one_state_of_the_log_while_writes_go_on(log: Log, store: EventStore) -> None:
    """A write committed during a pass is seen whole or not at all: on PostgreSQL each
    statement would otherwise read afresh, and a checkpoint committed between reading
    the last event and the checkpoints beyond it would look like a cut log."""
    club = Club(Book(store))

    def write(done: int, total: int) -> None:
        if done <= 30:  # three writes, during the pass
            club.account_command("ann", Deposited, done, "setter")

    with log.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, VERIFIER, batch=10, progress=write)
    assert report.findings == []
    assert report.size == log.size


def test_verify_deep_passes_a_played_log_and_accepts_a_receipt_saved_with_jq_r(log: Log) -> None:
    path = log.tmp / "receipt-jq-r.txt"
    path.write_text(log.receipt + "\n", encoding="utf-8")  # `jq -r` adds a newline
    result = _verify(log, "--deep", "--checkpoint", str(path))
    assert result.exit_code == 0, result.output
    assert "every table equals the replay of the events" in result.output
    assert "and every read model" in result.output


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        # The two read-model tamperings of the issue: the API served both.
        ("UPDATE accounts SET balance = balance + 1000 WHERE account = 'player:ann'",
         "accounts: player:ann"),
        ("UPDATE postings SET amount = amount * 10 WHERE id = (SELECT min(id) FROM postings"
         " WHERE account = 'player:ann')", "postings: position"),
    ],
)  # fmt: skip
def test_verify_deep_names_a_read_model_edited_behind_the_events(
    log: Log, edit: str, named: str
) -> None:
    with log.engine.begin() as conn:
        conn.exec_driver_sql(edit)
    plain = _verify(log)
    assert plain.exit_code == 0, plain.output  # the log itself is untouched
    deep = _verify(log, "--deep")
    assert deep.exit_code == 1, deep.output
    assert "differ from the replay of the events" in deep.output
    assert named in deep.output


def test_a_mistyped_key_file_is_named_as_no_file(log: Log) -> None:
    result = _verify(log, "--key", "/nowhere/club.pub")
    assert result.exit_code == 2 and "no file '/nowhere/club.pub'" in result.output
