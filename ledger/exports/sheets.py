"""CSV for a spreadsheet: a scope's rounds, settlements or adjustments, or a player's
statement.

Each sheet is one query over the read models (rounds, settlements, postings), read in
pages of BATCH rows by keyset in one snapshot transaction (as ledger.exports.jsonl and
ledger.store.logcheck read the log), so memory stays bounded whatever the size of the
club and a write committed meanwhile is not in the file.

What opens cleanly in LibreOffice and Excel: UTF-8 with a byte order mark (Excel reads
UTF-8 only with it), rows ended by CRLF (the csv module's default), a header row, times
as recorded (ISO 8601 UTC), amounts in minor units beside the same amount as a decimal
(integer arithmetic, never a float). A text cell that a spreadsheet would take for a
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
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from engine import SETTER
from ledger.books.accounts import TABLE_PREFIX, account_stream, player_account
from ledger.exports.scope import NotFound, Scope, ScopeError
from ledger.store import db, logcheck

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
    ),
}


def escaped(text: str | None) -> str:
    """A text cell a spreadsheet shows as text, never runs as a formula (OWASP)."""
    if text is None:
        return ""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


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


def _pages(conn: sa.Connection, q: _Query) -> Iterator[list[Any]]:
    """The query's rows, BATCH at a time, each page after the last row of the one before:
    the keys are its last columns, then dropped. A range scan per page, never an OFFSET."""
    order = ", ".join(q.keys)
    base = f"SELECT {q.select}, {order} FROM {q.source}"
    after: tuple[Any, ...] | None = None
    n = len(q.keys)
    while True:
        where = list(q.where)
        params = q.params
        if after is not None:
            where.append(_after(q.keys))
            params = params + _after_params(after)
        sql = base + (" WHERE " + " AND ".join(where) if where else "")
        rows = db.fetch(conn, f"{sql} ORDER BY {order} LIMIT {BATCH}", params)
        if not rows:
            return
        yield [row[:-n] for row in rows]
        if len(rows) < BATCH:
            return
        after = tuple(rows[-1][-n:])


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
    engine: sa.Engine, scope: Scope, sheet: str | None = None, decimals: int = 2
) -> Prepared:
    """Check what is asked and open a snapshot of the store to write it from.

    `sheet` None is the statement for a player's scope, else the settlements. Raises
    ScopeError (an unknown sheet, a statement without a player, bad decimals) or
    NotFound (no such table or player) before anything is written."""
    if sheet is None:
        sheet = "statement" if scope.kind == "player" else "settlements"
    if sheet not in SHEETS:
        raise ScopeError("sheet", f"a sheet is one of {', '.join(SHEETS)}, not {sheet!r}")
    if sheet == "statement" and scope.kind != "player":
        raise ScopeError("sheet", "a statement is one player's: export it for a player")
    if type(decimals) is not int or not 0 <= decimals <= MAX_DECIMALS:
        raise ScopeError(
            "decimals", f"decimals is a whole number from 0 to {MAX_DECIMALS}, not {decimals!r}"
        )
    conn = engine.connect()
    try:
        conn.begin()
        logcheck.snapshot(conn)
        _require(conn, scope)
        query = _QUERIES[sheet](scope)
        total = _count(conn, query)
        opening = _opening(conn, scope) if sheet == "statement" else 0
    except BaseException:
        conn.close()
        raise
    return Prepared(conn, scope, sheet, decimals, query, total, opening)


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
        conn: sa.Connection,
        scope: Scope,
        sheet: str,
        decimals: int,
        query: _Query,
        total: int,
        opening: int,
    ) -> None:
        self._conn: sa.Connection | None = conn
        self.scope = scope
        self.sheet = sheet
        self.decimals = decimals
        self._query = query
        self._opening = opening
        self.total: int | None = total
        """Rows the sheet holds (the header aside), for a progress bar."""
        self.filename = scope.filename("csv").removesuffix(".csv") + f"-{sheet}.csv"

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # ends the read transaction (a rollback: nothing was written)

    def chunks(self, progress: Progress | None = None) -> Iterator[bytes]:
        """The file, about CHUNK characters at a time, UTF-8 with a byte order mark."""
        conn = self._conn
        if conn is None:
            raise RuntimeError("this export is closed")
        try:
            buffer = io.StringIO()
            buffer.write(BOM)
            out = csv.writer(buffer)  # lineterminator "\r\n", minimal quoting
            out.writerow(HEADERS[self.sheet])
            rows = _ROWS[self.sheet]
            state = {"balance": self._opening}
            for page in _pages(conn, self._query):
                out.writerows(rows(row, self.decimals, state) for row in page)
                if progress is not None:
                    progress(len(page))
                if buffer.tell() >= CHUNK:
                    yield buffer.getvalue().encode()
                    buffer.seek(0)
                    buffer.truncate()
            yield buffer.getvalue().encode()
        finally:
            self.close()


Row = Callable[[Any, int, dict[str, int]], list[Any]]


def _round_row(row: Any, decimals: int, state: dict[str, int]) -> list[Any]:
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
    ]


def _settlement_row(row: Any, decimals: int, state: dict[str, int]) -> list[Any]:
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
        decimal(amount, decimals),
        escaped("; ".join(f"{t['source']} → {t['target']} {t['amount']}" for t in moved)),
    ]


def _statement_row(row: Any, decimals: int, state: dict[str, int]) -> list[Any]:
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
        decimal(amount, decimals),
        balance,
        decimal(balance, decimals),
    ]


def _adjustment_row(row: Any, decimals: int, state: dict[str, int]) -> list[Any]:
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
        decimal(amount, decimals),
        escaped("; ".join(f"{t['source']} → {t['target']} {t['amount']}" for t in moved)),
    ]


def _table(stream: str) -> str:
    return stream.removeprefix(TABLE_PREFIX)


_ROWS: dict[str, Row] = {
    "rounds": _round_row,
    "settlements": _settlement_row,
    "statement": _statement_row,
    "adjustments": _adjustment_row,
}
