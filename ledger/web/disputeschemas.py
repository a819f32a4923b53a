"""Schemas of disputes: what opening, resolving and reading one take and answer, the
service's answer (engine.disputes.answer, as ledger.audit.disputes.answer_view renders
it) among them."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import BIG, SMALL
from ledger.web.schemas import DIE, TransferSchema, WriteResultSchema

TEXT = validate.Length(1, 500)


def _dice() -> fields.List[Any]:
    return fields.List(
        fields.Integer(strict=True, validate=DIE),
        validate=validate.Length(2, 2),
        load_default=None,
        metadata={"description": "The two dice, each 1 to 6"},
    )


class OpenDisputeSchema(Schema):
    claim = fields.String(
        required=True, validate=TEXT, metadata={"description": "What went wrong, in words"}
    )
    throw = fields.Integer(
        strict=True,
        load_default=None,
        validate=validate.Range(1, SMALL),
        metadata={
            "description": "The version of the throw disputed (default, with dice: the "
            "round's last throw)"
        },
    )
    dice = _dice()


class ResolveDisputeSchema(Schema):
    resolution = fields.String(
        required=True,
        metadata={"description": "upheld, voided, or corrected"},
        validate=validate.Length(1, 32),
    )
    reason = fields.String(
        required=True, validate=TEXT, metadata={"description": "The setter's reason"}
    )
    throw = fields.Integer(
        strict=True,
        load_default=None,
        validate=validate.Range(1, SMALL),
        metadata={"description": "A correction: the version of the throw mis-entered"},
    )
    dice = _dice()


class DisputeQuerySchema(Schema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(["open", "resolved"]),
        metadata={"description": "open or resolved (default: both)"},
    )
    after = QueryInteger(
        load_default=0,
        validate=validate.Range(0, BIG),
        metadata={"description": "The `next_after` of the page before"},
    )
    limit = QueryInteger(load_default=50, validate=validate.Range(1, 500))


class PaidSchema(Schema):
    """What one bet of the round did, or would have done."""

    bet_id = fields.String(required=True)
    outcome = fields.String(required=True, metadata={"description": "settled, voided or open"})
    winner = fields.String(
        required=True, allow_none=True, metadata={"description": "Settled: who won it"}
    )
    net = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        required=True,
        metadata={
            "description": "What each party (a ledger account) is up or down on it; a bet "
            "`open` at the end shows what each has put into its escrow"
        },
    )


class AdjustmentSchema(Schema):
    bet_id = fields.String(required=True)
    transfers = fields.List(fields.Nested(TransferSchema), required=True)


class WhatIfSchema(Schema):
    """The round with the claimant's dice at one throw, and what a correction to them
    would do if the setter made it now."""

    throw = fields.Integer(required=True, metadata={"description": "The throw's version"})
    dice = fields.List(fields.Integer(), required=True)
    result = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "How the round would have ended (null: it would not have)"},
    )
    main = fields.Integer(required=True, allow_none=True)
    chance = fields.Integer(required=True, allow_none=True)
    bets = fields.List(fields.Nested(PaidSchema), required=True)
    stopped = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "Why the what-if stops short: a recorded command that "
            "could not have happened"
        },
    )
    correctable = fields.Boolean(
        required=True,
        metadata={
            "description": "Whether the setter's correction to these dice would be made, "
            "as the resolution judges it now: it stays inside its round, and no other rule "
            "of resolutions refuses it (a server-dice table, a round voided or corrected "
            "already, the dice as recorded, a dispute resolved already)"
        },
    )
    refused = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "Not correctable: why, as the resolution would say it"},
    )
    refused_rule = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "Not correctable: the rule a correction would be refused under, "
            "the code of its problem type `urn:hazard:rule:<code>` (server-dice, "
            "round-adjusted, invalid-resolution, dispute-resolved, "
            "correction-reaches-beyond-round, ...)"
        },
    )
    adjustments = fields.List(
        fields.Nested(AdjustmentSchema),
        required=True,
        metadata={"description": "What the correction would post, per bet (none if refused)"},
    )


class AnswerSchema(Schema):
    """The service's answer to a dispute, derived again from the round's events."""

    matches = fields.Boolean(
        required=True,
        metadata={"description": "The recorded settlements are what the round's events derive"},
    )
    mismatch = fields.String(
        required=True, allow_none=True, metadata={"description": "Where they part, if they do"}
    )
    result = fields.String(required=True, allow_none=True)
    bets = fields.List(fields.Nested(PaidSchema), required=True)
    what_if = fields.Nested(
        WhatIfSchema,
        required=True,
        allow_none=True,
        metadata={"description": "When the claimant gave dice"},
    )


class DisputeSchema(Schema):
    table = fields.String(required=True)
    dispute_id = fields.String(required=True)
    round = fields.Integer(required=True)
    claimant = fields.String(required=True)
    role = fields.String(required=True, metadata={"description": "setter, croupier or player"})
    claim = fields.String(required=True)
    throw = fields.Integer(allow_none=True)
    dice = fields.List(fields.Integer(), allow_none=True)
    status = fields.String(
        required=True, metadata={"description": "open, upheld, voided or corrected"}
    )
    opened = fields.Dict(required=True, metadata={"description": "version, position, by, at"})
    resolved = fields.Dict(
        allow_none=True,
        metadata={"description": "resolution, reason, throw, dice, version, position, by, at"},
    )
    adjustments = fields.List(
        fields.Dict(),
        required=True,
        metadata={"description": "Per bet: the transfers the resolution made, in ledger accounts"},
    )
    answer = fields.Nested(
        AnswerSchema,
        allow_none=True,
        metadata={
            "description": "The service's answer: whether the recorded settlements match the "
            "round derived again from its events (`matches`, `mismatch`), what each bet did "
            "(`bets`), and, when the claimant gave dice, `what_if`: the round and every bet "
            "with them, whether the setter's correction would be made now (`correctable`; "
            "if not, `refused` and `refused_rule` say why) and the `adjustments` it would post"
        },
    )


class DisputePageSchema(Schema):
    items = fields.List(fields.Nested(DisputeSchema), required=True)
    next_after = fields.Integer(required=True, allow_none=True)


class DisputeWriteResultSchema(WriteResultSchema):
    dispute_id = fields.String(required=True)
    answer = fields.Nested(
        AnswerSchema, required=True, metadata={"description": "As DisputeSchema's answer"}
    )
