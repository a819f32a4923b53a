"""CSV for a spreadsheet: a scope's rounds, settlements or adjustments, or a player's
statement.

Each sheet is one query over the read models (rounds, settlements, postings), read in
pages of BATCH rows by keyset, so memory stays bounded whatever the size of the club.
`prepare` fixes the sheet's head, the log's last position, in one short read; each page
is then read in a short read of its own (as ledger.exports.jsonl reads the log), so a
client that reads slowly holds nothing in the database between pages, and a write
committed meanwhile is not in the file: every row is of an event up to the head (a
settlement, an adjustment and a posting are written with their event and never change),
and the one kind of row a later event changes, a round still in play at the head, is
taken as `prepare` read it.

What opens cleanly in LibreOffice and Excel: UTF-8 with a byte order mark (Excel reads
UTF-8 only with it), rows ended by CRLF (the csv module's default), a header row, times
as recorded (ISO 8601 UTC) and, in columns added after the others, the same times in the
club's zone to the second (ISO 8601 with its offset), amounts in minor units beside the
same amount as a decimal in the club's minor units (integer arithmetic, never a float).
The club's settings are ledger.house's: a sheet's decimals and zone are the club's
unless its caller asks for other decimals. A text cell that a spreadsheet would take for a
formula (starting with =, +, -, @, a tab or a carriage return; a player may be called
"-ann") is prefixed with a single quote, as OWASP advises for CSV injection; numbers are
written as numbers and never escaped.

The scope, sheet by sheet:

- rounds: a table's (table), the rounds a player cast or had a bet settled or voided in
  (player), every table's (range, all); since/until on when the round started. In
  table then round order.
- settlements: a table's, the ones a player was party to, or all; since/until on when
  the bet was settled or voided. In log position order.
- statement: every posting of a player's account, in log order, with the running
  balance; since/until on when the posting's event was recorded (the running balance
  then starts from the balance before `since`). Only for a player's scope. A dispute's
  adjustments are postings too: a line each, their event BetAdjusted.
- adjustments: what disputes' resolutions moved, a row per bet adjusted (a voided
  round's reversals, a corrected throw's corrections), with its round and dispute: a
  table's, the ones that moved a player's money, or all; since/until on when the
  adjustment was recorded. In log position order. The round and the bet it points
  back to are in the other sheets, as played: nothing there is edited.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from engine import SETTER
from ledger.books.accounts import TABLE_PREFIX, account_stream, player_account
from ledger.exports.scope import NotFound, Scope, ScopeError
from ledger.house import House
from ledger.store import db

SHEETS = ("rounds", "settlements", "statement", "adjustments")
MEDIA_TYPE = "text/csv; charset=utf-8"
BOM = "\ufeff"
BATCH = 5_000
"""Rows read per query."""
CHUNK = 64 * 1024
"""Characters a chunk holds (about)."""
MAX_DECIMALS = 18
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Progress = Callable[[int], None]
"""Called as rows are written with how many more (an increment, as click's progress bar
takes it); the total is `Prepared.total`."""

HEADERS = {
    "rounds": (
        "table",
        "round",
        "caster",
        "main",
        "chance",
        "result",
        "started_at",
        "ended_at",
        "first_position",
        "last_position",
        "started_local",
        "ended_local",
    ),
    "settlements": (
        "position",
        "time",
        "table",
        "round",
        "bet",
        "kind",
        "outcome",
        "winner",
        "reason",
        "amount",
        "amount_decimal",
        "transfers",
        "time_local",
    ),
    "statement": (
        "position",
        "time",
        "stream",
        "event",
        "bet",
        "counterparty",
        "amount",
        "amount_decimal",
        "balance",
        "balance_decimal",
        "time_local",
    ),
    "adjustments": (
        "position",
        "time",
        "table",
        "round",
        "bet",
        "dispute",
        "adjustment",
        "amount",
        "amount_decimal",
        "transfers",
        "time_local",
    ),
}
"""Each sheet's columns. Columns are only ever added at the end, so that a spreadsheet
that reads a column by its place still finds it."""


def escaped(text: str | None) -> str:
    """A text cell a spreadsheet shows as text, never runs as a formula (OWASP)."""
    if text is None:
        return ""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


@dataclass(frozen=True)
class Style:
    """How a sheet writes money and time: the decimal places of its decimal columns
    and the time zone of its local times."""

    decimals: int
    zone: str = "UTC"

    def local(self, at: str | None) -> str:
        """A time as stored (UTC, to the microsecond) in the zone, to the second, with
        its offset: "2026-11-26T22:30:05+01:00"."""
        if not at:
            return ""
        moment = datetime.fromisoformat(at).astimezone(ZoneInfo(self.zone))
        return moment.isoformat(timespec="seconds")


def decimal(minor: int, decimals: int) -> str:
    """`minor` units as a decimal number with `decimals` places: 1234, 2 -> "12.34"."""
    if decimals == 0:
        return str(minor)
    whole, part = divmod(abs(minor), 10**decimals)
    return f"{'-' if minor < 0 else ''}{whole}.{part:0{decimals}d}"


# -- what to read ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Query:
    """One sheet's query: its rows, paged by `keys` (the ORDER BY, unique), and filtered
    by `where` with `params` ("?" placeholders)."""

    select: str
    source: str
    where: tuple[str, ...]
    params: tuple[Any, ...]
    keys: tuple[str, ...]
    position: str
    """The column of the log position a row is of: rows after the head are not the
    sheet's."""
    changing: str = ""
    """Rows that a later event may have changed since the head, as a condition on a
    row as it is now with one `?` for the head: read whatever the filters, and
    replaced by the row as `prepare` read it (or left out if it did not match)."""
    whole: bool = False
    """A page ends only where the first key changes: the last key (a posting's id) is
    renumbered by a rebuild of the read models, so a page cannot resume after one."""
    head: int = 0
    """The last position of the log the rows are of (`at_head`)."""

    def at_head(self, head: int) -> _Query:
        """This query as its rows stood at `head`, for reads made later."""
        bound = f"{self.position} <= ?"
        if not self.changing:
            where, params = (bound, *self.where), (head, *self.params)
        else:
            filters = " AND ".join(self.where) or "1 = 1"
            where = (bound, f"({self.changing} OR ({filters}))")
            params = (head, head, *self.params)
        return dataclasses.replace(self, where=where, params=params, head=head)


