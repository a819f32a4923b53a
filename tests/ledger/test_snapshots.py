"""Snapshots are a cache: snapshot plus tail is full replay, and losing them is harmless."""

from __future__ import annotations

import dataclasses
import json

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as hz
from engine.fold import _Table
from engine.state import Bet
from ledger.store import snapshots
from ledger.store.eventstore import EventStore
from ledger.store.schema import snapshots as snapshot_table
from tests.engine.strategies import History, histories


def test_state_survives_the_snapshot_encoding() -> None:
    @given(histories())
    @settings(max_examples=60, deadline=None)
    def check(h: History) -> None:
        if h.state.rules is not None:
            assert snapshots.decode_state(snapshots.encode_state(h.state)) == h.state

    check()


def _store_history(store: EventStore, stream: str, events: list[hz.Event], cut: int) -> None:
    """Append `events` in two batches, snapshotting the state at `cut`."""
    with store.transaction() as conn:
        store.append(conn, stream, 0, events[:cut], actor="test")
    snapshots.save(store, stream, hz.fold(events[:cut]))
    with store.transaction() as conn:
        store.append(conn, stream, cut, events[cut:], actor="test")


def test_snapshot_plus_tail_equals_full_replay(store: EventStore, engine: sa.Engine) -> None:
    counter = iter(range(10**6))

    @given(histories(), st.data())
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    def check(h: History, data: st.DataObject) -> None:
        if len(h.events) < 2:
            return
        stream = f"table:{next(counter)}"
        cut = data.draw(st.integers(1, len(h.events)))
        _store_history(store, stream, h.events, cut)
        full = hz.fold(store.load(stream))
        assert snapshots.load(store, stream) == full == h.state
        # The past too: any version, from the snapshot at or before it (or none).
        at = data.draw(st.integers(1, len(h.events)))
        assert snapshots.load(store, stream, at_version=at) == hz.fold(h.events[:at])
        assert store.load(stream, at - 1, at) == h.events[at - 1 : at]

    check()


def test_losing_or_spoiling_snapshots_changes_nothing(store: EventStore, engine: sa.Engine) -> None:
    events = hz.open_table(hz.BUILTIN["english"])
    state = hz.fold(events)
    for p in ("ann", "bob"):
        new = hz.seat(state, p)
        events += new
        state = hz.fold(new, state)
    _store_history(store, "table:1", events, 2)
    assert snapshots.load(store, "table:1") == state
    with engine.begin() as conn:  # a snapshot in a format this code does not read
        conn.execute(snapshot_table.update().values(state=b'{"format": 99}'))
    assert snapshots.load(store, "table:1") == state
    with engine.begin() as conn:
        conn.execute(snapshot_table.delete())
    assert snapshots.load(store, "table:1") == state


def test_snapshots_are_due_each_time_a_multiple_is_passed() -> None:
    assert snapshots.due(499, 500)
    assert snapshots.due(498, 503)
    assert not snapshots.due(500, 999)
    assert snapshots.due(999, 1000, every=500)


def test_the_book_takes_a_snapshot_every_n_events(
    store: EventStore, engine: sa.Engine, monkeypatch: object
) -> None:
    from ledger.unit_of_work import UnitOfWork

    monkeypatch.setattr(snapshots, "EVERY", 3)  # type: ignore[attr-defined]
    state = hz.INITIAL
    commands = [
        lambda s: hz.open_table(hz.BUILTIN["english"]),
        *[lambda s, p=p: hz.seat(s, p) for p in ("ann", "bob", "cat", "dan", "eve", "fay")],
    ]
    for command in commands:
        events = command(state)
        with UnitOfWork(store) as uow:
            _, after = uow.play("table:1", state, events, "t")
            uow.commit()
        state = after
    with engine.connect() as conn:
        versions = conn.execute(sa.select(snapshot_table.c.version)).scalars().all()
    assert sorted(versions) == [3, 6]
    assert snapshots.load(store, "table:1") == state


