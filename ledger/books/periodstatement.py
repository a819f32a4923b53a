"""A player's statement for a period (ledger.books.periods): the balance at its start
and at its end, what moved between, the bets won and lost, and the disputes.

Two readings of the same money, each exact, each held to the other:

- **Movements**, from the account's postings in the period, by what was on the other
  side: deposited from cash, withdrawn to it, staked into a bet's escrow, paid out of
  one (a bet won, or a stake returned), and moved party to party by a dispute's
  adjustment. These are the export's figures (the closing's money, verdict.FIGURES),
  and `opening + movements == closing`, the balances being the running balances the
  postings keep (ledger.books.asof).
- **Wins and losses**, from the bets settled in the period (the settlements read
  model): a bet won gained its payout less the player's own stake, a bet lost cost the
  stake; a bet voided gave the stake back. Stakes put on bets still open at the end, or
  taken back from bets placed before the start, are the change in stakes in play; so
  `opening + net deposits + won - lost + adjusted - change in play == closing` too.

`check` says where either fails (`hazard statement` exits 1 on it); every read model
it reads is one `hazard verify --deep` recomputes from the events. The bet whose stake
was placed before the period is found by its settlement's `sources` (the positions that
put stakes into it), a probe of the postings' (account, position) key each; the
period's postings are one range of that key, read twice: summed by the database, and
the escrows' read for the bets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ledger.books import asof
from ledger.books.accounts import CASH, TABLE_PREFIX, player_account
from ledger.books.periods import Period
from ledger.store.schema import adjustments, disputes, postings, settlement_parties, settlements

ESCROW = "escrow:"
"""How a bet's escrow account begins, as the ledger names it (accounts.book_account)."""
_CHUNK = 500
"""Positions asked for in one IN list."""


@dataclass(frozen=True)
class Dispute:
    """A dispute the player raised, or whose resolution moved their money, in the period."""

    table: str
    dispute_id: str
    round: int
    claimant: str
    claim: str
    opened_at: str
    resolution: str | None
    """upheld, voided, corrected...; None while it is open."""
    reason: str | None
    resolved_at: str | None
    moved: int
    """What its adjustments moved into (+) or out of (-) the account in the period."""


@dataclass(frozen=True)
class Statement:
    player: str
    account: str
    period: Period
    opening: int
    """The balance at the period's start (after the event at `period.after`)."""
    closing: int
    """The balance at its end (after the event at `period.through`)."""
    deposited: int = 0
    withdrawn: int = 0
    staked: int = 0
    """Put into bets' escrows."""
    paid: int = 0
    """Paid out of bets' escrows: bets won (stake and winnings) and stakes returned."""
    adjusted: int = 0
    """Moved party to party by disputes' adjustments, in less out."""
    won: int = 0
    """Bets won (settled in the period)."""
    winnings: int = 0
    """What the bets won gained, over the player's own stakes in them."""
    lost: int = 0
    losses: int = 0
    """The player's stakes in the bets lost."""
    voided: int = 0
    returned: int = 0
    """The stakes voided bets gave back."""
    in_play: int = 0
    """The change in stakes in play: staked in the period less the stakes of the bets
    closed in it (positive: more on the table at the end than at the start)."""
    disputes: list[Dispute] = field(default_factory=list)

    @property
    def net_deposits(self) -> int:
        return self.deposited - self.withdrawn

    @property
    def net_play(self) -> int:
        """Won less lost: what the player's bets settled in the period came to."""
        return self.winnings - self.losses

    @property
    def movements(self) -> int:
        """Everything that moved the balance in the period, as the export counts it."""
        return self.deposited + self.paid - self.staked - self.withdrawn + self.adjusted

    def check(self) -> list[str]:
        """Where the statement's figures disagree with each other; empty when exact."""
        found = []
        if self.opening + self.movements != self.closing:
            found.append(
                f"{self.player}'s {self.period.key}: the balance at the start ({self.opening}) "
                f"and the movements ({self.movements}) come to "
                f"{self.opening + self.movements}, not the balance at the end ({self.closing})"
            )
        reckoned = self.net_deposits + self.net_play + self.adjusted - self.in_play
        if self.opening + reckoned != self.closing:
            found.append(
                f"{self.player}'s {self.period.key}: net deposits, wins and losses, "
                f"adjustments and stakes in play come to {reckoned}, "
                f"not the change in balance ({self.closing - self.opening})"
            )
        return found


def of(conn: sa.Connection, name: str, period: Period) -> Statement:
    """`name`'s statement for `period`, as one connection reads the books. Every read is
    bounded by the period's positions, whose read-model rows were committed with their
    events before the period was found and never change (a dispute's row does when it is
    resolved: one resolved after the period reads as open), so a write meanwhile, on any
    isolation level, changes nothing the statement adds up."""
    account = player_account(name)
    low, high = period.after, period.through
    figures = _movements(conn, account, low, high) if high > low else {}
    bets = _bets(conn, account, name, low, high) if high > low else {}
    closed_stakes = bets.pop("closed_stakes", 0)
    return Statement(
        player=name,
        account=account,
        period=period,
        opening=asof.balance_at(conn, account, low),
        closing=asof.balance_at(conn, account, max(low, high)),
        **figures,
        **bets,
        in_play=figures.get("staked", 0) - closed_stakes,
        disputes=_disputes(conn, account, name, low, high) if high > low else [],
    )


