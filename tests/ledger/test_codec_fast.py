"""codec's fast JSON (msgspec) against the standard library's: `canonical` must give
json.dumps' bytes exactly, and `loads` json.loads' value or error exactly, or stored
hashes and old exports would stop verifying."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.phrase import Phrase
from ledger.store import codec
from ledger.store.vocabulary import LogSealed
from tests.ledger.everyevent import a_server_dice_turn, a_table_with_every_event


def _dumps(value: Any) -> bytes:
    """What the canonical bytes were before msgspec, and must stay."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def _outcome(f: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("value", repr(f(*args)))
    except (ValueError, TypeError, RecursionError, ZeroDivisionError) as exc:
        return ("error", (type(exc), str(exc)))


class _Text(str):
    """A subclass of str other than Phrase."""


_ANY_CHAR = st.characters(codec="utf-8") | st.characters(min_codepoint=0, max_codepoint=0x3F)
_TEXTS = st.text(_ANY_CHAR) | st.text(st.characters())  # the second has lone surrogates
_NUMBERS = (
    st.integers()
    | st.integers(min_value=2**62, max_value=2**200)
    | st.integers(max_value=-(2**62), min_value=-(2**200))
    | st.floats()
)
_SCALARS = (
    st.none()
    | st.booleans()
    | _NUMBERS
    | _TEXTS
    | _TEXTS.map(_Text)
    | st.sampled_from(["seven", "nick"]).map(Phrase)
)
_KEYS = _TEXTS | _TEXTS.map(_Text)
JSON_LIKE = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)
"""Values that json.dumps may or may not take: non-ASCII, escapes, control characters,
lone surrogates, integers beyond 64 bits, floats with NaN and infinities, str subclasses
as values and keys."""


@given(st.dictionaries(_KEYS, JSON_LIKE, max_size=5))
@settings(max_examples=1000, deadline=None)
@example({"a": 2**70, "é": -(2**64), "\U0001f600": 1, "\uffff": 2, "z": "\x00\x1f\x7f\u2028"})
@example({"a": float("nan")})
@example({"a": 1e16})
@example({"p": Phrase("seven"), _Text("k"): _Text("v")})
@example({"a": "\ud800"})
@example({"a": 10**5000})
def test_canonical_is_json_dumps_exactly(document: dict[str, Any]) -> None:
    assert _outcome(codec.canonical, document) == _outcome(_dumps, document)


def test_canonical_is_json_dumps_nested_past_any_depth() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        _dumps({"a": deep})
    with pytest.raises(RecursionError):
        codec.canonical({"a": deep})


_EVENTS = [*a_table_with_every_event(), *a_server_dice_turn()]
_EVENTS.append(LogSealed(version=1, root="ab" * 32, heads=3))


@pytest.mark.parametrize("event", _EVENTS, ids=lambda e: type(e).__name__)
def test_every_stored_event_encodes_to_the_same_canonical_bytes(event: Any) -> None:
    _name, _schema, payload = codec.encode(event)
    assert codec.canonical(payload) == _dumps(payload)
    assert codec.payload_text(event)[2].encode() == _dumps(payload)


@given(st.sampled_from(sorted(codec.EVENT_TYPES)), st.data())
@settings(max_examples=400, deadline=None)
def test_every_event_types_payload_of_any_values_encodes_the_same(name: str, data: Any) -> None:
    """Each event type's payload fields, each holding any JSON-like value, and the whole
    frame around it: the fast bytes are json's."""
    fields = [f.name for f in dataclasses.fields(codec.EVENT_TYPES[name])[1:]]
    payload = {f: data.draw(JSON_LIKE, label=f) for f in fields}
    assert _outcome(codec.canonical, payload) == _outcome(_dumps, payload)
    document = {
        "actor": data.draw(_TEXTS),
        "idempotency_key": None,
        "payload": payload,
        "position": data.draw(st.integers(min_value=1)),
        "recorded_at": "2026-11-27T01:00:00.123456Z",
        "schema_version": 1,
        "stream": "table:1",
        "type": name,
        "version": 1,
    }
    assert _outcome(codec.canonical, document) == _outcome(_dumps, document)