def _rounds(scope: Scope) -> _Query:
    where: list[str] = []
    params: list[Any] = []
    if scope.kind == "table":
        where.append("r.stream = ?")
        params.append(TABLE_PREFIX + str(scope.table))
    elif scope.kind == "player":
        where.append(
            "(r.caster = ? OR EXISTS (SELECT 1 FROM settlements s JOIN settlement_parties sp"
            " ON sp.position = s.position WHERE sp.party = ? AND s.stream = r.stream"
            " AND s.round = r.round))"
        )
        params += [scope.player, player_account(str(scope.player))]
    _times(where, params, scope, "r.started_at")
    return _Query(
        "r.stream, r.round, r.caster, r.main, r.chance, r.result, r.started_at, r.ended_at,"
        " r.first_position, r.last_position",
        "rounds r",
        tuple(where),
        tuple(params),
        ("r.stream", "r.round"),
        "r.first_position",
        # A round still in play (no result yet; or one a later event extended) is
        # the one row a later event changes: its caster, main, chance, end.
        "r.result IS NULL OR r.last_position > ?",
    )


def _settlements(scope: Scope) -> _Query:
    where: list[str] = []
    params: list[Any] = []
    source = "settlements s"
    if scope.kind == "table":
        where.append("s.stream = ?")
        params.append(TABLE_PREFIX + str(scope.table))
    elif scope.kind == "player":
        source = "settlement_parties sp JOIN settlements s ON s.position = sp.position"
        where.append("sp.party = ?")
        params.append(player_account(str(scope.player)))
    _times(where, params, scope, "s.recorded_at")
    return _Query(
        "s.position, s.recorded_at, s.stream, s.round, s.bet_id, s.kind, s.outcome, s.winner,"
        " s.reason, s.transfers",
        source,
        tuple(where),
        tuple(params),
        ("s.position",),
        "s.position",
    )


def _statement(scope: Scope) -> _Query:
    where = ["p.account = ?"]
    params: list[Any] = [player_account(str(scope.player))]
    _times(where, params, scope, "e.recorded_at")
    return _Query(
        "p.position, p.id, e.recorded_at, e.stream, e.type, e.payload, p.counterparty, p.amount",
        "postings p JOIN events e ON e.position = p.position",
        tuple(where),
        tuple(params),
        ("p.position", "p.id"),
        "p.position",
        whole=True,
    )


