"""Events to plain JSON-able data and back, and the canonical bytes that get hashed.

Each event type has a schema version. Decoding refuses a type or version it does not
know, and a payload that does not fit, with `DecodeError`; the store adds the event's
position so that bad stored data fails loudly and says where.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from json.encoder import encode_basestring  # what the encoder uses for text (ensure_ascii off)
from typing import Any, NoReturn

import msgspec

from engine import events as ev
from engine.rules import from_mapping
from ledger.store import vocabulary

EVENT_TYPES: dict[str, type] = {cls.__name__: cls for cls in vocabulary.STORED_EVENTS}
SCHEMA_VERSION: dict[str, int] = dict.fromkeys(EVENT_TYPES, 1)

_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)[1:]) for cls in EVENT_TYPES.values()
}
"""Each event type's payload fields, in declaration order: every field but `version`,
which comes first (decoding passes it positionally)."""


class DecodeError(ValueError):
    """Stored event data that this code cannot read."""


def fraction_text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _fraction_in(value: Any) -> Fraction:
    if not isinstance(value, str):
        raise DecodeError(f"expected a fraction as 'n/d', got {value!r}")
    return _fraction_of(value)


@functools.lru_cache(maxsize=1024)
def _fraction_of(text: str) -> Fraction:
    """Fraction(text), each text parsed once: a log holds a few breakages ("0/1",
    "1/2", ...) many times over, and parsing one cost a third of decoding its event.
    A Fraction cannot change, so one serves every event; an error is not kept."""
    return Fraction(text)


def _proposition_out(p: ev.Proposition) -> dict[str, Any]:
    return {"kind": p.kind.value, "totals": sorted(p.totals)}


def _proposition_in(data: Any) -> ev.Proposition:
    return ev.Proposition(ev.PropositionKind(data["kind"]), frozenset(data["totals"]))


def _transfers_out(transfers: tuple[ev.Transfer, ...]) -> list[dict[str, Any]]:
    return [{"source": t.source, "target": t.target, "amount": t.amount} for t in transfers]


def _transfers_in(data: Any) -> tuple[ev.Transfer, ...]:
    return tuple(ev.Transfer(t["source"], t["target"], _int(t["amount"])) for t in data)


def _limits_out(limits: ev.Limits) -> dict[str, Any]:
    out = {f: getattr(limits, f) for f in ("min_stake", "max_stake", "max_exposure")}
    if limits.caps != 1:
        out["caps"] = limits.caps
    return out


def _limits_in(data: Any) -> ev.Limits:
    """A table opened before `caps` was recorded has none in its limits: it played under
    the first edition (engine.events.Limits.caps), and encodes again to the same bytes."""
    if "caps" in data and data["caps"] not in range(2, ev.CAPS + 1):
        raise DecodeError(f"no edition {data['caps']!r} of the house caps")
    return ev.Limits(**{"caps": 1, **data})


def _int(value: Any) -> int:
    if type(value) is not int:
        raise DecodeError(f"expected a whole number, got {value!r}")
    return value


# Fields that are not plain JSON values, by name (a name means the same in every event).
_SPECIAL: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "rules": (lambda r: r.to_mapping(), from_mapping),
    "limits": (_limits_out, _limits_in),
    "proposition": (_proposition_out, _proposition_in),
    "transfers": (_transfers_out, _transfers_in),
    "breakage": (fraction_text, _fraction_in),
}


def encode(event: ev.Event) -> tuple[str, int, dict[str, Any]]:
    """(event type, schema version, payload) for storage. The version is not in the
    payload: the store keeps it as the event's version in its stream."""
    cls = type(event)
    name = cls.__name__
    payload: dict[str, Any] = {}
    for f in _FIELDS[cls]:
        value = getattr(event, f)
        special = _SPECIAL.get(f)
        payload[f] = special[0](value) if special is not None else value
    return name, SCHEMA_VERSION[name], payload


