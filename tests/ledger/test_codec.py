"""Every event type survives storage encoding exactly, and hashes canonically."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine as hz
from engine.events import Proposition, PropositionKind
from engine.rules import from_mapping
from ledger import codec


def _a_table_with_every_event() -> list[hz.Event]:
    mapping = hz.BUILTIN["hard-core"].to_mapping() | {"rounding": "round-down", "name": "x"}
    rules = from_mapping(mapping | {"main": "called", "cover": "refuse"})
    log: list[hz.Event] = []
    state = hz.INITIAL

    def do(events: list[hz.Event]) -> None:
        nonlocal state
        log.extend(events)
        state = hz.fold(events, state)

    do(hz.open_table(rules, hz.Limits(min_stake=1, max_stake=10_000, max_exposure=100_000)))
    for p in ("ann", "bob", "cat"):
        do(hz.seat(state, p))
    for p, d in (("ann", 2), ("bob", 5), ("cat", 6)):
        do(hz.cast_for_caster(state, p, d))
    do(hz.call_main(state, 7))
    do(hz.stake(state, 100))
    do(hz.lay(state, "bob", 50))
    do(hz.cover(state, 1000))
    do(hz.lay(state, "cat", 30))
    do(hz.refuse(state, state.open_bets[-1].id))
    offer = hz.offer_side_bet(
        state, "cat", Proposition(PropositionKind.NEXT_TOTAL, frozenset({2, 12})), True, 10, 300
    )
    do(offer)
    do(hz.accept_side_bet(state, offer[0].bet_id, "setter"))
    do(hz.void_throw(state, "cocked", 1, standing=4))
    do(hz.throw(state, 1, 4))  # die 2 stood at 4; chance 5
    do(hz.lay_odds(state, "ann", "chance", 7))  # 6/4 * 7 = 10.5: breakage 1/2
    do(hz.throw(state, 4, 3))  # main: caster loses
    do(hz.leave(state, "ann"))
    do(hz.close(state))
    return log


def test_every_event_type_round_trips() -> None:
    log = _a_table_with_every_event()
    kinds = {type(e).__name__ for e in log}
    account_events = {"Deposited", "Withdrawn", "CreditLimitSet"}  # test_book.py
    assert kinds >= set(codec.EVENT_TYPES) - {"CasterForfeited"} - account_events
    for event in log:
        name, schema, payload = codec.encode(event)
        assert codec.decode(name, schema, event.version, payload) == event
        # And through the canonical JSON text the store keeps.
        again = json.loads(codec.canonical(payload))
        assert codec.decode(name, schema, event.version, again) == event


def test_breakage_is_stored_as_an_exact_fraction() -> None:
    log = _a_table_with_every_event()
    laid = next(e for e in log if type(e).__name__ == "OddsLaid")
    assert laid.breakage == Fraction(1, 2)
    assert codec.encode(laid)[2]["breakage"] == "1/2"


def test_canonical_encoding_sorts_keys_and_refuses_floats() -> None:
    assert codec.canonical({"b": 1, "a": [2, "x"]}) == b'{"a":[2,"x"],"b":1}'
    with pytest.raises(ValueError):
        codec.canonical({"a": float("nan")})


def test_decode_refuses_unknown_types_versions_and_shapes() -> None:
    with pytest.raises(codec.DecodeError, match="unknown event type"):
        codec.decode("Nope", 1, 1, {})
    with pytest.raises(codec.DecodeError, match="schema version 2"):
        codec.decode("DiceThrown", 2, 1, {"die1": 1, "die2": 2})
    with pytest.raises(codec.DecodeError, match="payload has fields"):
        codec.decode("DiceThrown", 1, 1, {"die1": 1})


def test_the_fast_batch_decoder_agrees_with_the_careful_one() -> None:
    """store.decode_rows takes shortcuts; on good and bad rows alike it must give the
    same events, or the same CorruptEvent at the same position, as decode_row."""
    from ledger.store import decode_row, decode_rows

    class Row:
        def __init__(self, *values: object) -> None:
            self.position, self.type, self.schema_version, self.version, self.payload = values

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter((self.position, self.type, self.schema_version, self.version, self.payload))

    good = []
    for position, event in enumerate(_a_table_with_every_event(), start=1):
        name, schema, payload = codec.encode(event)
        good.append(Row(position, name, schema, event.version, codec.canonical(payload).decode()))
    assert decode_rows(good) == [decode_row(r) for r in good]
    spoilt = [
        lambda r: Row(r.position, r.type, r.schema_version, r.version, r.payload + " x"),
        lambda r: Row(r.position, r.type, r.schema_version, r.version, r.payload[:-1]),
        lambda r: Row(r.position, r.type, 7, r.version, r.payload),
        lambda r: Row(r.position, "Nope", r.schema_version, r.version, r.payload),
        lambda r: Row(r.position, r.type, r.schema_version, r.version, "[]"),
        lambda r: Row(r.position, r.type, r.schema_version, r.version, "{}"),
    ]
    for spoil in spoilt:
        for row in good:
            bad = spoil(row)
            assert _outcome(lambda b=bad: decode_rows([b])[0]) == _outcome(
                lambda b=bad: decode_row(b)
            )


def _outcome(decode: object) -> object:
    """The event decoded, or the error's position and message."""
    from ledger.store import CorruptEvent

    try:
        return decode()  # type: ignore[operator]
    except CorruptEvent as exc:
        return (exc.position, str(exc))


def test_the_spliced_hash_input_is_the_canonical_document() -> None:
    """Hashing splices the stored payload text in; for a canonical payload that must be
    byte for byte the canonical encoding of the whole document."""
    from ledger.store import Recorded

    for position, event in enumerate(_a_table_with_every_event(), start=1):
        name, schema, payload = codec.encode(event)
        row = Recorded(
            position,
            "table:1",
            event.version,
            name,
            schema,
            codec.canonical(payload).decode(),
            "ann",
            None,
            "2026-11-20T00:00:00Z",
            "0" * 64,
            "",
        )
        assert row.hashed() == codec.canonical(row.document())
    assert codec.canonical_spliced({}, "p", "[1]") == b'{"p":[1]}'
    assert codec.canonical_spliced({"a": 1, "z": 2}, "p", "{}") == b'{"a":1,"p":{},"z":2}'


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


_SCALAR = st.none() | st.booleans() | st.integers() | st.text()


@given(
    st.dictionaries(st.text(max_size=12).filter(lambda k: k != "payload"), _SCALAR, max_size=8),
    _JSON,
)
@settings(max_examples=300, deadline=None)
def test_splicing_a_canonical_value_is_canonical_encoding(document: dict, value: object) -> None:  # type: ignore[type-arg]
    raw = codec.canonical({"v": value})[len(b'{"v":') : -1].decode()
    assert codec.canonical_spliced(document, "payload", raw) == codec.canonical(
        {**document, "payload": value}
    )


def test_splicing_refuses_a_nested_document() -> None:
    # A nested object's keys are not escaped, so a later key's marker could occur
    # inside it: the splice would land in the wrong place.
    with pytest.raises(ValueError, match="flat"):
        codec.canonical_spliced({"": {"q": None}, "q": None}, "payload", "null")