def _adjustments(scope: Scope) -> _Query:
    where: list[str] = []
    params: list[Any] = []
    if scope.kind == "table":
        where.append("a.stream = ?")
        params.append(TABLE_PREFIX + str(scope.table))
    elif scope.kind == "player":
        where.append(
            "EXISTS (SELECT 1 FROM postings p WHERE p.position = a.position AND p.account = ?)"
        )
        params.append(player_account(str(scope.player)))
    _times(where, params, scope, "a.recorded_at")
    return _Query(
        "a.position, a.recorded_at, a.stream, a.round, a.bet_id, a.dispute_id, a.adjustment,"
        " a.transfers",
        "adjustments a",
        tuple(where),
        tuple(params),
        ("a.position",),
        "a.position",
    )


def _times(where: list[str], params: list[Any], scope: Scope, column: str) -> None:
    # recorded_at is written in one ISO form that sorts as text in time order (scope.py).
    if scope.since is not None:
        where.append(f"{column} >= ?")
        params.append(scope.since)
    if scope.until is not None:
        where.append(f"{column} < ?")
        params.append(scope.until)


_QUERIES = {
    "rounds": _rounds,
    "settlements": _settlements,
    "statement": _statement,
    "adjustments": _adjustments,
}


def _pages(
    engine: sa.Engine, q: _Query, as_read: dict[tuple[Any, ...], Any]
) -> Iterator[list[Any]]:
    """The query's rows, BATCH at a time, each page after the last row of the one before
    (the keys are its last columns, then dropped), each read in a short read of its own
    and handed on once it has ended. A range scan per page, never an OFFSET."""
    order = ", ".join(q.keys)
    flag = f"CASE WHEN {q.changing} THEN 1 ELSE 0 END, " if q.changing else ""
    base = f"SELECT {q.select}, {flag}{order} FROM {q.source}"
    after: tuple[Any, ...] | None = None
    n = len(q.keys)
    while True:
        where = list(q.where)
        params = ((q.head,) if q.changing else ()) + q.params
        if after is not None:
            where.append(_after(q.keys[:1] if q.whole else q.keys))
            params = params + _after_params(after[:1] if q.whole else after)
        sql = base + (" WHERE " + " AND ".join(where) if where else "")
        with db.short_read(engine) as conn:
            rows = db.fetch(conn, f"{sql} ORDER BY {order} LIMIT {BATCH}", params)
            full = len(rows) == BATCH
            if full and q.whole:
                rows = _whole(conn, sql, order, params, rows, q.keys[0], n)
        if not rows:
            return
        yield _as_at_head(rows, n, as_read) if q.changing else [row[:-n] for row in rows]
        if not full:
            return
        after = tuple(rows[-1][-n:])


def _as_at_head(rows: list[Any], n: int, as_read: dict[tuple[Any, ...], Any]) -> list[Any]:
    """Each row as it stood at the head: one that may have changed since (flagged in
    the column before the keys) replaced by its row as `prepare` read it, or left out
    if the sheet did not hold it then."""
    out = []
    for row in rows:
        if not row[-n - 1]:
            out.append(row[: -n - 1])
        elif (then := as_read.get(tuple(row[-n:]))) is not None:
            out.append(then[:-n])
    return out


def _whole(
    conn: sa.Connection, sql: str, order: str, params: tuple[Any, ...], rows: list[Any],
    first: str, n: int,
) -> list[Any]:  # fmt: skip
    """A full page cut back to its last whole first key: without the rows of the last
    one, or if they are all of it, with every row of that one."""
    last = rows[-1][-n]
    keep = [row for row in rows if row[-n] != last]
    if keep:
        return keep
    joiner = " AND " if " WHERE " in sql else " WHERE "
    return db.fetch(conn, f"{sql}{joiner}{first} = ? ORDER BY {order}", (*params, last))


def _after(keys: tuple[str, ...]) -> str:
    # (a, b) > (x, y) spelled out: row values work on both databases, but not every
    # planner turns them into an index range.
    if len(keys) == 1:
        return f"{keys[0]} > ?"
    a, b = keys
    return f"({a} > ? OR ({a} = ? AND {b} > ?))"


