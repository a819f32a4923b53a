"""A player's statement for a period, as the API and the console ask for it and the API
answers it: the query (one period: an evening, a week, a month, or a range from one day
to another) and the statement (ledger.books.periodstatement's), and `statement_for`,
which both call."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from ledger.books import periods, periodstatement, queries
from ledger.exports import periodpaper
from ledger.house import House
from ledger.web import club

_TEXT = validate.Length(1, 40)


class PeriodQuerySchema(Schema):
    """One period, in the club's time zone (HAZARD_TIMEZONE)."""

    evening = fields.String(
        validate=_TEXT,
        metadata={
            "description": "An evening: its number (as the setter opened it), or the club's "
            "day, YYYY-MM-DD, where no evening is recorded"
        },
    )
    week = fields.String(
        validate=_TEXT, metadata={"description": "An ISO week, Monday to Sunday: YYYY-Www"}
    )
    month = fields.String(validate=_TEXT, metadata={"description": "A month: YYYY-MM"})
    start = fields.String(
        data_key="from",
        validate=_TEXT,
        metadata={"description": "A range's first day, YYYY-MM-DD (with `to`)"},
    )
    end = fields.String(
        data_key="to",
        validate=_TEXT,
        metadata={"description": f"A range's last day, included (at most {periods.LONGEST} days)"},
    )


class PeriodSchema(Schema):
    kind = fields.String(required=True, metadata={"description": "evening, week, month, range"})
    key = fields.String(required=True, metadata={"description": "2026-11-26, 2026-W48, 2026-11"})
    first = fields.Date(required=True, metadata={"description": "Its first day (the club's)"})
    last = fields.Date(required=True, metadata={"description": "Its last day, included"})
    since = fields.String(required=True, metadata={"description": "Its first moment (UTC)"})
    until = fields.String(required=True, metadata={"description": "The moment after it (UTC)"})
    after = fields.Integer(required=True, metadata={"description": "Its events are after this"})
    through = fields.Integer(required=True, metadata={"description": "...up to this position"})


class PeriodDisputeSchema(Schema):
    table = fields.String(required=True)
    dispute_id = fields.String(required=True)
    round = fields.Integer(required=True)
    claimant = fields.String(required=True)
    claim = fields.String(required=True)
    opened_at = fields.String(required=True)
    resolution = fields.String(
        required=True, allow_none=True, metadata={"description": "null: open at the end"}
    )
    reason = fields.String(required=True, allow_none=True)
    resolved_at = fields.String(required=True, allow_none=True)
    moved = fields.Integer(
        required=True, metadata={"description": "What its adjustments moved in the period"}
    )


class ExportQuerySchema(Schema):
    player = fields.String(required=True)
    since = fields.String()
    until = fields.String()


class PeriodStatementSchema(Schema):
    """Amounts in minor units. opening + deposited - withdrawn + winnings - losses +
    adjusted - in_play == closing, and opening + deposited + paid - staked - withdrawn +
    adjusted == closing, exactly."""

    player = fields.String(required=True)
    account = fields.String(required=True)
    period = fields.Nested(PeriodSchema, required=True)
    opening = fields.Integer(required=True, metadata={"description": "Balance at the start"})
    closing = fields.Integer(required=True, metadata={"description": "Balance at the end"})
    deposited = fields.Integer(required=True)
    withdrawn = fields.Integer(required=True)
    net_deposits = fields.Integer(required=True)
    staked = fields.Integer(required=True, metadata={"description": "Put into bets' escrows"})
    paid = fields.Integer(
        required=True, metadata={"description": "Paid out of escrows: bets won, stakes returned"}
    )
    adjusted = fields.Integer(required=True, metadata={"description": "Disputes' adjustments"})
    won = fields.Integer(required=True, metadata={"description": "Bets won (settled in it)"})
    winnings = fields.Integer(required=True, metadata={"description": "Won over the stakes"})
    lost = fields.Integer(required=True, metadata={"description": "Bets lost"})
    losses = fields.Integer(required=True, metadata={"description": "The stakes lost"})
    net_play = fields.Integer(required=True, metadata={"description": "winnings - losses"})
    voided = fields.Integer(required=True, metadata={"description": "Bets voided"})
    returned = fields.Integer(required=True, metadata={"description": "Their stakes returned"})
    in_play = fields.Integer(
        required=True,
        metadata={"description": "Change in stakes in play: staked less the stakes of the "
                  "bets closed in the period"},
    )  # fmt: skip
    disputes = fields.List(fields.Nested(PeriodDisputeSchema), required=True)
    proof = fields.Nested(
        ExportQuerySchema,
        required=True,
        metadata={"description": "GET /export's query for the period: its money for the "
                  "account is the movements (`hazard verify FILE` prints them)"},
    )  # fmt: skip
    history = fields.Nested(
        ExportQuerySchema,
        required=True,
        metadata={"description": "GET /export's query for the history before: it comes to "
                  "the opening balance"},
    )  # fmt: skip


def statement_for(name: str, query: dict[str, Any], house: House) -> periodstatement.Statement:
    """`name`'s statement for the period `query` (PeriodQuerySchema's, loaded) asks;
    periods.PeriodError naming the field if it asks for none or a bad one."""
    with queries.reading(club().store) as read:
        period = periods.asked(
            read.conn,
            house.zone,
            evening=query.get("evening"),
            week=query.get("week"),
            month=query.get("month"),
            start=query.get("start"),
            end=query.get("end"),
        )
        return periodstatement.of(read.conn, name, period)


def view(statement: periodstatement.Statement) -> dict[str, Any]:
    """The statement as PeriodStatementSchema dumps it."""
    s = statement
    return {
        **{k: getattr(s, k) for k in PeriodStatementSchema().fields if hasattr(s, k)},
        "period": s.period,
        "proof": periodpaper.proof(s),
        "history": periodpaper.history(s),
    }
