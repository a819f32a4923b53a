"""Game recall, as a regulator asks for it: the last ten rounds of a table, or of a
player, each with its start and end, the balances either side of it, the bets, the
throws and what each party won or lost.

A player's rounds are those they had money in: the rounds of the bets they were party
to (the settlement_parties key, read newest first), so a round still in play shows once
one of their bets in it has closed. A bet belongs to the round it was placed in
(tableviews); what a party won or lost on it is the sum of its postings against the
bet's escrow, from the events that placed it, took it and closed it (the settlement's
sources). The balances are the ledger's, as of the round's first and last events
(ledger.books.asof): between them, a party's deposits and play at other tables count
too, so `before` + `won` need not be `after`; `won` is the round's own.

A disputed round shows its disputes, and what a voiding or a correction moved
(disputeviews: the BetAdjusted events, which come after the round, party to party).
Each bet's `net` is then what it came to after its adjustments (`adjusted` says how
much of that they made), so `won` is net of reversals and corrections; and each
party's `adjusted` balance is the one after the round's last adjustment, the line of
their statement where the round's money last moved.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from engine.money import escrow
from ledger.audit.replay import ESCROW
from ledger.books import asof, auditreads, disputeviews, tableviews
from ledger.books.accounts import TABLE_PREFIX, book_account

ROUNDS = 10
"""How many rounds a recall shows."""
RECALL_BETS = 50
"""How many of a round's bets a recall lists (of a player's recall, the player's): the
last ones, closed latest. Every bet counts in `won`; `bet_count` says how many there
are, and `earlier_bets` where all of them are read (the round's settlements)."""
RECALL_THROWS = 50
"""How many of a round's throws a recall lists: its last ones. A round may run to any
number of throws (a round of 300,000 answered 29.5 MB); last-game-recall rules let a
game of many steps show its last 50, and say where the rest are (the round's replay)."""


def of_table(conn: sa.Connection, stream: str, count: int = ROUNDS) -> list[dict[str, Any]]:
    """The table's last `count` rounds, newest first, every party's money in each."""
    return [_round(conn, row, None) for row in auditreads.last_rounds(conn, stream, count)]


def of_player(conn: sa.Connection, account: str, count: int = ROUNDS) -> list[dict[str, Any]]:
    """The last `count` rounds `account` had a bet in, newest first, their money in each."""
    recalled = []
    for stream, number in auditreads.rounds_of_party(conn, account, count):
        stored = tableviews.round_row(conn, stream, number)
        if stored is not None:
            recalled.append(_round(conn, stored, account))
    return recalled


def _round(conn: sa.Connection, row: Any, account: str | None) -> dict[str, Any]:
    """One round: `account`'s view of it, or every party's when None."""
    bets = [_bet(conn, s) for s in _settlements(conn, row.stream, row.round)]
    adjustments = disputeviews.adjustments_of(conn, row.stream, bet_ids=[b["bet_id"] for b in bets])
    for bet in bets:
        _adjust(bet, [a for a in adjustments if a["bet_id"] == bet["bet_id"]])
    if account is not None:
        bets = [b for b in bets if account in b["net"]]
    won: dict[str, int] = {}
    for bet in bets:
        for party, amount in bet["net"].items():
            won[party] = won.get(party, 0) + amount
    if account is not None:
        won = {account: won.get(account, 0)}
        adjustments = [a for a in adjustments if _moves(a, account)]
    table = row.stream.removeprefix(TABLE_PREFIX)
    earlier = f"/settlements?table={table}&round={row.round}"
    if account is not None:
        earlier += f"&player={account.removeprefix('player:')}"
    last_adjusted = {
        party: max((a["position"] for a in adjustments if _moves(a, party)), default=None)
        for party in won
    }
    return {
        **tableviews.round_view(row),
        "balances": [
            {
                "account": party,
                "before": asof.balance_at(conn, party, row.first_position - 1),
                "after": asof.balance_at(conn, party, row.last_position),
                "adjusted": None if at is None else asof.balance_at(conn, party, at),
            }
            for party in sorted(won)
            for at in [last_adjusted[party]]
        ],
        "won": [{"account": party, "amount": won[party]} for party in sorted(won)],
        "bets": bets[-RECALL_BETS:],
        "bet_count": len(bets),
        "earlier_bets": earlier if len(bets) > RECALL_BETS else None,
        **_throws(conn, row),
        "disputes": _disputes(conn, row.stream, row.round),
        "adjustments": adjustments,
    }


def _adjust(bet: dict[str, Any], adjustments: list[dict[str, Any]]) -> None:
    """Fold a bet's adjustments into its `net`, and say in `adjusted` what they moved."""
    adjusted: dict[str, int] = {}
    for a in adjustments:
        for t in a["transfers"]:
            adjusted[t["source"]] = adjusted.get(t["source"], 0) - t["amount"]
            adjusted[t["target"]] = adjusted.get(t["target"], 0) + t["amount"]
    net = dict(bet["net"])
    for party, amount in adjusted.items():
        net[party] = net.get(party, 0) + amount
    bet["net"] = dict(sorted(net.items()))
    bet["adjusted"] = dict(sorted(adjusted.items()))


def _moves(adjustment: dict[str, Any], account: str) -> bool:
    return any(account in (t["source"], t["target"]) for t in adjustment["transfers"])


def _disputes(conn: sa.Connection, stream: str, number: int) -> list[dict[str, Any]]:
    return [
        {"dispute_id": r.dispute_id, "status": r.resolution or "open", "version": r.opened_version}
        for r in disputeviews.of_round(conn, stream, number)
    ]


def _settlements(conn: sa.Connection, stream: str, number: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = tableviews.settlements(
            conn, stream=stream, round=number, after_position=after, limit=500
        )
        found += page
        if len(page) < 500:
            return found
        after = page[-1]["position"]


def _bet(conn: sa.Connection, settlement: dict[str, Any]) -> dict[str, Any]:
    """A bet of the round, closed, and each party's net on it: what its escrow paid
    them less what they put into it."""
    stream = TABLE_PREFIX + settlement["table"]
    pot = book_account(stream, escrow(settlement["bet_id"]))
    net = {
        account: int(amount)
        for account, amount in conn.execute(auditreads.net_query(pot, settlement["sources"]))
        if not account.startswith(ESCROW)
    }
    return {
        "bet_id": settlement["bet_id"],
        "kind": settlement["kind"],
        "outcome": settlement["outcome"],
        "winner": settlement["winner"],
        "reason": settlement["reason"],
        "position": settlement["position"],
        "recorded_at": settlement["recorded_at"],
        "net": dict(sorted(net.items())),
    }


def _throws(conn: sa.Connection, row: Any) -> dict[str, Any]:
    """The round's last RECALL_THROWS throws in order, how many it had, and where the
    earlier ones are read (None: none was left out)."""
    found, count = auditreads.last_throws(conn, row, RECALL_THROWS)
    throws = []
    for position, version, payload, recorded_at in reversed(found):
        dice = json.loads(payload)
        throws.append(
            {
                "position": position,
                "version": version,
                "die1": dice["die1"],
                "die2": dice["die2"],
                "recorded_at": recorded_at,
            }
        )
    table = row.stream.removeprefix(TABLE_PREFIX)
    return {
        "throws": throws,
        "throw_count": count,
        "earlier_throws": f"/tables/{table}/rounds/{row.round}/replay"
        if count > len(throws)
        else None,
    }