def _after_params(after: tuple[Any, ...]) -> tuple[Any, ...]:
    return after if len(after) == 1 else (after[0], after[0], after[1])


# -- preparing -------------------------------------------------------------------------------


def prepare(
    engine: sa.Engine,
    scope: Scope,
    sheet: str | None = None,
    decimals: int | None = None,
    house: House | None = None,
) -> Prepared:
    """Check what is asked and fix the sheet's head, the club as it stands now, to
    write it from.

    `sheet` None is the statement for a player's scope, else the settlements. The
    decimal columns have `decimals` places, by default the club's minor units, and the
    local times are in the club's zone (`house`: the club's settings; by default
    ledger.house's defaults, GBP in UTC). Raises
    ScopeError (an unknown sheet, a statement without a player, bad decimals) or
    NotFound (no such table or player) before anything is written."""
    if sheet is None:
        sheet = "statement" if scope.kind == "player" else "settlements"
    if sheet not in SHEETS:
        raise ScopeError("sheet", f"a sheet is one of {', '.join(SHEETS)}, not {sheet!r}")
    if sheet == "statement" and scope.kind != "player":
        raise ScopeError("sheet", "a statement is one player's: export it for a player")
    house = house if house is not None else House()
    decimals = house.minor_units if decimals is None else decimals
    if type(decimals) is not int or not 0 <= decimals <= MAX_DECIMALS:
        raise ScopeError(
            "decimals", f"decimals is a whole number from 0 to {MAX_DECIMALS}, not {decimals!r}"
        )
    query = _QUERIES[sheet](scope)
    with db.short_read(engine) as conn:  # the club at one moment: the sheet's head
        _require(conn, scope)
        head = int(db.fetch(conn, "SELECT COALESCE(MAX(position), 0) FROM events")[0][0])
        total = _count(conn, query)
        opening = _opening(conn, scope) if sheet == "statement" else 0
        as_read = _changing(conn, query, head)
    style = Style(decimals, house.zone)
    return Prepared(engine, scope, sheet, style, query.at_head(head), total, opening, as_read)


def _require(conn: sa.Connection, scope: Scope) -> None:
    if scope.kind == "table":
        stream, what = TABLE_PREFIX + str(scope.table), f"there is no table {scope.table!r}"
    elif scope.kind == "player":
        stream = account_stream(player_account(str(scope.player)))
        what = f"there is no player {scope.player!r}"
    else:
        return
    if not db.fetch(conn, "SELECT 1 FROM events WHERE stream = ? AND version = 1", (stream,)):
        raise NotFound(what)


def _count(conn: sa.Connection, q: _Query) -> int:
    sql = f"SELECT COUNT(*) FROM {q.source}"
    if q.where:
        sql += " WHERE " + " AND ".join(q.where)
    return int(db.fetch(conn, sql, q.params)[0][0])


def _changing(conn: sa.Connection, q: _Query, head: int) -> dict[tuple[Any, ...], Any]:
    """The rows that later events may change (rounds in play), as they are at the head,
    by their keys: those of them the sheet holds."""
    if not q.changing:
        return {}
    n = len(q.keys)
    where = " AND ".join([*q.where, f"({q.changing})"])
    rows = db.fetch(
        conn,
        f"SELECT {q.select}, {', '.join(q.keys)} FROM {q.source} WHERE {where}",
        (*q.params, head),
    )
    return {tuple(row[-n:]): row for row in rows}


def _opening(conn: sa.Connection, scope: Scope) -> int:
    """The player's balance before the statement's first posting: 0 from the start."""
    if scope.since is None:
        return 0
    rows = db.fetch(
        conn,
        "SELECT COALESCE(SUM(p.amount), 0) FROM postings p JOIN events e"
        " ON e.position = p.position WHERE p.account = ? AND e.recorded_at < ?",
        (player_account(str(scope.player)), scope.since),
    )
    return int(rows[0][0])


# -- writing ---------------------------------------------------------------------------------


