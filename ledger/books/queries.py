"""What the read side answers, a page at a time: settlements, a table's rounds, a
player's statement, the event log; and for the console's pages, the tables, the
players with their balances, and the setter's takings.

The REST API's views call these (ledger.api.reads, ledger.api.audit), and so do the
console's pages, which write no SQL of their own; the SQL is the read models' own:
ledger.books.tableviews for settlements and rounds, ledger.books.projections for
statements and balances, ledger.store.log.chains for the log.

    with queries.reading(store) as read:
        if read.has_stream(stream):
            return read.rounds(stream, after=0, limit=50)

Every listing is a page `{"items": [...], "next_after": ...}` walked by keyset: pass
`next_after` back as `after` until it is null (`page`, which every listing shares).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from engine.state import SETTER
from ledger.books import auditreads, projections, tableviews, throws
from ledger.books.accounts import ACCOUNT_PREFIX, TABLE_PREFIX, owed, player_account
from ledger.store.eventstore import EventStore
from ledger.store.log import chains
from ledger.store.schema import events, postings, settlement_parties, settlements

ROUND_THROWS = 100
"""The most throws of one round a dispute's form offers, the latest."""
PLAYER = "player:"
"""How a player's ledger account begins (ledger.books.accounts.player_account)."""

TABLE_OPENED = sa.text("type = 'TableOpened'")
"""A table's first event, as the partial index of the tables' openings names them
(ledger.store.schema, migration 0016): written as the index's own clause, so that SQLite
sees the query is within it (a bound parameter it would not)."""

Read = Callable[[int, int], list[dict[str, Any]]]
"""A listing's query: `read(after, n)` is at least `n` items after key `after`, if
there are that many, in the order of their key."""


def page(read: Read, after: int, limit: int, key: str) -> dict[str, Any]:
    """A page of a keyset listing: the first `limit` items after `after`, and any more
    read that share the last one's key (a statement keeps an event's postings whole).
    `next_after` is null exactly when nothing comes after the page, so a walk never
    ends on an empty page, nor takes a full last page for one with more after it.

    One item more than the page is read to know that; only a page that ran over to the
    end of what was read (a statement whose last event has more postings than that)
    needs to ask once more."""
    items = read(after, limit + 1)
    if len(items) <= limit:
        return {"items": items, "next_after": None}
    last = items[limit - 1][key]
    shown = [item for item in items if item[key] <= last]
    more = len(shown) < len(items) or bool(read(last, 1))
    return {"items": shown, "next_after": last if more else None}


@contextmanager
def reading(store: EventStore) -> Iterator[Reader]:
    """A reader on one connection of `store`'s, so that a request's checks and its page
    are read together."""
    with store.engine.connect() as conn:
        yield Reader(store, conn)


