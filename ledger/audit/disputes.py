"""Disputes, as the club reads them: one dispute with the service's answer derived
again, the disputes of a table or of the club, and the round's record that the answer
and the commands (ledger.commands.disputes: opening one, the setter's resolution) judge.

The engine judges a dispute on the round's *record*, read back here: the table's state
from the newest snapshot before the round (a snapshot is taken at the end of a write,
so it lies between commands), and the events after it, read in pages until the round
and its bets are over. The referee builds the record, so reading it re-derives the
round under the table's recorded rule set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

import engine as hz
from engine import disputes
from engine.errors import Amount, Rule, RuleBroken, minor_units
from engine.phrase import Phrase
from engine.referee import read_round
from ledger.books import auditreads, disputeviews, tableviews
from ledger.books.accounts import book_account
from ledger.service import Club, NotFound, is_name, table_stream
from ledger.store import snapshots

DISPUTE_ID = re.compile(r"d[1-9][0-9]{0,9}")
"""A dispute's id: "d" and the version that opened it. Nothing else is looked up (a NUL
is refused by PostgreSQL as a parameter rather than found missing)."""
LAST_ROUND = 2**31 - 1
"""Rounds are signed 32-bit columns."""


def round_record(
    conn: sa.Connection, stream: str, number: int, now: hz.TableState
) -> disputes.RoundRecord | None:
    """Round `number` of the table, read back (None if the table has no such round, or
    it has not ended)."""
    if type(number) is not int or not 1 <= number <= LAST_ROUND:
        return None  # never played: and a number past the column's range is not looked up
    row = tableviews.round_row(conn, stream, number)
    if row is None:
        return None
    start = snapshots.before(conn, stream, row.first_version)
    try:
        events = auditreads.events_after(conn, stream, start.version)
        return read_round(number, start, events, now)
    except RuleBroken as exc:
        if exc.rule is Rule.ROUND_NOT_ENDED:
            return None
        raise


# -- reading ----------------------------------------------------------------------------------


Money = Callable[[Amount], str]
"""How an amount the answer's words name is written: in minor units (`minor_units`, the
API's words), or in the club's money (ledger.console.amounts.money_words, a page's)."""


def answer_view(stream: str, answer: disputes.Answer, money: Money = minor_units) -> dict[str, Any]:
    """The service's answer as JSON, money in ledger accounts; the what-if's words with
    their amounts written by `money`."""

    def words(phrase: Phrase | None) -> str | None:
        return None if phrase is None else phrase.said(money)

    def paid(bets: tuple[disputes.Paid, ...]) -> list[dict[str, Any]]:
        return [
            {
                "bet_id": p.bet_id,
                "outcome": p.outcome,
                "winner": book_account(stream, p.winner) if p.winner else None,
                "net": {book_account(stream, who): amount for who, amount in p.net.items()},
            }
            for p in bets
        ]

    what = answer.what_if
    return {
        "matches": answer.matches,
        "mismatch": words(answer.mismatch),
        "result": answer.result,
        "bets": paid(answer.bets),
        "what_if": None
        if what is None
        else {
            "throw": what.throw,
            "dice": [what.die1, what.die2],
            "result": what.result,
            "main": what.main,
            "chance": what.chance,
            "bets": paid(what.bets),
            "stopped": words(what.stopped),
            "correctable": what.refused is None,
            "refused": words(what.refused),
            "refused_rule": what.refused_rule.value if what.refused_rule else None,
            "adjustments": [
                {
                    "bet_id": bet_id,
                    "transfers": [
                        {
                            "source": book_account(stream, t.source),
                            "target": book_account(stream, t.target),
                            "amount": t.amount,
                        }
                        for t in transfers
                    ],
                }
                for bet_id, transfers in what.adjustments.items()
            ],
        },
    }


def resolved_as(row: Any) -> str | None:
    """How the dispute of the disputes read model's `row` was resolved (None: it is open),
    as a refusal to resolve it again says."""
    if row.resolution is None:
        return None
    return f"{row.resolution}, at version {row.resolved_version}, by {row.resolved_by}"


def require_table(club: Club, table: str) -> str:
    stream = table_stream(table)
    if not is_name(table) or not club.store.version(stream):
        raise NotFound(f"there is no table {table!r}")
    return stream


def dispute(club: Club, table: str, dispute_id: str, money: Money = minor_units) -> dict[str, Any]:
    """One dispute: who opened it and why, how it was resolved, its adjustments, and the
    service's answer, derived again from the round's events (its words' amounts written
    by `money`: minor units for the API, the club's money for a page)."""
    stream = require_table(club, table)
    if not DISPUTE_ID.fullmatch(dispute_id):
        raise NotFound(f"there is no dispute {dispute_id!r} at table {table!r}")
    with club.store.engine.connect() as conn:
        row = disputeviews.row_of(conn, stream, dispute_id)
        if row is None:
            raise NotFound(f"there is no dispute {dispute_id!r} at table {table!r}")
        view = disputeviews.view(conn, row)
        now = club.state(table)
        record = round_record(conn, stream, row.round, now)
    if record is not None:
        found = disputes.answer(
            now, record, row.throw, row.die1, row.die2, dispute_id, resolved_as(row)
        )
        view["answer"] = answer_view(stream, found, money)
    else:  # pragma: no cover - a dispute is only ever opened on a round that reads back
        view["answer"] = None
    return view


def listing(
    club: Club,
    table: str | None,
    status: str | None,
    after: int,
    limit: int,
    claimant: str | None = None,
) -> dict[str, Any]:
    """A page of disputes, in the order opened: one table's or the club's."""
    stream = require_table(club, table) if table is not None else None
    with club.store.engine.connect() as conn:
        items = disputeviews.listing(conn, stream, status, after, limit + 1, claimant)
    more = len(items) > limit
    items = items[:limit]
    return {
        "items": items,
        "next_after": items[-1]["opened"]["position"] if more and items else None,
    }
