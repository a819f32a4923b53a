"""Schemas of replays, recalls and `as_of`: what GET …/replay, GET …/recall and the
`as_of` of a table's state and a player's balance take and answer."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields

from ledger.web.numbers import DIGITS
from ledger.web.readschemas import BIG, PageQuerySchema, RoundSchema, SettlementSchema, StoredTime
from ledger.web.schemas import (
    BalanceSchema,
    OpenBetsQuerySchema,
    TableStateSchema,
    payload,
    transfers,
)


class AsOf(fields.Field[tuple[str, Any]]):
    """A position of the log (digits) or an ISO 8601 time with a zone; loaded as
    ("position", n) or ("time", the time as the store writes it)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, str) and DIGITS.fullmatch(value):
            # Counted before int(), which refuses more than 4,300 digits (a 500 it was).
            if len(value.lstrip("-")) > len(str(BIG)) or not 0 <= int(value) <= BIG:
                raise ValidationError("A position is 0 or more, within 64 bits.")
            return ("position", int(value))
        try:
            return ("time", StoredTime()._deserialize(value, attr, data, **kwargs))
        except ValidationError:
            raise ValidationError(
                "A position (a whole number) or an ISO 8601 time with a zone, such as "
                "2026-11-23T14:02:11Z."
            ) from None


def as_of() -> AsOf:
    return AsOf(
        metadata={
            "description": "As of this position of the log (after the event at it), or this "
            "ISO 8601 time (after the last event recorded at or before it): computed from "
            "the snapshot before it and the events up to it",
            "type": "string",
        }
    )


class AsOfQuerySchema(Schema):
    as_of = as_of()


class TableStateQuerySchema(OpenBetsQuerySchema):
    as_of = as_of()


class MomentSchema(Schema):
    """Where an `as_of` answer stands in the log."""

    position = fields.Integer(
        required=True, metadata={"description": "The last position the answer includes"}
    )
    asked = fields.String(required=True, metadata={"description": "The `as_of` asked, as read"})


class TableStateAtSchema(TableStateSchema):
    as_of = fields.Nested(MomentSchema, metadata={"description": "Given with `as_of` only"})


class BalanceAtSchema(BalanceSchema):
    as_of = fields.Nested(MomentSchema, metadata={"description": "Given with `as_of` only"})


# -- replays -------------------------------------------------------------------------


class PartyBalanceSchema(Schema):
    account = fields.String(required=True)
    before = fields.Integer(required=True)
    after = fields.Integer(required=True)


class StepSchema(Schema):
    """One event of the replay and what it did."""

    position = fields.Integer(required=True)
    version = fields.Integer(required=True)
    type = fields.String(required=True)
    payload = payload()
    actor = fields.String(required=True)
    recorded_at = fields.String(required=True)
    state = fields.Nested(
        TableStateSchema,
        required=True,
        metadata={
            "description": "The table after the event, with the open bets the event named "
            "(its `bet_id`, while that bet is open) and `open_bet_count`, how many are open "
            "in all; `next_after` is 0 when others are, and the table's state as of the "
            "event (GET /tables/{table}?as_of={position}) lists them a page at a time"
        },
    )
    transfers = transfers()
    settlements = fields.List(
        fields.Nested(SettlementSchema),
        required=True,
        metadata={
            "description": "The settlements it made, the first 50: its own if it closed a "
            "bet, those it decided if it is the throw, departure, pass or closing that did. "
            "Each is also a step of its own, its closing; and at /settlements?table=&round="
        },
    )
    settlement_count = fields.Integer(
        required=True, metadata={"description": "How many settlements it made"}
    )
    balances = fields.List(
        fields.Nested(PartyBalanceSchema),
        required=True,
        metadata={
            "description": "Each party it moved money for (not an escrow), before and after "
            "it, in the ledger; a player's token sees its own only"
        },
    )