class Reader:
    """The read models as one connection sees them."""

    def __init__(self, store: EventStore, conn: sa.Connection) -> None:
        self.store, self.conn = store, conn

    def has_stream(self, stream: str) -> bool:
        """Whether the stream has any event: a table or an account exists."""
        return bool(self.store.stream_version(self.conn, stream))

    def settlements(
        self,
        *,
        stream: str | None,
        round: int | None,
        party: str | None,
        bet_id: str | None,
        since: str | None,
        until: str | None,
        after: int,
        limit: int,
        json_text: Callable[[str], Any] = json.loads,
    ) -> dict[str, Any]:
        """A page of settlements in position order (tableviews.settlements' filters)."""
        return page(
            lambda after, limit: tableviews.settlements(
                self.conn,
                stream=stream,
                round=round,
                party=party,
                bet_id=bet_id,
                since=since,
                until=until,
                after_position=after,
                limit=limit,
                json_text=json_text,
            ),
            after,
            limit,
            "position",
        )

    def rounds(self, stream: str, after: int, limit: int) -> dict[str, Any]:
        """A page of the table's rounds, in order."""
        return page(
            lambda after, limit: tableviews.rounds(self.conn, stream, after, limit),
            after,
            limit,
            "round",
        )

    def round_detail(
        self, stream: str, round: int, after: int, limit: int
    ) -> dict[str, Any] | None:
        """One round, and a page of its events; None if the table has no such round."""
        row = tableviews.round_row(self.conn, stream, round)
        if row is None:
            return None
        events = page(
            lambda after, limit: tableviews.round_events(self.conn, stream, row, after, limit),
            after,
            limit,
            "position",
        )
        return {
            **tableviews.round_view(row),
            "events": events["items"],
            "next_after": events["next_after"],
        }

    def statement(self, account: str, after: int, limit: int) -> dict[str, Any]:
        """A page of the account's postings, each with the event that caused it."""
        return page(
            lambda after, limit: projections.statement(self.conn, account, after, limit),
            after,
            limit,
            "position",
        )

    def events(self, stream: str | None, after: int, limit: int) -> dict[str, Any]:
        """A page of the event log, of one stream or of all, in position order."""
        return page(
            lambda after, limit: chains.events(self.conn, stream, after, limit),
            after,
            limit,
            "position",
        )

    # -- the console's pages --------------------------------------------------------------

    def latest_rounds(self, stream: str, limit: int) -> list[dict[str, Any]]:
        """The table's last `limit` rounds, newest first, as `rounds` shows each."""
        rows = auditreads.last_rounds(self.conn, stream, limit)
        return [tableviews.round_view(row) for row in rows]

    def last_throws(self, stream: str, limit: int) -> throws.Recent:
        """The table's last `limit` throws, newest first, each with what it did, and
        the stakes placed meanwhile (ledger.books.throws)."""
        return throws.recent(self.conn, stream, limit)

    def round_throws(self, stream: str, round: int) -> list[dict[str, Any]] | None:
        """The throws of the table's round `round`, in order (their versions name them
        to a dispute); None if the table has no such round."""
        row = tableviews.round_row(self.conn, stream, round)
        if row is None:
            return None
        found, _ = auditreads.last_throws(self.conn, row, ROUND_THROWS)
        return [
            {"version": t.version, "recorded_at": t.recorded_at, **json.loads(t.payload)}
            for t in reversed(found)
        ]

    def rounds_with(self, stream: str, name: str, rounds: list[int]) -> set[int]:
        """Those of the table's `rounds` in which the player `name` had a bet settled or
        voided: along the settlements' (stream, round) key, a few rows a round."""
        s, p = settlements.c, settlement_parties.c
        found = self.conn.execute(
            sa.select(s.round)
            .distinct()
            .select_from(settlements.join(settlement_parties, p.position == s.position))
            .where(s.stream == stream, s.round.in_(rounds), p.party == player_account(name))
        )
        return set(found.scalars())

    def changes_since(self, stream: str, version: int, limit: int) -> list[dict[str, Any]]:
        """The stream's newest `limit` events after `version`, oldest first, each its
        version, type and payload: what a page drawn at `version` has not seen. Along
        the (stream, version) key, a few rows however far behind the page is."""
        e = events.c
        newest = self.conn.execute(
            sa.select(e.version, e.type, e.payload)
            .where(e.stream == stream, e.version > version)
            .order_by(e.version.desc())
            .limit(limit)
        )
        return [
            {"version": row.version, "type": row.type, "payload": chains.parsed(row.payload) or {}}
            for row in reversed(list(newest))
        ]

    def tables(self, before: int | None, limit: int) -> tuple[list[str], int | None]:
        """A page of the tables, newest first: at most `limit` opened before position
        `before` (None: the newest), by name; and the `before` of the next (older) page
        (None: this is the last). Along the index of the tables' openings (migration
        0016), however many tables and events the club has."""
        e = events.c
        query = (
            sa.select(e.stream, e.position)
            .where(TABLE_OPENED)
            .order_by(e.position.desc())
            .limit(limit + 1)
        )
        if before is not None:
            query = query.where(e.position < before)
        rows = self.conn.execute(query).all()
        shown = rows[:limit]
        more = shown[-1].position if len(rows) > limit else None
        return [r.stream.removeprefix(TABLE_PREFIX) for r in shown], more

    def players(self) -> list[dict[str, Any]]:
        """The setter and every player, by name, with their balance, credit limit and
        what they owe: each account opened (a player's first event), with its balance
        if money has moved."""
        prefix = ACCOUNT_PREFIX + PLAYER
        return self._standing(
            [SETTER, *sorted(s.removeprefix(prefix) for s in self._opened(prefix))]
        )

    def players_opened(self) -> int:
        """How many player accounts have been opened: it changes exactly when `players()`
        gains a name (none is ever closed). A count along the (stream, version) key."""
        e = events.c
        prefix = ACCOUNT_PREFIX + PLAYER
        opened = sa.select(sa.func.count()).where(
            *starts_with(self.conn, e.stream, prefix), e.version == 1
        )
        return int(self.conn.execute(opened).scalar_one())

    def players_from(self, start: str, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A page of `players()`: the setter (on the first page, `start` ""), then the
        players by name from `start`, at most `limit`; and the name the next page starts
        at (None: this is the last). A range of the (stream, version) key, however many
        players the club has."""
        prefix = ACCOUNT_PREFIX + PLAYER
        e = events.c
        stream = _bytes(self.conn, e.stream)
        names = (
            self.conn.execute(
                sa.select(e.stream)
                .where(*starts_with(self.conn, e.stream, prefix), stream >= prefix + start)
                .where(e.version == 1)
                .order_by(stream)
                .limit(limit + 1)
            )
            .scalars()
            .all()
        )
        shown = [n.removeprefix(prefix) for n in names[:limit]]
        more = names[limit].removeprefix(prefix) if len(names) > limit else None
        return self._standing(([SETTER] if not start else []) + shown), more

    def _standing(self, names: list[str]) -> list[dict[str, Any]]:
        standing = projections.standings(self.conn, [player_account(n) for n in names])
        found = []
        for name in names:
            balance, limit = standing.get(player_account(name), (0, 0))
            found.append(
                {
                    "name": name,
                    "balance": balance,
                    "credit_limit": limit,
                    "owed": owed(balance, limit),
                }
            )
        return found

    def _opened(self, prefix: str) -> list[str]:
        """The streams under `prefix`, in the order their first events were written."""
        e = events.c
        first = sa.select(e.stream).where(*starts_with(self.conn, e.stream, prefix), e.version == 1)
        return [r.stream for r in self.conn.execute(first.order_by(e.position))]

    def takings(self, days: int) -> list[dict[str, Any]]:
        """The setter's net per table per day, of the latest `days` days with any: the
        sum of the setter's postings made by each table's events, by the day (UTC) each
        event was recorded. Money the setter put into a bet's escrow counts when it was
        put in, and what came back when the bet was settled: a bet still open at the
        day's end shows as the setter's stake out."""
        p, e = postings.c, events.c
        day = sa.func.substr(e.recorded_at, 1, 10)
        rows = self.conn.execute(
            sa.select(e.stream, day.label("day"), sa.func.sum(p.amount).label("net"))
            .select_from(postings.join(events, e.position == p.position))
            .where(p.account == SETTER, e.stream.startswith(TABLE_PREFIX))
            .group_by(e.stream, day)
        ).all()
        latest = sorted({r.day for r in rows})[-days:]
        return [
            {"table": r.stream.removeprefix(TABLE_PREFIX), "day": r.day, "net": int(r.net)}
            for r in sorted(rows, key=lambda r: (r.day, r.stream))
            if r.day in latest
        ]


def _bytes(conn: sa.Connection, column: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
    """`column` compared and ordered by its bytes, as Python orders str: SQLite's own
    order, COLLATE "C" on PostgreSQL (whose database's collation may order by words)."""
    return column.collate("C") if conn.dialect.name == "postgresql" else column


def starts_with(conn: sa.Connection, column: sa.ColumnElement[str], prefix: str) -> list[Any]:
    """`column` starts with `prefix`, as a range of its bytes: on SQLite an index's
    range scan, where LIKE (with its escape) reads every row."""
    text = _bytes(conn, column)
    return [text >= prefix, text < prefix[:-1] + chr(ord(prefix[-1]) + 1)]
