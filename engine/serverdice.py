"""Provably fair server dice: how a throw is drawn from a committed seed, and when a
caster's turn commits to a seed and reveals it.

At a server-dice table the ledger draws a secret 32-byte server seed for each caster's
turn and the turn opens with its commitment, SHA-256 of the seed (`SeedCommitted`).
With each throw the caster gives a fresh client seed, after the bets on that throw are
placed. It is logged first, alone (`ClientSeedGiven`, engine.play.give_seed), and the
throw is then drawn from it and nothing else (`require_logged`, `require_draw_next`):
the bank, which knows the server seed and so the dice the moment the seed arrives,
can refuse or stall the draw but cannot have it drawn from another seed. The dice are

    block(c) = HMAC-SHA256(key=server seed, msg=f"{client_seed}:{nonce}:{c}")

read a byte at a time from block 0, then block 1, ...: a byte below 252 gives the die
byte % 6 + 1, and a byte from 252 up is passed over (252 = 42 * 6, so each face takes
42 of the 252 byte values kept: uniform, no modulo bias). The first two dice read are
die 1 and die 2. `nonce` counts the turn's throws from 0. When the turn ends, the seed
is revealed (`SeedRevealed`) and anyone can draw every throw of the turn again.

Pure: hashlib and hmac only. The engine never draws a seed or a throw for the table;
the dice come in as data (`engine.play.server_throw`) and a replay plays the recorded
dice. `draw` is here so that the referee, a player and the offline verifier compute
exactly what the ledger computed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeGuard

from engine import events as ev
from engine.errors import Rule, RuleBroken
from engine.state import TableState

CROUPIER = "croupier"
SERVER = "server"
DICE = (CROUPIER, SERVER)
"""Who may throw a table's dice: the croupier enters them, or the server draws them."""

SEED_BYTES = 32
KEPT = 252
"""Bytes below this give a die (252 = 42 * 6); the rest are passed over."""
CLIENT_SEED = re.compile(r"[ -~]{1,64}")
"""A client seed: 1 to 64 printable ASCII characters (space to tilde: nothing to normalise)."""
_HEX64 = re.compile(r"[0-9a-f]{64}")


def blocks(server_seed: bytes, client_seed: str, nonce: int) -> Iterator[bytes]:
    """HMAC-SHA256(server_seed, f"{client_seed}:{nonce}:{cursor}") for cursor 0, 1, ..."""
    cursor = 0
    while True:
        yield hmac.digest(server_seed, f"{client_seed}:{nonce}:{cursor}".encode(), "sha256")
        cursor += 1


def dice_from(source: Iterable[bytes]) -> tuple[int, int]:
    """The first two dice the blocks give, bytes of 252 and above passed over."""
    dice: list[int] = []
    for block in source:
        for byte in block:
            if byte < KEPT:
                dice.append(byte % 6 + 1)
                if len(dice) == 2:
                    return dice[0], dice[1]
    raise ValueError("the blocks ran out before two dice were read")


def draw(server_seed: bytes, client_seed: str, nonce: int) -> tuple[int, int]:
    """The throw numbered `nonce` of a turn, given its server seed and client seed."""
    return dice_from(blocks(server_seed, client_seed, nonce))


def commit_to(seed: str) -> str:
    """The commitment to a seed given as hex: SHA-256 of its bytes, as lowercase hex."""
    return hashlib.sha256(bytes.fromhex(seed)).hexdigest()


def is_seed(text: object) -> TypeGuard[str]:
    """A server seed or a commitment as events carry them: 64 lowercase hex digits."""
    return isinstance(text, str) and _HEX64.fullmatch(text) is not None


def require_client_seed(client_seed: object) -> str:
    if not isinstance(client_seed, str) or CLIENT_SEED.fullmatch(client_seed) is None:
        raise RuleBroken(
            Rule.INVALID_CLIENT_SEED, "a client seed is 1 to 64 printable ASCII characters"
        )
    return client_seed


def require_server_dice(state: TableState) -> None:
    if state.dice != SERVER:
        raise RuleBroken(
            Rule.CROUPIER_DICE,
            "the croupier enters this table's dice: give die1 and die2, not a client seed",
        )


