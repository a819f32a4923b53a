"""The log the console's benches read (bench.console, bench.playerpage): bench.seed's
seeded log grown to a size by copies of itself, in SQL, as a club's log would grow
evening after evening.

Every copy but the newest is the seeded log with its evening ended after it (`closed`:
the setter decides the disputes still open and closes each table through the API,
which voids the bets still open and returns their stakes); the newest is the seeded
log as it is, its tables in play. Each copy's tables are renamed (`table:t3-c7`), its
positions moved on, its times a week on; its players are the club's, whose accounts
are opened once (a copy leaves out the openings, and each account's stream goes on
from the copy before). With the events come their postings (to the same players and
the setter, so that every account's history grows with the log, as a club's does, and
to the copy's own escrows, `escrow:t3-c7:b9`, as the service names a bet's escrow
after its table: an escrow holds its one bet's few postings at any size, and only the
newest evening's bets are open), settlements (their sources moved on, their transfers
naming the copy's escrows) and their parties, rounds, disputes and snapshots (each
copy's running balances on its postings moved on by what the copies before it
netted), and the dice report's kept counts. Every balance is then set to the sum of
its postings and checked to be its last posting's running balance. The deep check
(ledger.books.deep: every read model replayed from the events and compared) finds a
grown log what its events make (tests/ledger/test_bench_grown.py). The hashes are
copied as they are: the log check would refuse this log, which is a benchmark's and
never a club's, and a grown log takes no write (its copies' Merkle tree is not
stored).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger.store import db

SUFFIX = "-c"


def grown_arguments(doc: str) -> argparse.ArgumentParser:
    """The command line of a bench over the grown log: the sizes to grow it to, the
    seeded log it grows from, the requests a figure, and where the logs are kept."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--base", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--cache-dir", type=Path, default=Path(".bench-cache"))
    return parser


