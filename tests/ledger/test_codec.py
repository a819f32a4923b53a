"""Every event type survives storage encoding exactly, and hashes canonically."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine as hz
from ledger.store import codec
from ledger.store.evenings_events import (
    CashCounted,
    EveningClosed,
    EveningOpened,
    FloatCounted,
)
from ledger.store.limits_events import BreakTaken, LimitSet
from ledger.store.vocabulary import LogSealed
from tests.ledger.everyevent import a_server_dice_turn, a_table_with_every_event
from tests.ledger.everysignificant import every_significant_event

A_PLAYERS_LIMITS = (
    LimitSet(4, "player:ann", "stake", 500, "2026-11-27T10:00:00.000000Z"),
    LimitSet(5, "player:ann", "deposit_24h", None, "2026-11-28T10:00:00.000000Z"),
    BreakTaken(6, "player:ann", "time-out", "2026-11-29T10:00:00.000000Z"),
)


def test_every_event_type_round_trips() -> None:
    seal = LogSealed(version=1, root="ab" * 32, heads=3)  # the log's own stream
    evening = [  # the club's evenings (club:evenings), the cage's place null
        EveningOpened(1, 1),
        FloatCounted(2, 1, "t1", 5000),
        FloatCounted(3, 1, None, 0),
        CashCounted(4, 1, "t1", 4890, 4900, -10),
        EveningClosed(5, 1),
    ]
    log = [
        *a_table_with_every_event(),
        *a_server_dice_turn(),
        seal,
        *evening,
        *A_PLAYERS_LIMITS,
        *every_significant_event(),
    ]
    kinds = {type(e).__name__ for e in log}
    account_events = {"AccountOpened", "Deposited", "Withdrawn", "CreditLimitSet"}  # test_book.py
    assert kinds >= set(codec.EVENT_TYPES) - {"CasterForfeited"} - account_events
    for event in log:
        name, schema, payload = codec.encode(event)
        assert codec.decode(name, schema, event.version, payload) == event
        # And through the canonical JSON text the store keeps.
        again = json.loads(codec.canonical(payload))
        assert codec.decode(name, schema, event.version, again) == event


def test_breakage_is_stored_as_an_exact_fraction() -> None:
    log = a_table_with_every_event()
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
    from ledger.store.eventstore import decode_row, decode_rows

    class Row:
        def __init__(self, *values: object) -> None:
            self.position, self.type, self.schema_version, self.version, self.payload = values

        def columns(self) -> tuple:  # type: ignore[type-arg]
            """What EventStore.load fetches: the position is asked for on failure."""
            return (self.type, self.schema_version, self.version, self.payload)

    def positions(rows: list[Row]):  # type: ignore[no-untyped-def]
        return {r.version: r.position for r in rows}.__getitem__

    good = []
    for position, event in enumerate(a_table_with_every_event(), start=101):
        name, schema, payload = codec.encode(event)
        good.append(Row(position, name, schema, event.version, codec.canonical(payload).decode()))
    decoded = decode_rows([r.columns() for r in good], positions(good))
    assert decoded == [decode_row(r) for r in good]
    # Twice over: the second time round, payloads come from what the first decoded.
    twice = good + [
        Row(r.position + 1000, *r.columns()[:2], r.version + 1000, r.payload) for r in good
    ]
    again = decode_rows([r.columns() for r in twice], positions(twice))
    assert again == [decode_row(r) for r in twice]
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
            # After a good row with the same payload text, so a remembered payload
            # cannot stand in for a bad row either.
            rows = [row, bad]
            assert _outcome(
                lambda rows=rows: decode_rows([r.columns() for r in rows], positions(rows))[1]
            ) == _outcome(lambda b=bad: decode_row(b))


def test_every_event_class_takes_its_version_first() -> None:
    """decode_rows builds events positionally: `cls(version, *payload fields)`."""
    import dataclasses

    for cls in codec.EVENT_TYPES.values():
        assert dataclasses.fields(cls)[0].name == "version", cls.__name__


def test_payload_text_is_the_canonical_encoding_of_the_payload() -> None:
    """Appends write payloads field by field; the text must be exactly what encoding
    the payload dict canonically gives, or stored hashes would not verify."""
    from ledger.store.vocabulary import AccountOpened, CreditLimitSet, Deposited, Withdrawn

    events = [
        *a_table_with_every_event(),
        AccountOpened(version=1, account="player:ann"),
        Deposited(version=1, account='player:"odd\\name\u00e9\x01', amount=10**30),
        Withdrawn(version=2, account="player:ann", amount=1),
        CreditLimitSet(version=3, account="player:ann", limit=0),
        *A_PLAYERS_LIMITS,
    ]
    for event in events:
        name, schema, payload = codec.encode(event)
        assert codec.payload_text(event) == (name, schema, codec.canonical(payload).decode())


def test_payload_text_refuses_what_is_not_an_event() -> None:
    with pytest.raises(TypeError, match="not an event type"):
        codec.payload_text(object())  # type: ignore[arg-type]


def _outcome(decode: object) -> object:
    """The event decoded, or the error's position and message."""
    from ledger.store.eventstore import CorruptEvent

    try:
        return decode()  # type: ignore[operator]
    except CorruptEvent as exc:
        return (exc.position, str(exc))