_PLAIN = st.recursive(
    st.none() | st.booleans() | _NUMBERS | st.text(_ANY_CHAR),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(_ANY_CHAR), inner, max_size=4)
    ),
    max_leaves=12,
)


def _texts_of(value: Any) -> st.SearchStrategy[str]:
    """JSON texts of `value`: as json writes it, with spaces, escaped to ASCII."""
    return st.sampled_from(
        [
            json.dumps(value),
            json.dumps(value, ensure_ascii=False, separators=(",", ":")),
            json.dumps(value, indent=1),
        ]
    )


_ODD_TEXTS = [
    '{"a":1,"a":2,"b":{"c":3,"c":[4]}}',  # the last of a key given twice
    '{"a":1,"b":2,"a":3}',  # ... in the first one's place
    '{"a":NaN,"b":Infinity,"c":-Infinity,"d":1e400,"e":-0,"f":-0.0,"g":1.5}',
    '{"a":"\\ud800","b":"\\ud83d\\ude00","c":"\\u0000"}',
    '\ufeff{"a":1}',
    '{"a":"\x01"}',
    '{"a":' + "9" * 5000 + "}",
    '{"a":' + "9" * 4100 + "}",
    '{"a":' + str(2**70) + ',"b":-' + str(2**64) + "}",
    ' {"a" : [1 , 2]}\n\t',
    '{"a":01}',
    "[1,]",
    "",
]


@pytest.mark.parametrize("text", _ODD_TEXTS)
def test_loads_is_json_loads_on_odd_texts(text: str) -> None:
    assert _outcome(codec.loads, text) == _outcome(json.loads, text)
    for encoding in ("utf-8", "utf-8-sig", "utf-16"):
        encoded = text.encode(encoding)
        assert _outcome(codec.loads, encoded) == _outcome(json.loads, encoded)


@given(st.data())
@settings(max_examples=1000, deadline=None)
def test_loads_is_json_loads_exactly(data: Any) -> None:
    """On texts of JSON values, on those texts cut or with a character changed, and on
    any text: the same value (floats, huge numbers, duplicate keys) or the same error;
    from the text and from its UTF-8 (or any) bytes."""
    text = data.draw(
        _PLAIN.flatmap(_texts_of)
        | st.text(_ANY_CHAR)
        | st.tuples(_PLAIN.flatmap(_texts_of), st.integers(0, 200), _TEXTS).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :]
        )
    )
    assert _outcome(codec.loads, text) == _outcome(json.loads, text)
    encoded = data.draw(
        st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]).map(
            lambda codec_name: text.encode(codec_name, errors="surrogatepass")
        )
        | st.binary()
    )
    assert _outcome(codec.loads, encoded) == _outcome(json.loads, encoded)


def test_loads_reads_every_stored_events_payload_as_json_does() -> None:
    for event in _EVENTS:
        text = codec.payload_text(event)[2]
        assert codec.loads(text) == json.loads(text)
        assert codec.loads(text.encode()) == json.loads(text)


def test_plain_values_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without json at hand, plain documents still encode and decode: msgspec did it."""
    document = {"b": [1, 2**63, "é\n"], "a": {"x": None, "y": True}}
    expected = _dumps(document)
    monkeypatch.setattr(codec, "_CANONICAL", None)
    monkeypatch.setattr(codec, "json", None)
    assert codec.canonical(document) == expected
    assert codec.loads(expected) == document
    assert codec.loads(expected.decode()) == document


@given(
    st.fractions().map(codec.fraction_text)
    | st.from_regex(r"\A ?-?[0-9_]{0,4}(/-?[0-9]{0,3})?(\.[0-9]?)?(e[0-9])? ?\Z")
    | st.text(max_size=8)
)
@settings(max_examples=500, deadline=None)
def test_a_fraction_read_twice_is_fraction_of_its_text(text: str) -> None:
    """Breakages are parsed once per text and kept: the same value, or error, each time."""
    for _ in range(2):
        assert _outcome(codec._fraction_in, text) == _outcome(Fraction, text)