class ReplaySchema(Schema):
    table = fields.String(required=True)
    round = fields.Nested(
        RoundSchema,
        required=True,
        allow_none=True,
        metadata={"description": "The round replayed; null for the whole session"},
    )
    balances = fields.String(required=True, metadata={"description": "What `balances` are"})
    steps = fields.List(
        fields.Nested(StepSchema),
        required=True,
        metadata={"description": "A page of the events, in order"},
    )
    next_after = fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "The `after` of the next page; null on the last"},
    )


class ReplayQuerySchema(PageQuerySchema):
    pass


# -- recall --------------------------------------------------------------------------


class RecalledBetSchema(Schema):
    bet_id = fields.String(required=True)
    kind = fields.String(required=True)
    outcome = fields.String(required=True)
    winner = fields.String(required=True, allow_none=True)
    reason = fields.String(required=True, allow_none=True)
    position = fields.Integer(required=True, metadata={"description": "Of its closing"})
    recorded_at = fields.String(required=True)
    net = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        required=True,
        metadata={
            "description": "Per ledger account: what the bet paid it less its stake, and what "
            "a dispute's adjustments then moved"
        },
    )
    adjusted = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        required=True,
        metadata={"description": "Per ledger account: what the bet's adjustments moved"},
    )


class RecalledThrowSchema(Schema):
    position = fields.Integer(required=True)
    version = fields.Integer(required=True)
    die1 = fields.Integer(required=True)
    die2 = fields.Integer(required=True)
    recorded_at = fields.String(required=True)


class WonSchema(Schema):
    account = fields.String(required=True)
    amount = fields.Integer(required=True, metadata={"description": "Won (+) or lost (-)"})


class RecalledBalanceSchema(PartyBalanceSchema):
    adjusted = fields.Integer(
        required=True,
        allow_none=True,
        metadata={
            "description": "After the last adjustment of the round that moved the account's "
            "money (none: none did)"
        },
    )


class RecalledDisputeSchema(Schema):
    dispute_id = fields.String(required=True)
    status = fields.String(
        required=True, metadata={"description": "open, upheld, voided or corrected"}
    )
    version = fields.Integer(required=True, metadata={"description": "Of its opening"})


class RecalledRoundSchema(RoundSchema):
    balances = fields.List(
        fields.Nested(RecalledBalanceSchema),
        required=True,
        metadata={
            "description": "Each party's ledger balance before the round's first event and "
            "after its last (other play and deposits between count too)"
        },
    )
    won = fields.List(fields.Nested(WonSchema), required=True)
    bets = fields.List(
        fields.Nested(RecalledBetSchema),
        required=True,
        metadata={"description": "The round's last 50 bets (a player's: their own), in order"},
    )
    bet_count = fields.Integer(
        required=True, metadata={"description": "How many bets (a player's: their own)"}
    )
    earlier_bets = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "Where every bet is read when some were left out, the round's "
            "settlements (`/settlements?table={table}&round={round}`, with `&player=` in a "
            "player's recall); null when none was"
        },
    )
    throws = fields.List(
        fields.Nested(RecalledThrowSchema),
        required=True,
        metadata={"description": "The round's last 50 throws, in order"},
    )
    throw_count = fields.Integer(
        required=True, metadata={"description": "How many throws the round had in all"}
    )
    earlier_throws = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "Where the throws left out are read, the round's replay "
            "(`/tables/{table}/rounds/{round}/replay`); null when none was"
        },
    )
    disputes = fields.List(fields.Nested(RecalledDisputeSchema), required=True)
    adjustments = fields.List(
        fields.Dict(),
        required=True,
        metadata={
            "description": "What the round's voiding or correction moved, per bet: bet_id, "
            "dispute_id, adjustment (reversal or correction), version, position, "
            "recorded_at, transfers in ledger accounts"
        },
    )


class RecallSchema(Schema):
    table = fields.String(metadata={"description": "A table's recall"})
    player = fields.String(metadata={"description": "A player's recall"})
    rounds = fields.List(
        fields.Nested(RecalledRoundSchema),
        required=True,
        metadata={"description": "The last ten rounds, newest first"},
    )
