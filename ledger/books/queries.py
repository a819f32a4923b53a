"""What the read side answers, a page at a time: settlements, a table's rounds, a
player's statement, the event log.

The REST API's views call these (ledger.api.reads, ledger.api.audit), as a console
will; the SQL is the read models' own: ledger.books.tableviews for settlements and rounds,
ledger.books.projections for statements, ledger.store.log.chains for the log.

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

from ledger.books import projections, tableviews
from ledger.store.eventstore import EventStore
from ledger.store.log import chains

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