def decode(name: str, schema: int, version: int, payload: Mapping[str, Any]) -> ev.Event:
    """Rebuild an event, refusing anything this code does not know."""
    cls = EVENT_TYPES.get(name)
    if cls is None:
        raise DecodeError(f"unknown event type {name!r}")
    if schema != SCHEMA_VERSION[name]:
        raise DecodeError(f"{name} schema version {schema} is not one this code reads")
    if not isinstance(payload, Mapping):
        raise DecodeError(f"{name} payload is not an object")
    fields = _FIELDS[cls]
    if len(payload) != len(fields) or any(f not in payload for f in fields):
        raise DecodeError(f"{name} payload has fields {sorted(payload)}, expected {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    try:
        for f in fields:
            special = _SPECIAL.get(f)
            kwargs[f] = special[1](payload[f]) if special is not None else payload[f]
        event: ev.Event = cls(version=version, **kwargs)
    except DecodeError:
        raise
    except (TypeError, ValueError, KeyError) as exc:
        raise DecodeError(f"{name} payload does not fit: {exc}") from None
    return event


Plan = tuple[
    type, int, frozenset[str], tuple[tuple[str, Callable[[Any], Any]], ...], tuple[str, ...]
]
"""How to rebuild one event type: (class, schema version, payload fields, converters,
the fields in the order the class takes them after `version`)."""


def decode_plan(name: str) -> Plan | None:
    """What `decode` does for `name`, laid out for a loop that decodes many rows fast
    (ledger.store.eventstore.decode_rows). None for a type this code does not know."""
    cls = EVENT_TYPES.get(name)
    if cls is None:
        return None
    fields = _FIELDS[cls]
    converters = tuple((f, _SPECIAL[f][1]) for f in fields if f in _SPECIAL)
    return cls, SCHEMA_VERSION[name], frozenset(fields), converters, fields


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
_FAST_ENCODE = msgspec.json.Encoder(order="sorted").encode
"""msgspec's encoder, keys sorted: for plain values (`_plain`) the same bytes as
_CANONICAL's, ten times faster (a property test in tests/ledger/test_codec_fast.py holds
the two equal). It sorts keys by code point as json's sort_keys does, and writes text
unescaped but for quotes, backslashes and control characters, as json does with
ensure_ascii off."""

_WIDE = 1 << 64
"""Integers at least this wide are left to json (msgspec writes them exactly too, but
past 4,300 digits json refuses them, and the two must agree)."""


def canonical(document: Mapping[str, Any]) -> bytes:
    """The one byte string a document hashes to: sorted keys, no spaces, UTF-8.

    Amounts are integers and fractions are "n/d" strings, so no float ever reaches it.
    The bytes are json.dumps' (sort_keys, no spaces, ensure_ascii and allow_nan off),
    made by msgspec when the document holds only plain values, by json otherwise: a
    float (msgspec writes 1e16 where json writes 1e+16, and NaN as null where json
    refuses it), a subclass of str (engine.phrase.Phrase) or of int, a huge integer.
    Whatever msgspec refuses, json decides, with json's own error.
    """
    try:
        if _plain(document):
            return _FAST_ENCODE(document)
    except Exception:  # nested too deeply, text that is not UTF-8, ...: json says which
        pass
    return _CANONICAL.encode(document).encode()


def _plain(value: Any) -> bool:
    """Whether `value` is built of exactly dict (with text keys), list, tuple, str, int
    (narrower than _WIDE), bool and None, which msgspec encodes as json does."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        number: int = value
        return -_WIDE < number < _WIDE
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_plain(v) for v in value)
    return False


class _Float(Exception):
    """A number with a fraction or an exponent: json.loads reads it (NaN included)."""


def _refuse_float(text: str) -> NoReturn:
    raise _Float(text)


_FAST_DECODE = msgspec.json.Decoder(float_hook=_refuse_float).decode
_LONG_NUMBER = re.compile(r"[0-9]{4000}")
_LONG_NUMBER_BYTES = re.compile(rb"[0-9]{4000}")
"""Digits enough that json.loads may refuse the number (Python's limit on converting
text to int, 4,300 digits by default), which msgspec would read: json decides."""


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`: the same value, or the same error (a property test holds the
    two equal). msgspec reads it, six times faster, unless the text holds a float, a
    text json reads and msgspec does not (a lone surrogate escape, a byte order mark,
    UTF-16), a number of thousands of digits, or is not JSON at all: then json reads it,
    and json's error is the one raised. Of a key given twice, the last value is kept,
    as by json."""
    if len(text) < 4000 or (
        (_LONG_NUMBER if isinstance(text, str) else _LONG_NUMBER_BYTES).search(text) is None  # type: ignore[arg-type]
    ):
        try:
            return _FAST_DECODE(text)
        except Exception:
            pass
    return json.loads(text)


def frame(
    quoted: Quoted,
    position: int,
    stream: str,
    version: int,
    type_: str,
    schema_version: int,
    payload: str,
    actor: str,
    idempotency_key: str | None,
    recorded_at: str,
) -> bytes:
    """The canonical frame of an event: the bytes its chain hash and its leaf in the
    log's tree cover. The columns in the order the events table has them (a stored
    row's first nine), each text quoted through `quoted`.

    It is the canonical encoding of the event's columns but the two hashes,
    `canonical({...the columns, "payload": parsed payload})`, with the payload spliced
    in as its stored text: byte for byte the same when that text is canonical JSON,
    as the store writes it (a test holds the two equal). Written out by hand, the keys
    in sorted order, because building and sorting a dict per event cost more than the
    insert, and parsing each payload again more than a pass over the log. A payload
    rewritten in any other form hashes differently, which is what an auditor wants.
    A column of the wrong type is a TypeError or a ValueError.
    """
    return (
        f'{{"actor":{quoted[actor]},"idempotency_key":{quoted[idempotency_key]},'
        f'"payload":{payload},"position":{position:d},"recorded_at":{quoted[recorded_at]},'
        f'"schema_version":{schema_version:d},"stream":{quoted[stream]},"type":{quoted[type_]},'
        f'"version":{version:d}}}'
    ).encode()


class Quoted(dict[str | None, str]):
    """Text columns as JSON text, as the canonical encoder writes them (ensure_ascii
    off), each quoted once: the events of a write, or of a page of the log, share
    their streams, actors, types and times. None is `null`; anything else but text is
    a TypeError. Holds at most LIMIT texts (a pass over the log meets a new time at
    every write), then starts again."""

    __slots__ = ()
    LIMIT = 100_000

    def __missing__(self, text: str | None) -> str:
        if len(self) >= self.LIMIT:
            self.clear()
        value = self[text] = "null" if text is None else _str_text(text)
        return value


def _int_text(value: int) -> str:
    if type(value) is not int:
        raise TypeError(f"expected a whole number, got {value!r}")
    return int.__repr__(value)


def _transfers_text(transfers: tuple[ev.Transfer, ...]) -> str:
    """`canonical(_transfers_out(transfers))`, the hot special field, written directly."""
    return (
        "["
        + ",".join(
            f'{{"amount":{_int_text(t.amount)},"source":{_str_text(t.source)},'
            f'"target":{_str_text(t.target)}}}'
            for t in transfers
        )
        + "]"
    )


def _str_text(value: str) -> str:
    if type(value) is not str:
        raise TypeError(f"expected text, got {value!r}")
    return encode_basestring(value)


_SPECIAL_TEXT: dict[str, Callable[[Any], str]] = {
    name: (lambda value, out=out: _CANONICAL.encode(out(value)))
    for name, (out, _) in _SPECIAL.items()
} | {
    "transfers": _transfers_text,
    "breakage": lambda value: '"' + fraction_text(value) + '"',
}
"""Per special field: its value as canonical JSON text."""

_Writer = tuple[tuple[str, str, Callable[[Any], str] | None], ...]
_WRITERS: dict[type, _Writer] = {}


def _writer(cls: type) -> _Writer:
    """(text before the value, field, text of a special value) per payload field, in
    key order."""
    fields = sorted(_FIELDS[cls])
    return tuple(
        (("{" if i == 0 else ",") + encode_basestring(f) + ":", f, _SPECIAL_TEXT.get(f))
        for i, f in enumerate(fields)
    )


def payload_text(event: vocabulary.StoredEvent) -> tuple[str, int, str]:
    """(event type, schema version, payload as canonical JSON text): the same as
    `canonical(encode(event)[2]).decode()` (a test holds the two equal), written field
    by field without building the payload, because appends spent most of their time
    there (bench.store)."""
    cls = type(event)
    writer = _WRITERS.get(cls)
    if writer is None:
        if cls not in _FIELDS:
            raise TypeError(f"{cls.__name__} is not an event type the store knows")
        writer = _WRITERS[cls] = _writer(cls)
    parts: list[str] = []
    append = parts.append
    for before, f, special in writer:
        value = getattr(event, f)
        append(before)
        if special is not None:
            append(special(value))
        elif type(value) is int:
            append(int.__repr__(value))
        elif type(value) is str:
            append(encode_basestring(value))
        elif value is None:
            append("null")
        else:
            append(_CANONICAL.encode(value))
    name = cls.__name__
    text = "".join(parts) + "}" if parts else "{}"
    return name, SCHEMA_VERSION[name], text


def chain_hash(previous: str, data: bytes) -> str:
    """A stream's hash chain: each event's hash covers the hash before it and the
    event's canonical record, so that editing or dropping any event breaks every hash
    after it."""
    # hex(SHA-256(prev_hash || "\n" || record)), the result in 64 lowercase hex digits:
    #   prev_hash  the stream's previous hash, its 64 hex digits as ASCII bytes
    #              (store.GENESIS, 64 "0"s, before a stream's first event);
    #   "\n"       the one byte 0x0A;
    #   record     the event's frame (`frame`): the canonical JSON (sorted keys, no
    #              spaces, UTF-8) of its stored columns but the two hashes, its
    #              payload spliced in as the stored text.
    return hashlib.sha256(previous.encode() + b"\n" + data).hexdigest()
