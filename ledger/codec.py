"""Events to plain JSON-able data and back, and the canonical bytes that get hashed.

Each event type has a schema version. Decoding refuses a type or version it does not
know, and a payload that does not fit, with `DecodeError`; the store adds the event's
position so that bad stored data fails loudly and says where.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from engine import events as ev
from engine.rules import from_mapping
from ledger import accounts

EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        ev.TableOpened,
        ev.PlayerSeated,
        ev.PlayerLeft,
        ev.TableClosed,
        ev.DieCastForCaster,
        ev.CasterChosen,
        ev.DicePassed,
        ev.CasterForfeited,
        ev.MainCalled,
        ev.DiceThrown,
        ev.ThrowVoided,
        ev.CasterStaked,
        ev.StakeLaid,
        ev.StakeCovered,
        ev.OddsLaid,
        ev.SideBetOffered,
        ev.SideBetAccepted,
        ev.BetSettled,
        ev.BetVoided,
        accounts.Deposited,
        accounts.Withdrawn,
        accounts.CreditLimitSet,
    )
}
SCHEMA_VERSION: dict[str, int] = dict.fromkeys(EVENT_TYPES, 1)

_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls) if f.name != "version")
    for cls in EVENT_TYPES.values()
}


class DecodeError(ValueError):
    """Stored event data that this code cannot read."""


def fraction_text(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _fraction_in(value: Any) -> Fraction:
    if not isinstance(value, str):
        raise DecodeError(f"expected a fraction as 'n/d', got {value!r}")
    return Fraction(value)


def _proposition_out(p: ev.Proposition) -> dict[str, Any]:
    return {"kind": p.kind.value, "totals": sorted(p.totals)}


def _proposition_in(data: Any) -> ev.Proposition:
    return ev.Proposition(ev.PropositionKind(data["kind"]), frozenset(data["totals"]))


def _transfers_out(transfers: tuple[ev.Transfer, ...]) -> list[dict[str, Any]]:
    return [{"source": t.source, "target": t.target, "amount": t.amount} for t in transfers]


def _transfers_in(data: Any) -> tuple[ev.Transfer, ...]:
    return tuple(ev.Transfer(t["source"], t["target"], _int(t["amount"])) for t in data)


def _limits_out(limits: ev.Limits) -> dict[str, Any]:
    return {f: getattr(limits, f) for f in ("min_stake", "max_stake", "max_exposure")}


def _limits_in(data: Any) -> ev.Limits:
    return ev.Limits(**data)


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


Plan = tuple[type, int, frozenset[str], tuple[tuple[str, Callable[[Any], Any]], ...]]
"""How to rebuild one event type: (class, schema version, payload fields, converters)."""


def decode_plan(name: str) -> Plan | None:
    """What `decode` does for `name`, laid out for a loop that decodes many rows fast
    (ledger.store.decode_rows). None for a type this code does not know."""
    cls = EVENT_TYPES.get(name)
    if cls is None:
        return None
    fields = _FIELDS[cls]
    converters = tuple((f, _SPECIAL[f][1]) for f in fields if f in _SPECIAL)
    return cls, SCHEMA_VERSION[name], frozenset(fields), converters


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical(document: Mapping[str, Any]) -> bytes:
    """The one byte string a document hashes to: sorted keys, no spaces, UTF-8.

    Amounts are integers and fractions are "n/d" strings, so no float ever reaches it.
    """
    return _CANONICAL.encode(document).encode()


def canonical_spliced(document: Mapping[str, Any], key: str, raw: str) -> bytes:
    """`canonical(document | {key: json.loads(raw)})`, without parsing `raw`.

    `raw` is spliced in as it is, so it must already be canonical JSON, as the store
    writes payloads; a stored payload rewritten in any other form hashes differently,
    which is what an auditor wants. `document` is flat, its values scalars (the
    store's columns): the splice goes before the first key that sorts after `key`,
    and `,"name":` cannot occur inside an encoded string, whose quotes are escaped,
    so the search finds that key and nothing else. (In a nested object it could.)
    """
    if any(isinstance(v, (dict, list, tuple)) for v in document.values()):
        raise ValueError("canonical_spliced takes a flat document of scalars")
    body = canonical(document)
    entry = _CANONICAL.encode(key).encode() + b":" + raw.encode()
    later = sorted(k for k in document if k > key)
    if not later:
        return body[:-1] + (b"," if len(body) > 2 else b"") + entry + b"}"
    marker = _CANONICAL.encode(later[0]).encode() + b":"
    at = (
        body.index(b"{" + marker) + 1
        if body.startswith(b"{" + marker)
        else (body.index(b"," + marker) + 1)
    )
    return body[:at] + entry + b"," + body[at:]


def chain_hash(previous: str, data: bytes) -> str:
    """SHA-256 over the previous hash and the canonical event: a stream's hash chain."""
    return hashlib.sha256(previous.encode() + b"\n" + data).hexdigest()
