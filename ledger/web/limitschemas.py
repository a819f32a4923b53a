"""What the API and the console take and show of a player's limits and breaks."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ledger.store.limits_events import BREAK_KINDS, LIMIT_KINDS
from ledger.web.schemas import EventSchema, ReceiptSchema

MOST = 10**15


class LimitBodySchema(Schema):
    limit = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=0, max=MOST),
        metadata={
            "description": "Minor units. Lower than the limit in force: binds at once. "
            "Higher: binds after the club's cooling-off (HAZARD_LIMIT_COOLING_OFF, 24 hours "
            "by default), the lower one holding till then"
        },
    )


class BreakBodySchema(Schema):
    kind = fields.String(required=True, validate=validate.OneOf(BREAK_KINDS))
    length = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=1, max=10_000),
        metadata={
            "description": "A time-out's hours (24 to 1008, six weeks) or a self-exclusion's "
            "months (6 to 120). Neither can be lifted or shortened once taken"
        },
    )


class WaitingSchema(Schema):
    limit = fields.Integer(allow_none=True, required=True)
    from_ = fields.String(attribute="from", data_key="from", required=True)


class LimitViewSchema(Schema):
    kind = fields.String(required=True, validate=validate.OneOf(LIMIT_KINDS))
    words = fields.String(required=True)
    limit = fields.Integer(allow_none=True, required=True)
    used = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "What counts against it now (none for the largest stake)"},
    )
    waiting = fields.Nested(WaitingSchema, allow_none=True, required=True)


class BreakViewSchema(Schema):
    kind = fields.String(required=True, validate=validate.OneOf(BREAK_KINDS))
    until = fields.String(required=True)


class RealitySchema(Schema):
    at = fields.String(required=True)
    since = fields.String(allow_none=True, required=True)
    minutes = fields.Integer(required=True)
    net = fields.Integer(required=True)


class PlayerLimitsSchema(Schema):
    player = fields.String(required=True)
    at = fields.String(required=True)
    limits = fields.List(fields.Nested(LimitViewSchema), required=True)
    break_ = fields.Nested(
        BreakViewSchema, attribute="break", data_key="break", allow_none=True, required=True
    )
    reality = fields.Nested(RealitySchema, required=True)
    cooling_off_hours = fields.Integer(required=True)
    reality_check_minutes = fields.Integer(required=True)


class LimitWriteSchema(Schema):
    player = fields.String(required=True)
    version = fields.Integer(required=True)
    kind = fields.String(required=True)
    limit = fields.Integer(allow_none=True)
    effective_at = fields.String()
    since = fields.String()
    until = fields.String()
    events = fields.List(fields.Nested(EventSchema), required=True)
    receipt = fields.Nested(ReceiptSchema)
