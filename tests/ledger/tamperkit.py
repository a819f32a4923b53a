"""A log played at the club, and what its administrator could do to it behind the
database's back: shared by the log check's tamper tests and `hazard verify`'s."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from click.testing import CliRunner, Result

import engine as hz
from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store import codec
from ledger.store.eventstore import GENESIS, EventStore, Recorded
from ledger.store.log import merkle, sealing, tree
from ledger.store.log.heads import SEALS, Heads
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited, Withdrawn
from tests.signing import ORIGIN


def play(store: EventStore, last_throw: tuple[int, int] = (1, 3)) -> None:
    """A small evening at the club: players paid in and out, a round with money. Ann
    calls 7 and throws a chance of 4, and her `last_throw` decides the round: a 4 (1+3)
    nicks it and the bets go her way; a 7 (say 3+4) throws her out and they go the
    other."""
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
        lambda s: hz.throw(s, *last_throw),
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


def played_log(store: EventStore, tmp_path: Path) -> Iterator[Log]:
    """The `log` fixture: the evening played, and its newest checkpoint kept."""
    play(store)
    with store.engine.connect() as conn:
        size, note = conn.execute(
            sa.text("SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1")
        ).one()
    assert size == store.read_all(0, limit=10_000)[-1].position > 60
    yield Log(store.engine, size, note, tmp_path)


@contextmanager
def unguarded(log: Log) -> Iterator[sa.Connection]:
    """What a database administrator can do: switch off the append-only triggers and
    the one that keeps time going forward (and the foreign keys of the read models),
    then change what they like."""
    with log.engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # outside a transaction, or SQLite ignores it
            conn.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        with conn.begin():
            if sqlite:  # (a database from before migration 0013 has none)
                conn.exec_driver_sql("DROP TRIGGER IF EXISTS events_refuse_earlier")
            for table in ("events", "tree_hashes", "checkpoints", "heads_log"):
                if sqlite:
                    for what in ("update", "delete"):
                        conn.exec_driver_sql(f"DROP TRIGGER {table}_refuse_{what}")
                else:
                    conn.exec_driver_sql(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
            yield conn
        conn.invalidate()  # not back into the pool without its foreign keys


def set_row(conn: sa.Connection, at: int, /, **values: object) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    conn.execute(
        sa.text(f"UPDATE events SET {assignments} WHERE position = :where_at"),
        {**values, "where_at": at},
    )


def rehash_stream(conn: sa.Connection, stream: str, from_version: int) -> None:
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
        set_row(conn, row.position, prev_hash=prev, hash=digest)
        prev = digest


def remade(rows: Sequence[Recorded], versions: bool = True) -> list[Recorded]:
    """`rows` as the whole log, made again as the bank's own code would have written
    them: positions from 1, each stream's hash chain and (unless told not to, for
    a stream that is to be seen skipping one) its versions, and every seal (the last
    event of each write) committing the heads the events before it make, as
    ledger.store.log.sealing makes a seal. What an insider who changed, dropped or
    moved events does next, so that no chain and no seal says where."""
    chains: dict[str, tuple[int, str]] = {}
    heads, sealed = Heads(), 0  # the heads stand after fresh[:sealed], the last seal
    fresh: list[Recorded] = []
    for position, row in enumerate(rows, start=1):
        version, prev = chains.get(row.stream, (0, GENESIS))
        if versions or row.stream == SEALS:
            version += 1
        else:
            version = row.version
        made = row._replace(position=position, version=version, prev_hash=prev)
        if row.stream == SEALS:
            seal, _ = sealing.seal(heads, fresh[sealed:], position, row.recorded_at)
            assert seal.version == version, "a seal's version numbers the seals"
            made = made._replace(payload=seal.payload)
        made = made._replace(hash=codec.chain_hash(prev, made.hashed()))
        if row.stream == SEALS:
            sealing.sealed(heads, made)
            sealed = position
        chains[row.stream] = (version, made.hash)
        fresh.append(made)
    return fresh


def rebuild_heads(conn: sa.Connection, rows: Sequence[Recorded]) -> None:
    """heads_log written afresh from `rows`, the whole log (sealing.rebuild, which
    checks every seal on the way), as after a restore."""
    conn.execute(sa.text("DELETE FROM heads_log"))
    sealing.rebuild(conn, [rows])


def reseal(conn: sa.Connection) -> None:
    """Every seal, and the chain of the seals' stream, made again from the events as
    they now stand (`remade`), and heads_log rebuilt: the events' own positions,
    versions and chains left as they are."""
    rows = [
        Recorded(**row._mapping)
        for row in conn.execute(sa.text("SELECT * FROM events ORDER BY position"))
    ]
    fresh = remade(rows)
    for old, new in zip(rows, fresh, strict=True):
        assert new.stream == SEALS or new == old, f"the chain of {old.stream} is broken"
        if new != old:
            set_row(conn, old.position, payload=new.payload, prev_hash=new.prev_hash,
                    hash=new.hash)  # fmt: skip
    rebuild_heads(conn, fresh)


def multiplied(payload: str, factor: int = 100) -> str:
    data = json.loads(payload)
    data["amount"] *= factor
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def a_deposit(log: Log, name: str = "ann", nth: int = 2) -> Recorded:
    rows = log.rows(f"stream = 'account:player:{name}' AND type = 'Deposited'")
    return rows[nth - 1]


OTHER = Signer.generate(ORIGIN)


def whole_log_rehashed_and_resigned(
    log: Log, conn: sa.Connection, signer: Signer = OTHER
) -> tuple[int, int]:
    """Everything made again from a changed history (its chain, every seal after it,
    the heads, the tree), signed by a key of the same name (or, given `signer`, the
    bank's own, as an insider holding it would): nothing stored is left to say where,
    and only the receipt says that it changed."""
    row = a_deposit(log)
    set_row(conn, row.position, payload=multiplied(row.payload))
    rehash_stream(conn, row.stream, row.version)
    reseal(conn)
    issued = conn.execute(sa.text("SELECT size, issued_at FROM checkpoints ORDER BY size")).all()
    conn.execute(sa.text("DELETE FROM checkpoints"))
    conn.execute(sa.text("DELETE FROM tree_hashes"))
    assert tree.build(conn) >= log.size
    for size, issued_at in issued:
        tree.issue(conn, signer, size, merkle.tree_hash(size, tree.reader(conn)), issued_at)
    return (1, log.size)


def hazard_verify(log: Log, *args: str, env: dict[str, str] | None = None) -> Result:
    """`hazard verify` on the log's database."""
    url = log.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(main, ["verify", *args], env={"DATABASE_URL": url, **(env or {})})


def receipt_file(log: Log) -> str:
    path = log.tmp / "receipt.txt"
    path.write_text(log.receipt, encoding="utf-8")
    return str(path)