class Prepared:
    """A sheet checked and ready to write: `chunks()` once, then `close()` (which
    `chunks` also does when it ends, or is closed early because the client went away)."""

    media_type = MEDIA_TYPE

    def __init__(
        self,
        engine: sa.Engine,
        scope: Scope,
        sheet: str,
        style: Style,
        query: _Query,
        total: int,
        opening: int,
        as_read: dict[tuple[Any, ...], Any],
    ) -> None:
        self._engine: sa.Engine | None = engine
        self.scope = scope
        self.sheet = sheet
        self.style = style
        self._query = query
        self._opening = opening
        self._as_read = as_read
        self.total: int | None = total
        """Rows the sheet holds (the header aside), for a progress bar."""
        self.filename = scope.filename("csv").removesuffix(".csv") + f"-{sheet}.csv"

    def close(self) -> None:
        """Nothing more is read: between pages the sheet holds no connection."""
        self._engine = None

    def chunks(self, progress: Progress | None = None) -> Iterator[bytes]:
        """The file, about CHUNK characters at a time, UTF-8 with a byte order mark."""
        engine = self._engine
        if engine is None:
            raise RuntimeError("this export is closed")
        try:
            buffer = io.StringIO()
            buffer.write(BOM)
            out = csv.writer(buffer)  # lineterminator "\r\n", minimal quoting
            out.writerow(HEADERS[self.sheet])
            rows = _ROWS[self.sheet]
            state = {"balance": self._opening}
            for page in _pages(engine, self._query, self._as_read):
                out.writerows(rows(row, self.style, state) for row in page)
                if progress is not None:
                    progress(len(page))
                if buffer.tell() >= CHUNK:
                    yield buffer.getvalue().encode()
                    buffer.seek(0)
                    buffer.truncate()
            yield buffer.getvalue().encode()
        finally:
            self.close()


Row = Callable[[Any, Style, dict[str, int]], list[Any]]


def _round_row(row: Any, style: Style, state: dict[str, int]) -> list[Any]:
    stream, number, caster, main, chance, result, started, ended, first, last = row
    return [
        escaped(_table(stream)),
        number,
        escaped(caster),
        main,
        chance,
        result or "",
        started,
        ended or "",
        first,
        last,
        style.local(started),
        style.local(ended),
    ]


def _settlement_row(row: Any, style: Style, state: dict[str, int]) -> list[Any]:
    position, at, stream, number, bet, kind, outcome, winner, reason, transfers = row
    moved = json.loads(transfers)
    if winner is not None:
        account = SETTER if winner == SETTER else player_account(winner)
        amount = sum(t["amount"] for t in moved if t["target"] == account)
    else:
        amount = sum(t["amount"] for t in moved)  # every stake returned
    return [
        position,
        at,
        escaped(_table(stream)),
        number,
        escaped(bet),
        kind,
        outcome,
        escaped(winner),
        escaped(reason),
        amount,
        decimal(amount, style.decimals),
        escaped("; ".join(f"{t['source']} → {t['target']} {t['amount']}" for t in moved)),
        style.local(at),
    ]


def _statement_row(row: Any, style: Style, state: dict[str, int]) -> list[Any]:
    position, _id, at, stream, kind, payload, counterparty, amount = row
    state["balance"] += amount
    balance = state["balance"]
    bet = json.loads(payload).get("bet_id") if '"bet_id"' in payload else None
    return [
        position,
        at,
        escaped(stream),
        kind,
        escaped(bet),
        escaped(counterparty),
        amount,
        decimal(amount, style.decimals),
        balance,
        decimal(balance, style.decimals),
        style.local(at),
    ]


def _adjustment_row(row: Any, style: Style, state: dict[str, int]) -> list[Any]:
    position, at, stream, number, bet, dispute, adjustment, transfers = row
    moved = json.loads(transfers)
    amount = sum(t["amount"] for t in moved)  # party to party: all of it changes hands
    return [
        position,
        at,
        escaped(_table(stream)),
        number,
        escaped(bet),
        escaped(dispute),
        adjustment,
        amount,
        decimal(amount, style.decimals),
        escaped("; ".join(f"{t['source']} → {t['target']} {t['amount']}" for t in moved)),
        style.local(at),
    ]


def _table(stream: str) -> str:
    return stream.removeprefix(TABLE_PREFIX)


_ROWS: dict[str, Row] = {
    "rounds": _round_row,
    "settlements": _settlement_row,
    "statement": _statement_row,
    "adjustments": _adjustment_row,
}
