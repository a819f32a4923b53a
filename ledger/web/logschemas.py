"""The schemas of the log's proofs (ledger.api.log): checkpoints, the key, inclusion
and consistency proofs. Every hash in them is lowercase hex, as every other hash the
API gives; only the signed note holds its root in base64, because C2SP says so."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import BIG, LoggedEventSchema

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
        required=True,
        metadata={"description": "The bytes the leaf covers, as UTF-8 text: the event's "
                  "canonical document (every column but prev_hash and hash, sorted keys, "
                  "no spaces)"},
    )  # fmt: skip
    event = fields.Nested(
        LoggedEventSchema, required=True, metadata={"description": "As GET /events gives it"}
    )
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
