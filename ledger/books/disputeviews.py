"""Read models of disputes: a row per dispute and one per adjustment its resolution made.

`record` runs in the append's transaction (from `tableviews.apply`, which a rebuild
runs too), given the table's events with their states. Disputes are rare, so each is
written as it comes rather than batched. The events are the record; these rows only
find them: a table's disputes, one dispute, the adjustments of a round or of a bet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from engine import events as ev
from ledger.books.accounts import TABLE_PREFIX, transfer_views
from ledger.store.schema import adjustments, disputes

DISPUTE_TYPES = frozenset({"DisputeOpened", "DisputeResolved", "BetAdjusted"})
"""The events a dispute writes: they belong to the round disputed, not the one in play."""


def record(
    conn: sa.Connection,
    stream: str,
    steps: Iterable[Any],
    mark_adjusted: Callable[[str, str], None] | None = None,
) -> None:
    """Write the rows the dispute events among `steps` (tableviews.Step) make;
    `mark_adjusted(stream, bet_id)` counts an adjustment on the bet's settlement."""
    for step in steps:
        event, row = step.event, step.row
        if isinstance(event, ev.DisputeOpened):
            conn.execute(
                disputes.insert().values(
                    stream=stream,
                    dispute_id=event.dispute_id,
                    round=event.round,
                    claimant=event.claimant,
                    role=event.role,
                    claim=event.claim,
                    throw=event.throw,
                    die1=event.die1,
                    die2=event.die2,
                    opened_version=row.version,
                    opened_position=row.position,
                    opened_by=row.actor,
                    opened_at=row.recorded_at,
                )
            )
        elif isinstance(event, ev.DisputeResolved):
            conn.execute(
                disputes.update()
                .where(disputes.c.stream == stream, disputes.c.dispute_id == event.dispute_id)
                .values(
                    resolution=event.resolution,
                    reason=event.reason,
                    resolved_throw=event.throw,
                    resolved_die1=event.die1,
                    resolved_die2=event.die2,
                    resolved_version=row.version,
                    resolved_position=row.position,
                    resolved_by=row.actor,
                    resolved_at=row.recorded_at,
                )
            )
        elif isinstance(event, ev.BetAdjusted):
            conn.execute(
                adjustments.insert().values(
                    position=row.position,
                    stream=stream,
                    version=row.version,
                    round=event.round,
                    bet_id=event.bet_id,
                    dispute_id=event.dispute_id,
                    adjustment=event.adjustment,
                    recorded_at=row.recorded_at,
                    transfers=json.dumps(transfer_views(stream, event)),
                )
            )
            if mark_adjusted is not None:
                mark_adjusted(stream, event.bet_id)


def clear(conn: sa.Connection) -> None:
    conn.execute(adjustments.delete())
    conn.execute(disputes.delete())


# -- reading ---------------------------------------------------------------------------


def listing(
    conn: sa.Connection,
    stream: str | None = None,
    status: str | None = None,
    after_position: int = 0,
    limit: int = 50,
    claimant: str | None = None,
) -> list[dict[str, Any]]:
    """Disputes in the order they were opened, after `after_position` (of their
    opening), at most `limit`: of one table (or all), "open" or "resolved" (or both),
    of one claimant (or anyone's)."""
    d = disputes
    query = sa.select(d).where(d.c.opened_position > after_position)
    if stream is not None:
        query = query.where(d.c.stream == stream)
    if claimant is not None:
        query = query.where(d.c.claimant == claimant)
    if status == "open":
        query = query.where(d.c.resolution.is_(None))
    elif status == "resolved":
        query = query.where(d.c.resolution.is_not(None))
    rows = conn.execute(query.order_by(d.c.opened_position).limit(limit)).all()
    return [view(conn, r) for r in rows]


def row_of(conn: sa.Connection, stream: str, dispute_id: str) -> Any:
    d = disputes
    return conn.execute(
        sa.select(d).where(d.c.stream == stream, d.c.dispute_id == dispute_id)
    ).first()


def view(conn: sa.Connection, row: Any) -> dict[str, Any]:
    """A dispute as the API shows it, with the adjustments its resolution made."""
    resolved = None
    if row.resolution is not None:
        resolved = {
            "resolution": row.resolution,
            "reason": row.reason,
            "throw": row.resolved_throw,
            "dice": _dice(row.resolved_die1, row.resolved_die2),
            "version": row.resolved_version,
            "position": row.resolved_position,
            "by": row.resolved_by,
            "at": row.resolved_at,
        }
    return {
        "table": row.stream.removeprefix(TABLE_PREFIX),
        "dispute_id": row.dispute_id,
        "round": row.round,
        "claimant": row.claimant,
        "role": row.role,
        "claim": row.claim,
        "throw": row.throw,
        "dice": _dice(row.die1, row.die2),
        "status": row.resolution or "open",
        "opened": {
            "version": row.opened_version,
            "position": row.opened_position,
            "by": row.opened_by,
            "at": row.opened_at,
        },
        "resolved": resolved,
        "adjustments": adjustments_of(conn, row.stream, dispute_id=row.dispute_id),
    }


def _dice(die1: int | None, die2: int | None) -> list[int] | None:
    return None if die1 is None or die2 is None else [die1, die2]


def adjustments_of(
    conn: sa.Connection,
    stream: str,
    *,
    dispute_id: str | None = None,
    round: int | None = None,
    bet_ids: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """The adjustments made at a table, of one dispute, one round or some bets."""
    a = adjustments
    query = sa.select(a).where(a.c.stream == stream)
    if dispute_id is not None:
        query = query.where(a.c.dispute_id == dispute_id)
    if round is not None:
        query = query.where(a.c.round == round)
    if bet_ids is not None:
        query = query.where(a.c.bet_id.in_(sorted(set(bet_ids))))
    return [
        {
            "bet_id": r.bet_id,
            "dispute_id": r.dispute_id,
            "adjustment": r.adjustment,
            "round": r.round,
            "version": r.version,
            "position": r.position,
            "recorded_at": r.recorded_at,
            "transfers": json.loads(r.transfers),
        }
        for r in conn.execute(query.order_by(a.c.position))
    ]


def of_round(conn: sa.Connection, stream: str, round: int) -> Sequence[Any]:
    """The disputes of round `round` of the table, in the order opened: each one's
    dispute_id, resolution (None while open) and opened_version."""
    d = disputes
    return conn.execute(
        sa.select(d.c.dispute_id, d.c.resolution, d.c.opened_version)
        .where(d.c.stream == stream, d.c.round == round)
        .order_by(d.c.opened_position)
    ).all()


def round_versions(conn: sa.Connection, stream: str, round: int) -> list[int]:
    """The versions of the dispute events about round `round` of the table: each
    dispute's opening and resolution, and every adjustment."""
    d, a = disputes, adjustments
    versions: set[int] = set()
    for r in conn.execute(
        sa.select(d.c.opened_version, d.c.resolved_version).where(
            d.c.stream == stream, d.c.round == round
        )
    ):
        versions.add(r.opened_version)
        if r.resolved_version is not None:
            versions.add(r.resolved_version)
    versions.update(
        conn.execute(sa.select(a.c.version).where(a.c.stream == stream, a.c.round == round))
        .scalars()
        .all()
    )
    return sorted(versions)
