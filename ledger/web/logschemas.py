"""The schemas of the log's proofs (ledger.api.log): checkpoints, the key, inclusion
and consistency proofs, cosignatures and gossip. Every hash in them is lowercase hex,
as every other hash the API gives; only the signed note holds its root in base64,
because C2SP says so."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import BIG, LoggedEventSchema
from ledger.web.schemas import Whole

HEX = "SHA-256, lowercase hex"
SIZE = validate.Range(1, BIG)


class LogKeySchema(Schema):
    origin = fields.String(
        required=True,
        metadata={"description": "The log's name: the first line of its checkpoints, and "
                  "the name its signatures are made under"},
    )  # fmt: skip
    key = fields.String(
        required=True,
        metadata={"description": "The verifier key (C2SP signed-note): "
                  "`<origin>+<key id, 8 hex digits>+<base64(0x01 || Ed25519 public key)>`"},
    )  # fmt: skip


class CheckpointSchema(Schema):
    """A checkpoint the log signed, as the write that made it handed it out."""

    size = fields.Integer(required=True, metadata={"description": "Events in the tree"})
    root = fields.String(required=True, metadata={"description": f"The tree's root: {HEX}"})
    issued_at = fields.String(required=True, metadata={"description": "When it was signed"})
    checkpoint = fields.String(
        required=True,
        metadata={"description": "The signed note (C2SP tlog-checkpoint): origin, size and "
                  "base64 root, a line each, the time as `time <ISO 8601>`, a blank line and "
                  "`— <origin> <base64(key id || Ed25519 signature)>`. Save it as it is: "
                  "`hazard verify --checkpoint FILE` reads it"},
    )  # fmt: skip


class SizeQuerySchema(Schema):
    size = QueryInteger(
        validate=SIZE,
        metadata={"description": "The size of a checkpoint the log signed; the newest if "
                  "omitted"},
    )  # fmt: skip


class InclusionQuerySchema(SizeQuerySchema):
    position = QueryInteger(
        required=True, validate=SIZE, metadata={"description": "The event's position"}
    )


class InclusionSchema(Schema):
    position = fields.Integer(required=True)
    leaf_index = fields.Integer(
        required=True, metadata={"description": "The record's number in the tree: position - 1"}
    )
    tree_size = fields.Integer(required=True)
    leaf_hash = fields.String(
        required=True,
        metadata={"description": f"SHA-256(0x00 || record): {HEX}"},
    )
    record = fields.String(
        metadata={"description": "The bytes the leaf covers, as UTF-8 text: the event's "
                  "canonical document (every column but prev_hash and hash, sorted keys, "
                  "no spaces). Only to a caller whose token may see the event"},
    )  # fmt: skip
    event = fields.Nested(
        LoggedEventSchema,
        metadata={"description": "As GET /events gives it. Only to a caller whose token may "
                  "see the event"},
    )  # fmt: skip
    proof = fields.List(
        fields.String(),
        required=True,
        metadata={"description": f"The audit path (RFC 9162, 2.1.3), the sibling nearest "
                  f"the leaf first: {HEX}"},
    )  # fmt: skip
    checkpoint = fields.Nested(CheckpointSchema, required=True)


class ConsistencyQuerySchema(Schema):
    from_ = QueryInteger(
        data_key="from",
        required=True,
        validate=SIZE,
        metadata={"description": "The size of the older checkpoint (a receipt's)"},
    )
    to = QueryInteger(
        validate=SIZE,
        metadata={"description": "The size of the newer checkpoint; the newest if omitted"},
    )


class ConsistencySchema(Schema):
    from_ = fields.Integer(data_key="from", required=True)
    to = fields.Integer(required=True)
    proof = fields.List(
        fields.String(),
        required=True,
        metadata={"description": f"The consistency proof (RFC 9162, 2.1.4): {HEX}; empty "
                  f"when `from` equals `to`"},
    )  # fmt: skip
    old = fields.Nested(CheckpointSchema, required=True, metadata={"description": "Of `from`"})
    new = fields.Nested(CheckpointSchema, required=True, metadata={"description": "Of `to`"})


class PositionQuerySchema(Schema):
    position = QueryInteger(
        required=True, validate=SIZE, metadata={"description": "The event's position"}
    )


class CosignerSchema(Schema):
    key = fields.String(
        required=True,
        metadata={"description": "The witness's key (C2SP tlog-cosignature): "
                  "`<name>+<key id, 8 hex digits>+<base64(0x04 || Ed25519 public key)>`"},
    )  # fmt: skip
    cosigned_at = fields.Integer(
        required=True,
        metadata={"description": "When it cosigned, as its cosignature says (POSIX seconds)"},
    )


class CosignedSchema(Schema):
    """A checkpoint the log signed, with what witnesses cosigned of it."""

    size = fields.Integer(required=True, metadata={"description": "Events in the tree"})
    root = fields.String(required=True, metadata={"description": f"The tree's root: {HEX}"})
    note = fields.String(
        required=True,
        metadata={"description": "The log's signed note with every witness's cosignature "
                  "line after its own (C2SP tlog-cosignature): check it with your own "
                  "policy, whose witnesses and quorum are yours, never the server's"},
    )  # fmt: skip
    witnesses = fields.List(
        fields.Nested(CosignerSchema),
        required=True,
        metadata={"description": "The witnesses whose cosignatures the note holds"},
    )


NOTE = validate.Length(1, 8 * 1024)
"""A checkpoint and some fifty signature lines: a witness's is some 140 bytes. (Sent as
JSON escapes, 8 K characters stay below the 64 KiB any body may be.)"""
REPORTER = Whole(r"[^\x00-\x1f\x7f]{1,200}", error="1 to 200 characters, no control characters")


class GossipSchema(Schema):
    note = fields.String(
        required=True,
        validate=NOTE,
        metadata={"description": "A checkpoint you were shown, as the signed note you got "
                  "(a receipt's, or GET /log/checkpoint's): it must be signed by the log's "
                  "key. Other signature lines are not kept"},
    )  # fmt: skip
    reported_by = fields.String(
        load_default=None,
        validate=REPORTER,
        metadata={"description": "Who reports it, in your words (a name, a URL): kept "
                  "as you give it, and trusted by no one"},
    )  # fmt: skip


class ReportSchema(Schema):
    id = fields.Integer(required=True, metadata={"description": "In the order reports came"})
    size = fields.Integer(required=True)
    root = fields.String(required=True, metadata={"description": f"The tree's root: {HEX}"})
    note = fields.String(
        required=True,
        metadata={"description": "The checkpoint, with the log's signature alone"},
    )
    reported_by = fields.String(required=True, allow_none=True)
    reported_at = fields.String(
        required=True, metadata={"description": "When it was first reported here"}
    )


class GossipAnswerSchema(Schema):
    report = fields.Nested(ReportSchema, required=True)
    new = fields.Boolean(
        required=True,
        metadata={"description": "Whether this tree was reported here for the first time"},
    )


class GossipQuerySchema(Schema):
    after = QueryInteger(
        load_default=0,
        validate=validate.Range(0, BIG),
        metadata={"description": "The `next_after` of the page before (a report's id)"},
    )
    limit = QueryInteger(
        load_default=100,
        validate=validate.Range(1, 500),
        metadata={"description": "Reports per page, 1 to 500"},
    )


class GossipPageSchema(Schema):
    items = fields.List(fields.Nested(ReportSchema), required=True)
    next_after = fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "The `after` of the next page; null on the last"},
    )