def closed(base: Path, path: Path, token: str, key: Path) -> Path:
    """A copy of the seeded database `base` at `path` with the evening ended after its
    log, by the setter (`token`) through the API, at the log's own (simulated) time:
    each dispute still open upheld, and every table closed, its open bets voided and
    their stakes returned."""
    shutil.copyfile(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        last = conn.execute(sa.text("SELECT max(recorded_at) FROM events")).scalar_one()
        tables = conn.execute(
            sa.text("SELECT stream FROM events WHERE type = 'TableOpened' ORDER BY position")
        ).scalars()
        names = [stream.removeprefix("table:") for stream in tables]
        waiting = conn.execute(
            sa.text("SELECT stream, dispute_id FROM disputes WHERE resolution IS NULL")
        ).all()
    engine.dispose()
    app, store = _app(path, key, clock=lambda: last)
    client = app.test_client()
    for stream, dispute in waiting:  # the setter decides the evening's disputes first
        answer = client.post(
            f"/tables/{stream.removeprefix('table:')}/disputes/{dispute}/resolution",
            json={"resolution": "upheld", "reason": "the evening's end"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code in (200, 201), (dispute, answer.get_json())
    for name in names:
        answer = client.post(f"/tables/{name}/close", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 201, (name, answer.get_json())
    store.close()
    store.engine.dispose()
    return path


def grow(base: Path, path: Path, events: int, ended: Path | None = None) -> tuple[int, int]:
    """A copy of the seeded database `base` at `path`, grown until it holds at least
    `events` events: how many it holds, and how many copies. Each copy but the newest
    is `ended` (`base` with its tables closed: `closed`), the newest `base`; without
    `ended`, every copy is `base`."""
    full = ended or base
    shutil.copyfile(base, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        n = conn.execute(sa.text("SELECT max(position) FROM events")).scalar_one()
    engine.dispose()
    if events <= n:
        return n, 1
    shutil.copyfile(full, path)
    engine = db.make_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"ATTACH DATABASE '{base}' AS newest")  # no transaction yet
        conn.commit()
        with conn.begin():
            size = conn.execute(sa.text("SELECT max(position) FROM main.events")).scalar_one()
            each = {"main": _copied(conn, "main", size), "newest": _copied(conn, "newest", n)}
            conn.execute(
                sa.text(
                    "CREATE TEMP TABLE first_escrows AS SELECT account, credit_limit "
                    "FROM main.accounts WHERE account LIKE 'escrow:%'"
                )
            )
            conn.execute(
                sa.text(
                    "CREATE TEMP TABLE account_streams AS SELECT stream, max(version) AS v, "
                    "sum(type = 'AccountOpened') AS opened FROM main.events "
                    "WHERE stream LIKE 'account:%' GROUP BY stream"
                )
            )
            conn.execute(
                sa.text(
                    "CREATE TEMP TABLE account_nets AS SELECT account, sum(amount) AS net "
                    "FROM main.postings GROUP BY account"
                )
            )
            total, k = size, 0
            while total < events:
                k += 1
                source = "newest" if total + each["newest"] >= events else "main"
                _copy(conn, source, k, total)
                total += each[source]
            copied_counts(conn, k + 1, lambda k: f"{SUFFIX}{k}")
            _balances(conn)
    engine.dispose()
    return total, k + 1


def _copied(conn: sa.Connection, source: str, through: int) -> int:
    """The events a copy of `source`'s first `through` takes, each with its place in the
    copy (a temporary table `copied_<source>`: old position, rank): all but the
    accounts' openings, which a copy does not open again (its players are the club's,
    already open). How many."""
    conn.execute(
        sa.text(f"CREATE TEMP TABLE copied_{source} (old INTEGER PRIMARY KEY, rank INTEGER)")
    )
    conn.execute(
        sa.text(
            f"INSERT INTO copied_{source} SELECT position, row_number() OVER "
            f"(ORDER BY position) FROM {source}.events WHERE position <= :n "
            "AND NOT (stream LIKE 'account:%' AND type = 'AccountOpened')"
        ),
        {"n": through},
    )
    return int(conn.execute(sa.text(f"SELECT count(*) FROM copied_{source}")).scalar_one())


def _copy(conn: sa.Connection, source: str, k: int, offset: int) -> None:
    """Copy k of the log, after position `offset`: `source`'s events (`_copied`), each
    table's stream renamed, each account's the same stream, its versions going on."""
    args: dict[str, Any] = {
        "offset": offset, "k": f"{SUFFIX}{k}", "shift": f"+{7 * k} days", "copy": k,
    }  # fmt: skip
    when = "strftime('%Y-%m-%dT%H:%M:%f', {0}, :shift) || substr({0}, 24)"
    s, m = source, f"copied_{source}"

    def moved(column: str) -> str:
        return f"(SELECT :offset + rank FROM {m} WHERE old = {column})"

    conn.execute(
        sa.text(
            "INSERT INTO main.events SELECT :offset + m.rank, CASE WHEN e.stream LIKE "
            "'account:%' THEN e.stream ELSE e.stream || :k END, CASE WHEN e.stream LIKE "
            "'account:%' THEN a.v + (:copy - 1) * (a.v - a.opened) + e.version - a.opened "
            "ELSE e.version END, e.type, e.schema_version, e.payload, e.actor, NULL, "
            f"{when.format('e.recorded_at')}, e.prev_hash, e.hash FROM {s}.events AS e "
            f"JOIN {m} AS m ON m.old = e.position LEFT JOIN account_streams AS a "
            "ON a.stream = e.stream ORDER BY e.position"
        ),
        args,
    )
    # The copy's escrows are its own and start empty; every other account is the same
    # person's or the setter's, its running balances the source's plus k times what it
    # netted over a full copy (the k copies before this one).
    conn.execute(
        sa.text(
            "INSERT INTO main.postings (position, account, amount, counterparty, balance) "
            f"SELECT :offset + m.rank, {_escrow('p.account')}, p.amount, "
            f"{_escrow('p.counterparty')}, CASE WHEN p.account LIKE 'escrow:%' "
            f"THEN p.balance ELSE p.balance + :copy * t.net END FROM {s}.postings AS p "
            f"JOIN {m} AS m ON m.old = p.position JOIN account_nets AS t "
            "ON t.account = p.account ORDER BY p.id"
        ),
        args,
    )
    conn.execute(
        sa.text(
            "INSERT INTO main.accounts (account, balance, credit_limit) "
            f"SELECT {_escrow('account')}, 0, credit_limit FROM first_escrows"
        ),
        args,
    )
    conn.execute(
        sa.text(
            "INSERT INTO main.settlements (position, stream, round, bet_id, kind, outcome, "
            "winner, reason, recorded_at, transfers, sources, adjusted) "
            "SELECT :offset + m.rank, x.stream || :k, x.round, x.bet_id, x.kind, x.outcome, "
            f"x.winner, x.reason, {when.format('x.recorded_at')}, "
            "replace(x.transfers, '\"escrow:' || substr(x.stream, 7) || ':', "
            "'\"escrow:' || substr(x.stream, 7) || :k || ':'), "
            f"(SELECT json_group_array({moved('j.value')}) FROM json_each(x.sources) AS j), "
            f"x.adjusted FROM {s}.settlements AS x JOIN {m} AS m ON m.old = x.position"
        ),
        args,
    )
    conn.execute(
        sa.text(
            "INSERT INTO main.settlement_parties (position, party) SELECT :offset + m.rank, "
            f"x.party FROM {s}.settlement_parties AS x JOIN {m} AS m ON m.old = x.position"
        ),
        args,
    )
    conn.execute(
        sa.text(
            "INSERT INTO main.disputes SELECT stream || :k, dispute_id, round, claimant, "
            "role, claim, throw, die1, die2, opened_version, "
            f"{moved('opened_position')}, opened_by, {when.format('opened_at')}, "
            "resolution, reason, resolved_throw, resolved_die1, resolved_die2, "
            f"resolved_version, {moved('resolved_position')}, resolved_by, "
            f"{when.format('resolved_at')} FROM {s}.disputes "
            f"WHERE opened_position IN (SELECT old FROM {m})"
        ),
        args,
    )
    conn.execute(
        sa.text(
            "INSERT INTO main.rounds SELECT stream || :k, round, caster, main, chance, "
            f"result, first_version, last_version, {moved('first_position')}, "
            f"{moved('last_position')}, {when.format('started_at')}, "
            f"{when.format('ended_at')} FROM {s}.rounds "
            f"WHERE first_position IN (SELECT old FROM {m})"
        ),
        args,
    )
    conn.execute(
        sa.text(
            f"INSERT INTO main.snapshots SELECT stream || :k, version, state FROM {s}.snapshots "
            f"WHERE stream IN (SELECT DISTINCT stream FROM {s}.rounds "
            f"WHERE first_position IN (SELECT old FROM {m}))"
        ),
        args,
    )


def _balances(conn: sa.Connection) -> None:
    """Every balance the sum of its postings, checked against its last running one."""
    conn.execute(
        sa.text(
            "UPDATE main.accounts SET balance = (SELECT coalesce(sum(amount), 0) "
            "FROM main.postings WHERE postings.account = accounts.account)"
        )
    )
    wrong = conn.execute(
        sa.text(
            "SELECT count(*) FROM main.accounts AS a WHERE a.balance != coalesce((SELECT "
            "p.balance FROM main.postings AS p WHERE p.account = a.account "
            "ORDER BY p.position DESC, p.id DESC LIMIT 1), 0)"
        )
    ).scalar_one()
    assert wrong == 0, f"{wrong} accounts' last running balance is not their balance"


def copied_counts(conn: sa.Connection, copies: int, renamed: Callable[[int], str]) -> None:
    """The dice-fairness report's kept counts (ledger.books.dicetallies) of a log copied
    onto itself `copies` times over, each copy's streams `renamed(k)`: each copy throws
    and decides what the first did, and its tables are listed under their new names.
    (No dispute corrects a throw: the seeded log has none, and `closed` upholds; each
    copy's throws count as the first's do.)"""
    first = conn.execute(sa.text("SELECT stream, rules FROM main_tables")).all()
    conn.execute(sa.text("UPDATE dice_counts SET throws = throws * :c"), {"c": copies})
    conn.execute(sa.text("UPDATE main_counts SET rounds = rounds * :c"), {"c": copies})
    listed = [{"s": s + renamed(k), "r": r} for k in range(1, copies) for s, r in first]
    if listed:
        conn.execute(sa.text("INSERT INTO main_tables (stream, rules) VALUES (:s, :r)"), listed)


def _app(path: Path, key: Path, **store: Any) -> Any:
    from ledger.api import create_app
    from ledger.books.book import Book
    from ledger.store.eventstore import EventStore
    from ledger.store.log.keys import load_signer

    engine = db.make_engine(f"sqlite:///{path}")
    kept = EventStore(engine, signer=load_signer(key), **store)
    return create_app(book=Book(kept)), kept


def _escrow(column: str) -> str:
    """SQL for `column` with an escrow's table renamed as copy :k's (`escrow:t3:b9` to
    `escrow:t3-c7:b9`); any other account as it is. A table's name holds no colon."""
    rest = f"instr(substr({column}, 8), ':')"
    return (
        f"CASE WHEN {column} LIKE 'escrow:%' THEN substr({column}, 1, 6 + {rest}) || :k || "
        f"substr({column}, 7 + {rest}) ELSE {column} END"
    )
