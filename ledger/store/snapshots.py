"""Snapshots: folded table state cached by stream and version.

A snapshot is only a cache. Loading a table is the newest snapshot plus the events
after it; a snapshot that is missing, or written by a format this code does not
read, is passed over and the table is folded from its first event. Snapshots can be
deleted at any time.
"""

from __future__ import annotations

import json
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa

import engine as hz
from engine.events import Limits, Proposition, PropositionKind
from engine.rules import from_mapping
from engine.state import Bet, BetKind, Phase, RoundResult
from ledger.store import codec
from ledger.store.eventstore import EventStore
from ledger.store.schema import snapshots

FORMAT = 7
"""2 since the fold ends the round whenever a caster leaves or forfeits, or the table
closes (before the main as after it): a state folded under format 1 may number its
rounds differently from a replay now, so those snapshots are passed over. 3 since
closing ends only a round in play (a caster holding the dice): a format 2 state of a
table closed while seating counts one round more, and one more abandoned. 4 since the
state says who throws the dice and, at a server-dice table, the turn's commitment and
nonce. 5 since the state holds the table's open disputes and the rounds adjusted. 6 since
it holds who opened each open dispute, and the edition of the house caps the table was
opened under (`Limits.caps`); a format 5 state with no dispute open is read as it is
(there is no one to name, and the table was opened under the first caps), one with
disputes open is passed over. 7 since a server-dice table logs each throw's client seed
before drawing it: the state holds the seed waiting for its throw and whether the
table logs its seeds; a format 6 (or 5) state is read as one that has logged none,
which is what the code that wrote it did."""
EVERY = 500
"""Take a snapshot each time a table's version passes a multiple of this."""


def encode_state(state: hz.TableState) -> bytes:
    assert state.rules is not None
    document = {
        "format": FORMAT,
        "version": state.version,
        "phase": state.phase.value,
        "rules": state.rules.to_mapping(),
        "limits": [
            state.limits.min_stake,
            state.limits.max_stake,
            state.limits.max_exposure,
            state.limits.caps,
        ],
        "seats": list(state.seats),
        "caster": state.caster,
        "round": state.round,
        "main": state.main,
        "chance": state.chance,
        "throws": state.throws,
        "streak": [state.consecutive_losses, state.consecutive_wins],
        "last_result": state.last_result.value if state.last_result else None,
        "tally": [state.wins, state.losses, state.abandoned],
        "contest": list(state.contest),
        "casts": dict(state.casts),
        "standing": list(state.standing) if state.standing else None,
        "last_total": state.last_total,
        "dice": [state.dice, state.commitment, state.nonce, state.client_seed, state.logs_seeds],
        "bets": [_bet_out(b) for b in state.bets.values()],
        "disputes": dict(state.disputes),
        "disputed_by": {d: list(who) for d, who in state.disputed_by.items()},
        "adjusted": sorted(state.adjusted),
    }
    return codec.canonical(document)


def decode_state(blob: bytes) -> hz.TableState | None:
    """The state in a snapshot, or None for a format this code does not read."""
    doc = json.loads(blob)
    if doc.get("format") == 5 and not doc.get("disputes"):
        doc = {**doc, "disputed_by": {}}
    elif doc.get("format") not in (6, FORMAT):
        return None
    dice, commitment, nonce, *logged = doc["dice"]  # format 6: no seed logged, ever
    client_seed, logs_seeds = logged or (None, False)
    lo, hi, cap, *caps = doc["limits"]  # format 5: a table opened under the first caps
    return hz.TableState(
        version=doc["version"],
        phase=Phase(doc["phase"]),
        rules=from_mapping(doc["rules"]),
        limits=Limits(lo, hi, cap, caps[0] if caps else 1),
        seats=tuple(doc["seats"]),
        caster=doc["caster"],
        round=doc["round"],
        main=doc["main"],
        chance=doc["chance"],
        throws=doc["throws"],
        consecutive_losses=doc["streak"][0],
        consecutive_wins=doc["streak"][1],
        last_result=RoundResult(doc["last_result"]) if doc["last_result"] else None,
        wins=doc["tally"][0],
        losses=doc["tally"][1],
        abandoned=doc["tally"][2],
        contest=tuple(doc["contest"]),
        casts=MappingProxyType(dict(doc["casts"])),
        standing=(doc["standing"][0], doc["standing"][1]) if doc["standing"] else None,
        last_total=doc["last_total"],
        dice=dice,
        commitment=commitment,
        nonce=nonce,
        client_seed=client_seed,
        logs_seeds=logs_seeds,
        bets=MappingProxyType({b["id"]: _bet_in(b) for b in doc["bets"]}),
        disputes=MappingProxyType(dict(doc["disputes"])),
        disputed_by=MappingProxyType(
            {d: (claimant, role) for d, (claimant, role) in doc["disputed_by"].items()}
        ),
        adjusted=frozenset(doc["adjusted"]),
    )


