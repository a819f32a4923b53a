"""A player's statement as a person reads it: newest first, an entry per event with the
account's balance after it, a page at a time, of one table, one evening, or both.

Built from the postings read model (ledger.books.projections: each posting with its
account's running balance) and, for the bets a player lost, the settlements: a bet
lost moves nothing of theirs when it is settled (their stake left their account when
the bet was placed), so it is an entry of its own with nothing moving. Each entry
carries what its words need (ledger.books.wording): the table and round, how the round
ended, the bet's kind and the event that placed it, a dispute's resolution.

Pages are keyset over positions, both ways: entries `before` a position (older) or
`after` one (newer), never by OFFSET, so a page deep in a long history costs what the
first does. Each walk is a range of an index that ends in the position (postings'
(account, position, id), settlement_parties' (party, position)); the rest are probes
by key, a few for each entry shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ledger.books import asof
from ledger.books.accounts import TABLE_PREFIX
from ledger.books.evenings import Evening
from ledger.store.schema import disputes, events, postings, rounds, settlement_parties, settlements

LIMIT = 25
"""Entries a page shows unless asked for another number."""

KINDS = {
    "CasterStaked": "caster",
    "StakeLaid": "laid",
    "StakeCovered": "laid",
    "OddsLaid": "odds",
    "SideBetOffered": "side",
    "SideBetAccepted": "side",
}
"""The events that place a bet or take its other side, and the kind of bet each is of
(engine.state.BetKind's values, as the settlements read model keeps them)."""


@dataclass(frozen=True)
class Bet:
    """What the statement knows of a bet an entry is about."""

    bet_id: str
    kind: str | None
    """caster, laid, odds or side; None if it could not be found."""
    placed: Mapping[str, Any] | None
    """The payload of the event that placed it (a bet's id is "b" and its version)."""
    outcome: str | None = None
    """settled or voided; None while it is open."""
    winner: str | None = None
    reason: str | None = None
    """Why it was voided."""
    round: int | None = None
    """The round it closed in."""


@dataclass(frozen=True)
class Entry:
    """One event of the player's, as the statement shows it."""

    position: int
    recorded_at: str
    stream: str
    type: str
    payload: Mapping[str, Any]
    player: str
    """Whose statement it is, as the tables name them."""
    amount: int
    """What it moved into (+) or out of (-) the account, net: 0 for a bet lost."""
    balance: int
    """The account's balance just after it."""
    table: str | None = None
    round: int | None = None
    result: str | None = None
    """How the round ended (engine.state.RoundResult's value), once it has."""
    bet: Bet | None = None
    dispute: Mapping[str, Any] | None = None
    """A dispute's adjustment: the resolution and, for a correction, the dice."""


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    """Newest first."""
    older: int | None
    """`before` for the page of older entries; None when there are none."""
    newer: int | None
    """`after` for the page of newer entries; None when this page is the newest."""


@dataclass(frozen=True)
class Filter:
    """Which of the player's entries: of one table's stream, of one evening, or all."""

    stream: str | None = None
    evening: Evening | None = None


def page(
    conn: sa.Connection,
    account: str,
    name: str,
    shown: Filter = Filter(),
    *,
    before: int | None = None,
    after: int | None = None,
    limit: int = LIMIT,
) -> Page:
    """A page of `account`'s statement (the player `name`, as the tables name them):
    the newest `limit` entries, or those just `before` a position, or just `after` one,
    of what `shown` keeps."""
    walk = _Walk(conn, account, name, shown)
    if after is not None:
        found = walk.positions(after=after, n=limit + 1)  # oldest first
        positions = found[:limit][::-1]
        newer = len(found) > limit
        older = bool(walk.positions(before=after + 1))  # any at or before `after`
    else:
        found = walk.positions(before=before, n=limit + 1)  # newest first
        positions = found[:limit]
        older = len(found) > limit
        newer = before is not None and bool(walk.positions(after=before - 1))
    # The links go on from the entries shown, or, on a page with none, from its cursor.
    oldest = positions[-1] if positions else (after + 1 if after is not None else None)
    newest = positions[0] if positions else (before - 1 if before is not None else None)
    return Page(
        _entries(conn, account, name, positions),
        older=oldest if older else None,
        newer=newest if newer else None,
    )


def entry(conn: sa.Connection, account: str, name: str, position: int) -> Entry | None:
    """The statement's entry for the event at `position`, or None if it is not one (an
    event that moved none of the account's money, nor settled a bet the player lost)."""
    walk = _Walk(conn, account, name, Filter())
    if position not in walk.positions(after=position - 1, n=1):
        return None
    return _entries(conn, account, name, [position])[0]


class _Walk:
    """The positions of the player's entries, walked along the indexes by keyset."""

    def __init__(self, conn: sa.Connection, account: str, name: str, shown: Filter) -> None:
        self.conn, self.account, self.name = conn, account, name
        self.stream = shown.stream
        low, high = 0, None
        if shown.evening is not None:
            low, high = shown.evening.after, shown.evening.through
        if shown.stream is not None:  # a table's entries lie within its own events
            first, last = _span(conn, shown.stream)
            low, high = max(low, first - 1), last if high is None else min(high, last)
        self.low, self.high = low, high

    def positions(
        self, *, before: int | None = None, after: int | None = None, n: int = 1
    ) -> list[int]:
        """Up to `n` positions of entries, newest first `before` a position (or from
        the newest), or oldest first `after` one."""
        low = self.low if after is None else max(self.low, after)
        high = self.high if before is None else (
            before - 1 if self.high is None else min(self.high, before - 1)
        )  # fmt: skip
        if high is not None and high <= low:
            return []
        newest_first = after is None
        posted = self._posted(low, high, n, newest_first)
        lost = self._lost(low, high, n, newest_first)
        return sorted(set(posted) | set(lost), reverse=newest_first)[:n]

    def _posted(self, low: int, high: int | None, n: int, newest_first: bool) -> list[int]:
        """Up to `n` positions that posted to the account, read in batches along its
        (account, position, id) index: an event may post to one account more than once."""
        p, e = postings.c, events.c
        found: list[int] = []
        while len(found) < n:
            query = sa.select(p.position).where(p.account == self.account, p.position > low)
            if high is not None:
                query = query.where(p.position <= high)
            if self.stream is not None:
                query = query.join(events, e.position == p.position).where(e.stream == self.stream)
            order = (p.position.desc(), p.id.desc()) if newest_first else (p.position, p.id)
            batch = list(self.conn.execute(query.order_by(*order).limit(n)).scalars())
            for position in batch:
                if not found or found[-1] != position:
                    found.append(position)
            if len(batch) < n:
                break
            # Past the batch's last position (any of its postings the batch cut are of
            # an entry already found).
            if newest_first:
                high = batch[-1] - 1
            else:
                low = batch[-1]
        return found[:n]

    def _lost(self, low: int, high: int | None, n: int, newest_first: bool) -> list[int]:
        """Up to `n` positions of bets the player lost, along settlement_parties' key."""
        sp, s = settlement_parties.c, settlements.c
        query = (
            sa.select(sp.position)
            .join(settlements, s.position == sp.position)
            .where(
                sp.party == self.account,
                sp.position > low,
                s.outcome == "settled",
                s.winner != self.name,
            )
        )
        if high is not None:
            query = query.where(sp.position <= high)
        if self.stream is not None:
            query = query.where(s.stream == self.stream)
        order = sp.position.desc() if newest_first else sp.position
        return list(self.conn.execute(query.order_by(order).limit(n)).scalars())


def _span(conn: sa.Connection, stream: str) -> tuple[int, int]:
    """The positions of a stream's first and last events ((1, 0): it has none), by its
    (stream, version) key."""
    e = events.c
    first = conn.execute(sa.select(e.position).where(e.stream == stream, e.version == 1)).scalar()
    last = conn.execute(
        sa.select(e.position).where(e.stream == stream).order_by(e.version.desc()).limit(1)
    ).scalar()
    return (1, 0) if first is None or last is None else (int(first), int(last))


# -- what each entry says --------------------------------------------------------------


def _entries(conn: sa.Connection, account: str, name: str, positions: Sequence[int]) -> list[Entry]:
    if not positions:
        return []
    e, p = events.c, postings.c
    rows = {
        r.position: r
        for r in conn.execute(
            sa.select(e.position, e.stream, e.type, e.payload, e.recorded_at).where(
                e.position.in_(positions)
            )
        )
    }
    moved: dict[int, int] = {}
    last: dict[int, tuple[int, int]] = {}  # position -> (posting id, balance after it)
    for r in conn.execute(
        sa.select(p.position, p.id, p.amount, p.balance).where(
            p.account == account, p.position.in_(positions)
        )
    ):
        moved[r.position] = moved.get(r.position, 0) + r.amount
        if r.position not in last or r.id > last[r.position][0]:
            last[r.position] = (r.id, r.balance)
    payloads = {at: json.loads(row.payload) for at, row in rows.items()}
    context = _Context(conn, [(rows[at].stream, payloads[at]) for at in positions])
    found = []
    for at in positions:
        row, payload = rows[at], payloads[at]
        if not row.stream.startswith(TABLE_PREFIX):  # a deposit, a withdrawal
            found.append(
                Entry(at, row.recorded_at, row.stream, row.type, payload, name,
                      moved.get(at, 0), last[at][1])
            )  # fmt: skip
            continue
        bet_id = payload.get("bet_id")
        bet = context.bet(row.stream, bet_id) if isinstance(bet_id, str) else None
        number = _round_of(conn, row.stream, at, row.type, payload, bet)
        found.append(
            Entry(
                position=at,
                recorded_at=row.recorded_at,
                stream=row.stream,
                type=row.type,
                payload=payload,
                player=name,
                amount=moved.get(at, 0),
                # A bet lost posts nothing: the balance is the one its last posting left.
                balance=last[at][1] if at in last else asof.balance_at(conn, account, at),
                table=row.stream.removeprefix(TABLE_PREFIX),
                round=number,
                result=context.result(row.stream, number) if number is not None else None,
                bet=bet,
                dispute=context.dispute(row.stream, payload.get("dispute_id"))
                if row.type == "BetAdjusted"
                else None,
            )
        )
    return found


class _Context:
    """The bets and disputes a page's entries name, each read once by key, and the
    rounds' results as they are asked for."""

    def __init__(self, conn: sa.Connection, shown: Iterable[tuple[str, Mapping[str, Any]]]):
        self.conn = conn
        self._closed: dict[tuple[str, str], Any] = {}
        self._placed: dict[tuple[str, int], tuple[str, dict[str, Any]]] = {}
        self._results: dict[tuple[str, int], str | None] = {}
        self._disputes: dict[tuple[str, str], Mapping[str, Any]] = {}
        bets: dict[str, set[str]] = {}
        disputed: dict[str, set[str]] = {}
        for stream, payload in shown:
            if not stream.startswith(TABLE_PREFIX):
                continue
            if isinstance(payload.get("bet_id"), str):
                bets.setdefault(stream, set()).add(payload["bet_id"])
            if isinstance(payload.get("dispute_id"), str):
                disputed.setdefault(stream, set()).add(payload["dispute_id"])
        s, e, d = settlements.c, events.c, disputes.c
        for stream, bet_ids in bets.items():
            for r in conn.execute(
                sa.select(s.bet_id, s.round, s.kind, s.outcome, s.winner, s.reason).where(
                    s.bet_id.in_(sorted(bet_ids)), s.stream == stream
                )
            ):
                self._closed[(stream, r.bet_id)] = r
            versions = sorted({v for v in map(_placed_at, bet_ids) if v is not None})
            for placing in conn.execute(
                sa.select(e.version, e.type, e.payload).where(
                    e.stream == stream, e.version.in_(versions)
                )
            ):
                self._placed[(stream, placing.version)] = (
                    placing.type,
                    json.loads(placing.payload),
                )
        for stream, ids in disputed.items():
            for row in conn.execute(
                sa.select(d.dispute_id, d.resolution, d.resolved_die1, d.resolved_die2).where(
                    d.stream == stream, d.dispute_id.in_(sorted(ids))
                )
            ):
                dice = None if row.resolved_die1 is None else (row.resolved_die1, row.resolved_die2)
                self._disputes[(stream, row.dispute_id)] = {
                    "resolution": row.resolution,
                    "dice": dice,
                }

    def bet(self, stream: str, bet_id: str) -> Bet:
        """The bet `bet_id`: its kind and placing event, and how it closed, if it has."""
        version = _placed_at(bet_id)
        kind_of, placed = self._placed.get((stream, version or 0), ("", None))
        closed = self._closed.get((stream, bet_id))
        if closed is None:
            return Bet(bet_id, KINDS.get(kind_of), placed)
        return Bet(
            bet_id, closed.kind, placed, closed.outcome, closed.winner, closed.reason, closed.round
        )

    def result(self, stream: str, number: int) -> str | None:
        """How round `number` of the table ended (None while it is in play)."""
        if (stream, number) not in self._results:
            r = rounds.c
            self._results[(stream, number)] = self.conn.execute(
                sa.select(r.result).where(r.stream == stream, r.round == number)
            ).scalar()
        return self._results[(stream, number)]

    def dispute(self, stream: str, dispute_id: Any) -> Mapping[str, Any] | None:
        return self._disputes.get((stream, str(dispute_id)))


def _placed_at(bet_id: str) -> int | None:
    """The version of the event that placed a bet: its id is "b" and that version."""
    digits = bet_id.removeprefix("b")
    return int(digits) if bet_id.startswith("b") and digits.isdigit() else None


def _round_of(
    conn: sa.Connection,
    stream: str,
    position: int,
    kind: str,
    payload: Mapping[str, Any],
    bet: Bet | None,
) -> int | None:
    """The round a table's entry is of. A settlement's: the round its event closed the
    bet in. A dispute's adjustment's: the round disputed. A bet placed: the round in
    play then, the newest of the table's rounds begun by its position, walked back
    along the rounds' key from the round the bet closed in (a bet outlives its round
    only when a round ends with no throw) or, while it is open, from the newest: a
    probe or two."""
    if kind in ("BetSettled", "BetVoided") and bet is not None and bet.round is not None:
        return bet.round
    if kind == "BetAdjusted" and isinstance(payload.get("round"), int):
        return int(payload["round"])
    r = rounds.c
    query = sa.select(r.round).where(r.stream == stream, r.first_position <= position)
    if bet is not None and bet.round is not None:
        query = query.where(r.round <= bet.round)
    found = conn.execute(query.order_by(r.round.desc()).limit(1)).scalar()
    return None if found is None else int(found)