def test_a_snapshot_folded_before_closing_ended_only_a_round_in_play_is_passed_over(
    store: EventStore, engine: sa.Engine
) -> None:
    """Format 2 states closed a table emptied by its casters as if a round were in play
    (one more round, one more abandoned); a replay now does not, so they are not read."""
    state = hz.fold(hz.open_table(hz.BUILTIN["english"]))
    events = list(hz.open_table(hz.BUILTIN["english"]))
    for command, args in [
        (hz.seat, ("p1",)),
        (hz.seat, ("p2",)),
        (hz.cast_for_caster, ("p1", 1)),
        (hz.cast_for_caster, ("p2", 3)),
        (hz.leave, ("p1",)),
        (hz.leave, ("p2",)),
        (hz.close, ()),
    ]:
        new = command(state, *args)
        events += new
        state = hz.fold(new, state)
    assert (state.round, state.abandoned) == (3, 2)
    with store.transaction() as conn:
        store.append(conn, "table:1", 0, events, actor="test")
    old = dataclasses.replace(state, round=4, abandoned=3)  # as format 2 folded it
    blob = json.loads(snapshots.encode_state(old))
    blob["format"] = 2
    with engine.begin() as conn:
        conn.execute(
            snapshot_table.insert().values(
                stream="table:1", version=state.version, state=json.dumps(blob).encode()
            )
        )
    assert snapshots.load(store, "table:1") == state


PACKED = {
    "streak": ("consecutive_losses", "consecutive_wins"),
    "tally": ("wins", "losses", "abandoned"),
    "stakes": ("yes_stake", "no_stake"),
    "dice": ("dice", "commitment", "nonce", "client_seed", "logs_seeds"),
}
"""Snapshot keys that hold several fields, in a list; every other key is a field's name."""


def _fields_in(document: dict[str, object]) -> set[str]:
    return {field for key in document for field in PACKED.get(key, (key,))}


def test_the_state_the_fold_and_the_snapshot_hold_the_same_fields() -> None:
    """A field added to TableState must be added to the fold's mutable copy and to the
    snapshot too, or a replay or a snapshot would silently drop it."""
    fields = {f.name for f in dataclasses.fields(hz.TableState)}
    # The fold's copy keeps one slot more: `first_throw`, the main's row of the rule
    # set's first-throw table, derived from `rules` and `main` (not state of its own).
    assert "first_throw" not in fields
    assert set(_Table.__slots__) == fields | {"first_throw"}, "engine.fold._Table"
    state = hz.fold(hz.open_table(hz.BUILTIN["english"]))
    document = json.loads(snapshots.encode_state(state))
    assert _fields_in(document) - {"format"} == fields, "snapshots.encode_state"


def test_a_bet_and_its_snapshot_hold_the_same_fields() -> None:
    bet = Bet(
        "b1",
        hz.BetKind.SIDE,
        1,
        hz.Proposition(hz.PropositionKind.CASTER_WINS),
        "ann",
        None,
        5,
        5,
        pending=True,
    )
    assert _fields_in(snapshots._bet_out(bet)) == {f.name for f in dataclasses.fields(Bet)}


def test_a_server_dice_table_mid_turn_round_trips() -> None:
    """Who throws the dice, the turn's commitment, its nonce and the client seed logged
    for the next throw survive a snapshot."""
    state = hz.fold(hz.open_table(hz.BUILTIN["club"], dice="server"))
    state = dataclasses.replace(
        state, commitment="ab" * 32, nonce=7, client_seed="ann's", logs_seeds=True
    )
    assert snapshots.decode_state(snapshots.encode_state(state)) == state
    dice = ["server", "ab" * 32, 7, "ann's", True]
    assert json.loads(snapshots.encode_state(state))["dice"] == dice


def test_a_format_6_snapshot_is_read_as_a_table_that_logged_no_seed() -> None:
    """Format 7 holds the client seed waiting for its throw: a format 6 state was
    written by code that logged none, and is read as it is."""
    state = hz.fold(hz.open_table(hz.BUILTIN["club"], dice="server"))
    state = dataclasses.replace(state, commitment="ab" * 32, nonce=7)
    blob = json.loads(snapshots.encode_state(state))
    blob["format"], blob["dice"] = 6, ["server", "ab" * 32, 7]
    assert snapshots.decode_state(json.dumps(blob).encode()) == state


def test_a_format_5_snapshot_is_read_only_when_no_dispute_is_open() -> None:
    """Format 6 names who opened each open dispute (the caps on disputes count them): a
    format 5 state with none open has no one to name, and is read as it is."""
    state = hz.fold(hz.open_table(hz.BUILTIN["english"]))
    blob = json.loads(snapshots.encode_state(state))
    del blob["disputed_by"]
    blob["format"] = 5
    assert snapshots.decode_state(json.dumps(blob).encode()) == state
    blob["disputes"] = {"d9": 1}
    assert snapshots.decode_state(json.dumps(blob).encode()) is None
    opened = dataclasses.replace(state, disputes={"d9": 1}, disputed_by={"d9": ("bob", "player")})
    assert snapshots.decode_state(snapshots.encode_state(opened)) == opened
