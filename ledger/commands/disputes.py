"""The dispute commands: opening a dispute over a round that has ended, with the
service's answer at once, and the setter's resolution. Each is one engine command
(engine.disputes) through `Club.command`, written like every other write: in one
transaction, with its receipt, its postings (a resolution's adjustments) and its read
models (ledger.books.disputeviews). What the club reads of disputes, and the round's
record both judge, is ledger.audit.disputes'.

The caller is given as the values the engine judges a claim by: the actor the events
record, the claimant's role and name (the setter disputes as the bank).
"""

from __future__ import annotations

from typing import Any

import engine as hz
from engine import disputes
from ledger.audit.disputes import (
    DISPUTE_ID,
    answer_view,
    require_table,
    resolved_as,
    round_record,
)
from ledger.books import disputeviews
from ledger.books.accounts import transfer_views
from ledger.commands import Caller, Role
from ledger.service import Club, Reads


def claimant(caller: Caller) -> tuple[str, str]:
    """(claimant, role) as a dispute names the caller who opens it: the setter disputes
    as the bank. The API's and the console's dispute forms both ask this."""
    if caller.role is Role.SETTER:
        return hz.SETTER, Role.SETTER.value
    return caller.name, caller.role.value


def _record_of(reads: Reads, number: int, state: hz.TableState) -> disputes.RoundRecord | None:
    return round_record(reads.conn, reads.stream, number, state)


def open_dispute(
    club: Club,
    table: str,
    actor: str,
    role: str,
    claimant: str,
    number: int,
    claim: str,
    throw: int | None = None,
    dice: tuple[int, int] | None = None,
    key: str | None = None,
    request: dict[str, Any] | None = None,
    if_match: int | None = None,
) -> dict[str, Any]:
    """Open a dispute over round `number`; the answer names the dispute and gives the
    service's answer (ledger.audit.disputes.answer_view)."""
    die1, die2 = dice if dice is not None else (None, None)
    found: dict[str, Any] = {}

    def decide(state: hz.TableState, reads: Reads) -> list[hz.Event]:
        record = _record_of(reads, number, state)
        events = disputes.open_dispute(
            state, record, number, claimant, role, claim, throw, die1, die2
        )
        assert record is not None
        opened = events[0]
        assert isinstance(opened, hz.events.DisputeOpened)
        found["answer"] = answer_view(
            reads.stream, disputes.answer(state, record, opened.throw, die1, die2)
        )
        found["dispute_id"] = opened.dispute_id
        return events

    return club.command(
        table,
        actor,
        decide,
        key=key,
        request=request,
        if_match=if_match,
        respond=lambda: {"dispute_id": found["dispute_id"], "answer": found["answer"]},
    )


def resolve_dispute(
    club: Club,
    table: str,
    actor: str,
    dispute_id: str,
    resolution: str,
    reason: str,
    throw: int | None = None,
    dice: tuple[int, int] | None = None,
    key: str | None = None,
    request: dict[str, Any] | None = None,
    if_match: int | None = None,
) -> dict[str, Any]:
    """The setter's resolution of a dispute: upheld, voided, or corrected."""

    def decide(state: hz.TableState, reads: Reads) -> list[hz.Event]:
        return _resolution(state, reads, dispute_id, resolution, reason, throw, dice)

    return club.command(table, actor, decide, key=key, request=request, if_match=if_match)


def preview_resolution(
    club: Club,
    table: str,
    dispute_id: str,
    resolution: str,
    reason: str,
    throw: int | None = None,
    dice: tuple[int, int] | None = None,
) -> list[dict[str, Any]]:
    """What `resolve_dispute` would post with the same values, decided as it decides
    (on the table as it stands now), and written nowhere: each `BetAdjusted`'s bet, kind
    and transfers, in ledger accounts (none for an upheld dispute). RuleBroken, as the
    command would be refused. What the console shows the setter before they confirm."""
    stream = require_table(club, table)
    with club.store.engine.connect() as conn:
        state = club.state(table, conn)
        events = _resolution(
            state, Reads(club, conn, stream, state), dispute_id, resolution, reason, throw, dice
        )
    return [
        {"bet_id": e.bet_id, "adjustment": e.adjustment, "transfers": transfer_views(stream, e)}
        for e in events
        if isinstance(e, hz.events.BetAdjusted)
    ]


def _resolution(
    state: hz.TableState,
    reads: Reads,
    dispute_id: str,
    resolution: str,
    reason: str,
    throw: int | None,
    dice: tuple[int, int] | None,
) -> list[hz.Event]:
    """The events the setter's resolution makes at the table as it stands in `reads`."""
    die1, die2 = dice if dice is not None else (None, None)
    number = state.disputes.get(dispute_id)
    earlier = None
    if number is None and DISPUTE_ID.fullmatch(dispute_id):
        row = disputeviews.row_of(reads.conn, reads.stream, dispute_id)
        earlier = resolved_as(row) if row is not None else None
    record = _record_of(reads, number, state) if number is not None else None
    return disputes.resolve(
        state, record, dispute_id, resolution, reason, throw, die1, die2, earlier
    )
