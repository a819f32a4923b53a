"""A throw at a server-dice table, in two writes: the caster's client seed logged alone,
then the dice drawn from the seed logged.

The bank can read the turn's server seed, so it knows the dice the moment a client
seed arrives. Were the seed and the dice written together, it could fail that one write
once it had seen them, and the caster would try again with a fresh seed at the same
nonce, the refused one leaving no trace. So the seed goes into the log first, in a
write of its own with its own receipt (`ClientSeedGiven`, engine.play.give_seed), and
only then is anything drawn from it: the second write draws the throw from the seed
the log holds for it (engine.play.server_throw). A draw that fails is drawn again from
that seed when the throw is sent again with it; another seed for the throw is refused
(`seed-already-given`), and nothing else happens at the table until it is drawn
(`draw-pending`). What the bank can still do is refuse to log a seed at all: a stall,
which the caster outlasts by keeping the seed and sending it again, never a new one,
until the answer holds the receipt of the write that logged it.

One call does both writes and answers with the draw's events and receipt, and under
`seed_given` the seed's event and the receipt of the write that logged it (that
attempt's or an earlier one's). The Idempotency-Key answers each write once: the seed's
write is kept under the key and " seed" (a space, which no key a client sends holds).
If-Match names the table's version before the seed was logged, or, when the same seed
is already logged, the version it left.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

import engine as hz
from engine import serverdice
from ledger.commands import Caller, Role, Sent, caster_only
from ledger.service import Club, Decide, Forbidden, Reads, StaleVersion, event_view
from ledger.store.log import receipts

SEED_KEY = " seed"
"""What the seed's write adds to the throw's Idempotency-Key."""


def throw(
    club: Club, table: str, caller: Caller, client_seed: str, sent: Sent, elsewise: Decide
) -> dict[str, Any]:
    """The caster's throw from `client_seed`: logged, then drawn. `elsewise` is the
    throw as a croupier table takes it, run instead where the table is not one with
    server dice (its refusals are the same as ever)."""
    given = None
    if club.state(table).client_seed != client_seed:  # a repeat has nothing more to log
        given = _give(club, table, caller, client_seed, sent, elsewise)
    return _draw(club, table, caller, client_seed, sent, given)


def _give(
    club: Club, table: str, caller: Caller, client_seed: str, sent: Sent, elsewise: Decide
) -> dict[str, Any] | None:
    """Log the seed; the write's events and receipt (None if it logged nothing: the
    same seed was logged by an attempt that raced this one)."""

    def decide(st: hz.TableState, reads: Reads) -> list[hz.Event]:
        if st.dice != serverdice.SERVER:
            return elsewise(st, reads)
        require_thrower(caller, st)
        reads.server_seed()  # a turn whose seed this database lacks logs nothing to draw
        return hz.give_seed(st, client_seed)

    key = sent.get("key")
    answer = club.command(
        table,
        caller.actor,
        decide,
        key=None if key is None else key + SEED_KEY,
        if_match=sent.get("if_match"),
        request=sent.get("request"),
    )
    if not answer.get("events"):
        return None
    return {"events": answer["events"], "receipt": answer.get("receipt")}


def _draw(
    club: Club,
    table: str,
    caller: Caller,
    client_seed: str,
    sent: Sent,
    logged: dict[str, Any] | None,
) -> dict[str, Any]:
    """Draw the throw from the seed logged for it. `logged`: the seed's write, as this
    call made it; when an earlier attempt made it, it is read back from the log."""
    if_match = sent.get("if_match")
    given: dict[str, Any] = {}

    def decide(st: hz.TableState, reads: Reads) -> list[hz.Event]:
        require_thrower(caller, st)
        if if_match is not None and if_match not in (st.version - 1, st.version):
            raise StaleVersion(if_match, st.version)
        # Drawn from the seed the log holds for this throw: server_throw refuses any
        # other (and a throw with none logged), so the seed logged is the one drawn.
        die1, die2 = serverdice.draw(reads.server_seed(), client_seed, st.nonce)
        events = hz.server_throw(st, client_seed, die1, die2)
        given.update(conn=reads.conn, stream=reads.stream, version=st.version)
        return events

    return club.command(
        table,
        caller.actor,
        decide,
        key=sent.get("key"),
        request=sent.get("request"),
        respond=lambda: {"seed_given": logged or seed_given(**given)},
    )


def seed_given(conn: sa.Connection, stream: str, version: int) -> dict[str, Any]:
    """The `ClientSeedGiven` at `version` of `stream`, and the receipt of the write that
    logged it: the positions from it to the size of the checkpoint that write signed
    (the first checkpoint whose tree holds it; nothing else was written between)."""
    recorded, found = receipts.at_version(conn, stream, version)
    receipt = None
    if found.size is not None:
        positions = list(range(recorded.position, found.size + 1))
        receipt = {"positions": positions, "checkpoint": found.note}
    return {"events": [event_view(recorded)], "receipt": receipt}


def require_thrower(caller: Caller, st: hz.TableState) -> None:
    """Who may give a server throw's client seed: the caster, or the croupier for them."""
    if caller.role is Role.SETTER:
        # Whoever could know the server seed must not choose the client seed: with both
        # they would choose the dice. The setter's service keeps the seeds.
        raise Forbidden(
            "the setter is a party to the bets and keeps the server seeds: the caster, or "
            "the croupier for them, gives the client seed"
        )
    caster_only(caller, st)
