"""An event line of an export, read into the row the store holds and the document its
leaf and chain hash cover (docs/export-format.md, "event").

The hot path reads an event line without parsing it as a whole: a canonical line is
split by one regular expression into its fields, and the event's document is cut out
of the line's own bytes, the four fields that are not part of it (`hash`, `leaf`,
`prev_hash`, `record`) left out. That is still a recomputation from the content: the
leaf is SHA-256 over those bytes, each field between the cuts is checked to be one
JSON value of its kind (the payload when it is decoded), so the bytes hashed are the
fields read, and since the tree ties each leaf to the signed log, bytes that are not
the stored event's cannot pass. A line that is not in canonical form takes the slow
path: parsed, and its document re-encoded.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.exports.offline.fields import is_int
from ledger.exports.verdict import Disagreement
from ledger.store import codec
from ledger.store.eventstore import Recorded

Read = tuple[Recorded, bytes, str]
"""An event line read: (the row, its document, the `leaf` it gives in hex)."""

_STRING = rb'"([^"\\]*)"'  # a JSON string with nothing escaped in it
_NUMBER = rb"(0|[1-9][0-9]*)"
_HEX = rb'"([0-9a-f]{64})"'
CANONICAL = re.compile(
    rb'(\{"actor":' + _STRING + rb")"
    rb',"hash":' + _HEX
    + rb'(,"idempotency_key":(null|"[^"\\]*"))'
    rb',"leaf":' + _HEX
    + rb'(,"payload":(\{.*\}),"position":' + _NUMBER + rb")"
    rb',"prev_hash":' + _HEX + rb',"record":"event"'
    rb'(,"recorded_at":' + _STRING + rb',"schema_version":' + _NUMBER + rb',"stream":' + _STRING
    + rb',"type":' + _STRING + rb',"version":' + _NUMBER + rb"\})",
    re.DOTALL,
)  # fmt: skip
"""An event line in canonical form whose texts need no unescaping. The payload is
whatever lies between its key and `,"position":` (what follows is fixed, and a string
cannot hold an unescaped quote, so there is one way to match); it is checked to be one
JSON object when it is decoded. Four groups hold the event's document in pieces: the
line but `hash`, `leaf`, `prev_hash` and `record`."""

KEYS = frozenset(
    ("actor", "hash", "idempotency_key", "leaf", "payload", "position", "prev_hash", "record",
     "recorded_at", "schema_version", "stream", "type", "version")
)  # fmt: skip
NOT_HASHED = ("hash", "leaf", "prev_hash", "record")
"""The fields of an event line that are not part of its document."""


def fast(m: re.Match[bytes]) -> Read | None:
    """The line CANONICAL matched, read from its bytes; None if a text in it is not
    UTF-8 (the slow path, parsing it, says what is wrong)."""
    (head, actor, digest, middle, key, leaf, body, payload, position, prev, tail, at,
     schema, stream, type_, version) = m.groups()  # fmt: skip
    try:
        row = Recorded(
            int(position),
            stream.decode(),
            int(version),
            type_.decode(),
            int(schema),
            payload.decode(),
            actor.decode(),
            None if key == b"null" else key[1:-1].decode(),
            at.decode(),
            prev.decode(),
            digest.decode(),
        )
    except UnicodeDecodeError:
        return None
    return row, head + middle + body + tail, leaf.decode()


def slow(number: int, e: dict[str, Any]) -> Read:
    """An event line parsed as JSON (line `number`): its fields checked one by one, and
    its document encoded again."""
    if e.keys() != KEYS:
        missing = sorted(KEYS - e.keys())
        extra = sorted(e.keys() - KEYS)
        raise Disagreement(
            number,
            "the event line "
            + "; ".join(
                filter(
                    None,
                    [
                        f"lacks {', '.join(missing)}" if missing else "",
                        f"has fields the format does not: {', '.join(extra)}" if extra else "",
                    ],
                )
            ),
        )
    for name in ("position", "version", "schema_version"):
        if not is_int(e[name]) or e[name] < 0:
            raise Disagreement(number, f"the event's {name} is not a whole number")
    for name in ("actor", "recorded_at", "stream", "type", "hash", "prev_hash", "leaf"):
        if not isinstance(e[name], str):
            raise Disagreement(number, f"the event's {name} is not text")
    if e["idempotency_key"] is not None and not isinstance(e["idempotency_key"], str):
        raise Disagreement(number, "the event's idempotency_key is not text or null")
    if not isinstance(e["payload"], dict):
        raise Disagreement(number, "the event's payload is not an object")
    document = codec.canonical({k: v for k, v in e.items() if k not in NOT_HASHED})
    row = Recorded(
        e["position"],
        e["stream"],
        e["version"],
        e["type"],
        e["schema_version"],
        codec.canonical(e["payload"]).decode(),
        e["actor"],
        e["idempotency_key"],
        e["recorded_at"],
        e["prev_hash"],
        e["hash"],
    )
    return row, document, e["leaf"]