def test_the_frame_is_the_canonical_document() -> None:
    """Hashing splices the stored payload text in; for a canonical payload that must be
    byte for byte the canonical encoding of the whole document."""
    from ledger.store.eventstore import Recorded

    for position, event in enumerate(a_table_with_every_event(), start=1):
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


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@given(
    st.text(),
    st.text(),
    st.none() | st.text(),
    st.text(),
    st.integers(min_value=0),
    st.integers(min_value=0),
    st.text(),
    st.integers(min_value=0),
    _JSON,
)
@settings(max_examples=300, deadline=None)
def test_the_frame_is_canonical_for_any_columns(
    stream: str,
    actor: str,
    key: str | None,
    recorded_at: str,
    position: int,
    version: int,
    type_: str,
    schema: int,
    value: object,
) -> None:
    raw = codec.canonical({"v": value})[len(b'{"v":') : -1].decode()
    document = {
        "position": position,
        "stream": stream,
        "version": version,
        "type": type_,
        "schema_version": schema,
        "payload": value,
        "actor": actor,
        "idempotency_key": key,
        "recorded_at": recorded_at,
    }
    framed = codec.frame(
        codec.Quoted(), position, stream, version, type_, schema, raw, actor, key, recorded_at
    )
    assert framed == codec.canonical(document)


def test_the_chain_hash_is_the_formula_written_beside_it() -> None:
    """hex(SHA-256(prev_hash || "\\n" || record)), computed from the comment in codec.py."""
    import hashlib

    from ledger.store.eventstore import GENESIS

    record = codec.frame(
        codec.Quoted(), 1, "table:t", 1, "TableClosed", 1, "{}", "setter:bank", None,
        "2026-01-01T00:00:00+00:00",
    )  # fmt: skip
    first = codec.chain_hash(GENESIS, record)
    assert first == hashlib.sha256(b"0" * 64 + bytes([0x0A]) + record).hexdigest()
    second = codec.chain_hash(first, record)
    assert second == hashlib.sha256(first.encode("ascii") + b"\x0a" + record).hexdigest()


def test_a_table_opened_before_the_caps_were_recorded_reads_and_encodes_as_stored() -> None:
    """Limits.caps is recorded only from its second edition: a TableOpened stored
    before carries none, reads as the first edition, and encodes to the bytes it was
    stored as; one opened now says which edition it plays under."""
    name, schema, payload = codec.encode(
        hz.open_table(hz.BUILTIN["english"], hz.Limits(min_stake=5))[0]
    )
    assert payload["limits"] == {"min_stake": 5, "max_stake": None, "max_exposure": None, "caps": 2}
    old = {**payload, "limits": {"min_stake": 5, "max_stake": None, "max_exposure": None}}
    event = codec.decode(name, schema, 1, old)
    assert event.limits == hz.Limits(min_stake=5, caps=1)  # type: ignore[attr-defined]
    assert codec.encode(event)[2] == old
    for edition in (0, 1, 3, "2"):
        with pytest.raises(codec.DecodeError):
            codec.decode(name, schema, 1, {**payload, "limits": {**old["limits"], "caps": edition}})