def require_logged(state: TableState, client_seed: str) -> None:
    """A server throw from `client_seed` on `state`: it must be the seed logged for the
    throw, if one is, and one must be at a table that logs its seeds."""
    given = state.client_seed
    if given is not None and client_seed != given:
        raise already_given(state, client_seed)
    if given is None and state.logs_seeds:
        raise RuleBroken(
            Rule.SEED_NOT_GIVEN,
            f"this table logs each client seed before its throw is drawn: no seed is "
            f"logged for throw {state.nonce} of this turn (ClientSeedGiven)",
        )


def already_given(state: TableState, client_seed: str) -> RuleBroken:
    """`client_seed` offered for a throw that has another seed logged."""
    return RuleBroken(
        Rule.SEED_ALREADY_GIVEN,
        f"the client seed {state.client_seed!r} is already logged for throw {state.nonce} "
        f"of this turn (version {state.version}), and a throw is drawn from the first seed "
        f"logged for it, not from {client_seed!r} (send {state.client_seed!r} again to "
        "draw it)",
    )


def require_draw_next(state: TableState, first: ev.Event) -> None:
    """`first` is the first event a command would write on `state`: while a client seed
    waits for its throw, only that throw (its `DiceDrawn`) may come. A bet, a
    departure, the dice passing or the table closing after the bank has seen the seed,
    and so the dice, would be a last look of its own."""
    given = state.client_seed
    if given is None or isinstance(first, ev.DiceDrawn):
        return
    raise RuleBroken(
        Rule.DRAW_PENDING,
        f"the client seed {given!r} is logged for throw {state.nonce} of this turn: that "
        "throw is drawn from it before anything else happens at the table (send the throw "
        "again with that seed)",
    )


def require_croupier_dice(state: TableState) -> None:
    if state.dice == SERVER:
        raise RuleBroken(
            Rule.SERVER_DICE,
            "the server throws this table's dice: the caster gives a client_seed with each "
            "throw, and no dice are entered",
        )


# -- the turn ------------------------------------------------------------------------


def turn_change(before: TableState, events: Sequence[ev.Event]) -> tuple[bool, bool]:
    """(ends, begins): whether a command's `events`, run on `before`, end the caster's
    turn (its seed must be revealed) and give a caster the dice (a new seed must be
    committed to). Always (False, False) at a croupier table.

    A turn ends when the dice pass (after a throw, by choice, the caster leaving or
    forfeiting) or the table closes; one begins when the first caster is chosen or the
    dice pass to someone (the same player again, if they sit alone)."""
    if before.dice != SERVER:
        return False, False
    ends = before.commitment is not None and any(
        isinstance(e, ev.DicePassed | ev.TableClosed) for e in events
    )
    begins = any(
        isinstance(e, ev.CasterChosen) or (isinstance(e, ev.DicePassed) and e.caster is not None)
        for e in events
    )
    return ends, begins


def seal(
    before: TableState, events: list[ev.Event], seed: str | None, commitment: str | None
) -> list[ev.Event]:
    """Append to a command's `events` (run on `before`) the turn's `SeedRevealed` and the
    next turn's `SeedCommitted`, as `turn_change` says they are due: `seed` (hex) is the
    ending turn's seed, which must hash to its commitment, and `commitment` the next
    seed's. Give None for what is not due. Returns `events`."""
    ends, begins = turn_change(before, events)
    if ends != (seed is not None) or begins != (commitment is not None):
        raise ValueError(
            f"this command {'ends' if ends else 'does not end'} a turn and "
            f"{'begins' if begins else 'does not begin'} one: a seed is revealed and a "
            "commitment given exactly then"
        )
    version = before.version + len(events)
    if seed is not None:
        if not is_seed(seed) or commit_to(seed) != before.commitment:
            raise RuleBroken(
                Rule.SEED_MISMATCH,
                f"the seed revealed does not hash to the turn's commitment {before.commitment}",
            )
        version += 1
        events.append(ev.SeedRevealed(version=version, seed=seed))
    if commitment is not None:
        if not is_seed(commitment):
            raise ValueError("a commitment is SHA-256 as 64 lowercase hex digits")
        events.append(ev.SeedCommitted(version=version + 1, commitment=commitment))
    return events