def _movements(conn: sa.Connection, account: str, low: int, high: int) -> dict[str, int]:
    """The period's postings summed by what was on their other side: one range of the
    (account, position, id) key, summed by the database."""
    p = postings.c
    kind = sa.case(
        (p.counterparty == CASH, sa.case((p.amount > 0, "deposited"), else_="withdrawn")),
        (p.counterparty.startswith(ESCROW), sa.case((p.amount < 0, "staked"), else_="paid")),
        else_="adjusted",
    )
    rows = conn.execute(
        sa.select(kind.label("kind"), sa.func.sum(p.amount))
        .where(p.account == account, p.position > low, p.position <= high)
        .group_by(kind)
    ).all()
    found = {str(k): int(total) for k, total in rows}
    for outward in ("withdrawn", "staked"):  # said as the amounts that went out
        if outward in found:
            found[outward] = -found[outward]
    return found


def _bets(conn: sa.Connection, account: str, name: str, low: int, high: int) -> dict[str, int]:
    """The bets closed in the period that the player was party to: how many were won,
    lost and voided, what they came to, and the player's stakes in them all."""
    sp, s = settlement_parties.c, settlements.c
    closed = conn.execute(
        sa.select(s.position, s.stream, s.bet_id, s.outcome, s.winner, s.sources)
        .join(settlement_parties, sp.position == s.position)
        .where(sp.party == account, sp.position > low, sp.position <= high)
        .order_by(sp.position)
    ).all()
    sources = [json.loads(r.sources) for r in closed]
    # The stakes placed before the period, probed by position; the rest, and every
    # payout, are in the period's own range of the account's postings.
    before = sorted({at for placed in sources for at in placed if at <= low})
    moved = _escrow_postings(conn, account, before, low, high)
    totals = {"won": 0, "winnings": 0, "lost": 0, "losses": 0, "voided": 0, "returned": 0}
    closed_stakes = 0
    for r, placed in zip(closed, sources, strict=True):
        escrow = f"{ESCROW}{r.stream.removeprefix(TABLE_PREFIX)}:{r.bet_id}"
        stake = -sum(
            amount for at in placed for amount in moved.get((at, escrow), ()) if amount < 0
        )
        received = sum(a for a in moved.get((r.position, escrow), ()) if a > 0)
        closed_stakes += stake
        if r.outcome == "voided":
            totals["voided"] += 1
            totals["returned"] += received
        elif r.winner == name:
            totals["won"] += 1
            totals["winnings"] += received - stake
        else:
            totals["lost"] += 1
            totals["losses"] += stake
    return {**totals, "closed_stakes": closed_stakes}


def _escrow_postings(
    conn: sa.Connection, account: str, before: Sequence[int], low: int, high: int
) -> dict[tuple[int, str], list[int]]:
    """The account's postings to and from escrows in the period (`low` to `high`, one
    range of its (account, position) key) and at the positions `before` it (a probe
    each, a few hundred to a query), by (position, escrow)."""
    p = postings.c
    escrows = sa.select(p.position, p.counterparty, p.amount).where(
        p.account == account, p.counterparty.startswith(ESCROW)
    )
    queries = [escrows.where(p.position > low, p.position <= high)]
    queries += [
        escrows.where(p.position.in_(before[i : i + _CHUNK])) for i in range(0, len(before), _CHUNK)
    ]
    found: dict[tuple[int, str], list[int]] = {}
    for query in queries:
        for position, counterparty, amount in conn.execute(query):
            found.setdefault((position, counterparty), []).append(int(amount))
    return found


def _disputes(conn: sa.Connection, account: str, name: str, low: int, high: int) -> list[Dispute]:
    """The disputes the player raised in the period, resolved in it, or whose adjustments
    moved their money in it: the player's own along the claimant's key, the others by
    the adjustments posted to the account."""
    p, a, d = postings.c, adjustments.c, disputes.c
    moved: dict[tuple[str, str], int] = {}
    for r in conn.execute(
        sa.select(a.stream, a.dispute_id, p.amount)
        .join(adjustments, a.position == p.position)
        .where(
            p.account == account,
            p.position > low,
            p.position <= high,
            p.counterparty != CASH,
            sa.not_(p.counterparty.startswith(ESCROW)),
        )
    ):
        key = (r.stream, r.dispute_id)
        moved[key] = moved.get(key, 0) + int(r.amount)
    keys = set(moved)
    for row in conn.execute(
        sa.select(d.stream, d.dispute_id, d.opened_position, d.resolved_position).where(
            d.claimant == name, d.opened_position <= high
        )
    ):
        if low < row.opened_position or (
            row.resolved_position is not None and low < row.resolved_position <= high
        ):
            keys.add((row.stream, row.dispute_id))
    return sorted(_dispute_rows(conn, keys, moved, high), key=lambda x: (x.opened_at, x.table))


def _dispute_rows(
    conn: sa.Connection,
    keys: Iterable[tuple[str, str]],
    moved: dict[tuple[str, str], int],
    high: int,
) -> Iterable[Dispute]:
    """Each dispute as it stood at the period's end: one resolved after it was open then."""
    d = disputes.c
    for stream, dispute_id in keys:
        r: Any = conn.execute(
            sa.select(disputes).where(d.stream == stream, d.dispute_id == dispute_id)
        ).first()
        if r is None:
            continue
        settled = r.resolved_position is not None and r.resolved_position <= high
        yield Dispute(
            table=stream.removeprefix(TABLE_PREFIX),
            dispute_id=dispute_id,
            round=r.round,
            claimant=r.claimant,
            claim=r.claim,
            opened_at=r.opened_at,
            resolution=r.resolution if settled else None,
            reason=r.reason if settled else None,
            resolved_at=r.resolved_at if settled else None,
            moved=moved.get((stream, dispute_id), 0),
        )