def _bet_out(bet: Bet) -> dict[str, Any]:
    return {
        "id": bet.id,
        "kind": bet.kind.value,
        "round": bet.round,
        "proposition": [bet.proposition.kind.value, sorted(bet.proposition.totals)],
        "yes": bet.yes,
        "no": bet.no,
        "stakes": [bet.yes_stake, bet.no_stake],
        "pending": bet.pending,
        "offered_to": bet.offered_to,
        "breakage": codec.fraction_text(bet.breakage),
    }


def _bet_in(doc: dict[str, Any]) -> Bet:
    kind, totals = doc["proposition"]
    return Bet(
        doc["id"],
        BetKind(doc["kind"]),
        doc["round"],
        Proposition(PropositionKind(kind), frozenset(totals)),
        doc["yes"],
        doc["no"],
        doc["stakes"][0],
        doc["stakes"][1],
        doc["pending"],
        doc["offered_to"],
        Fraction(doc["breakage"]),
    )


def save(store: EventStore, stream: str, state: hz.TableState) -> None:
    """Cache `state` as the snapshot of `stream` at its version (once per version)."""
    with store.transaction() as conn:
        save_in(conn, stream, state)


def save_in(conn: sa.Connection, stream: str, state: hz.TableState) -> None:
    """As `save`, inside the caller's transaction."""
    exists = conn.execute(
        sa.select(snapshots.c.version).where(
            snapshots.c.stream == stream, snapshots.c.version == state.version
        )
    ).first()
    if exists is None:
        conn.execute(
            snapshots.insert().values(
                stream=stream, version=state.version, state=encode_state(state)
            )
        )


def load(store: EventStore, stream: str, at_version: int | None = None) -> hz.TableState:
    """The table's state: the newest readable snapshot plus the tail. With `at_version`,
    the state as of that version (the newest snapshot at or before it, plus the events
    after it through that version): what replays and disputes read the past with."""
    state = hz.INITIAL
    query = sa.select(snapshots.c.version, snapshots.c.state).where(snapshots.c.stream == stream)
    if at_version is not None:
        query = query.where(snapshots.c.version <= at_version)
    with store.engine.connect() as conn:
        rows = conn.execute(query.order_by(snapshots.c.version.desc()).limit(3)).all()
    for row in rows:
        cached = decode_state(row.state)
        if cached is not None:
            state = cached
            break
    return hz.fold(store.load(stream, state.version, at_version), state)


def before(conn: sa.Connection, stream: str, version: int) -> hz.TableState:
    """The newest readable snapshot of the table taken before `version`, in `conn`'s
    transaction, or the state before its first event. A snapshot is taken as a write
    ends, so it lies between two commands: where the referee may begin."""
    rows = conn.execute(
        sa.select(snapshots.c.state)
        .where(snapshots.c.stream == stream, snapshots.c.version < version)
        .order_by(snapshots.c.version.desc())
        .limit(3)
    ).all()
    for row in rows:
        cached = decode_state(row.state)
        if cached is not None:
            return cached
    return hz.INITIAL


def due(before: int, after: int, every: int = EVERY) -> bool:
    """Whether appending took the stream past a multiple of `every`."""
    return after // every > before // every
