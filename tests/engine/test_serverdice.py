"""Server dice: the draw (pure, uniform, deterministic), the turn's commitment and
reveal as the commands derive them, and the referee holding every throw of a turn to
its revealed seed."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import random
from collections import Counter
from typing import Any

import pytest

import engine
from engine import events as ev
from engine import serverdice
from engine.errors import Disagreement, Rule, RuleBroken
from engine.fold import INITIAL, fold
from engine.referee import Referee
from engine.rulesets import BUILTIN
from engine.state import TableState
from tests.engine.serverkit import ServerGame

SEED = bytes(range(32))


def by_hand(seed: bytes, client_seed: str, nonce: int) -> tuple[int, int]:
    """The draw as docs/player.md tells a player to do it, written again here."""
    dice: list[int] = []
    cursor = 0
    while len(dice) < 2:
        msg = f"{client_seed}:{nonce}:{cursor}".encode()
        for b in hmac.new(seed, msg, hashlib.sha256).digest():
            if b < 252 and len(dice) < 2:
                dice.append(b % 6 + 1)
        cursor += 1
    return dice[0], dice[1]


# -- the draw ---------------------------------------------------------------------------


def test_a_known_vector() -> None:
    """Seed 00 01 02 .. 1f, client seed "ann", nonce 0: HMAC block 0 begins 65 7e, so
    the dice are 0x65 % 6 + 1 = 6 and 0x7e % 6 + 1 = 1."""
    block = hmac.new(SEED, b"ann:0:0", hashlib.sha256).digest()
    assert block.hex() == "657e2ce639bf34fb938904159a3cf94a4f2e3ee2e85f08e164911040933b708b"
    assert serverdice.draw(SEED, "ann", 0) == (6, 1)


def test_the_draw_is_the_hand_written_one_deterministic_and_in_range() -> None:
    rng = random.Random(7)
    for n in range(2000):
        seed = rng.randbytes(32)
        client = f"c{rng.randrange(10**9)}"
        dice = serverdice.draw(seed, client, n)
        assert dice == by_hand(seed, client, n) == serverdice.draw(seed, client, n)
        assert all(1 <= d <= 6 for d in dice)


def test_bytes_from_252_up_are_passed_over_and_the_next_block_read() -> None:
    # Block 0: every byte rejected but the last (5 -> die 6); block 1: 252..255
    # rejected again, then 0 (die 1).
    first = bytes([252, 253, 254, 255] * 7 + [255, 254, 253, 5])
    second = bytes([255, 252, 0]) + bytes(29)
    assert serverdice.dice_from([first, second]) == (6, 1)
    # 251 is the last byte kept: 251 % 6 + 1 = 6.
    assert serverdice.dice_from([bytes([251, 250]) + bytes(30)]) == (6, 5)
    with pytest.raises(ValueError):
        serverdice.dice_from([bytes([255] * 32)])


def test_each_face_takes_42_of_the_252_bytes_kept() -> None:
    faces = Counter(b % 6 + 1 for b in range(serverdice.KEPT))
    assert faces == dict.fromkeys(range(1, 7), 42)


def test_the_blocks_are_the_hmac_of_client_seed_nonce_and_cursor() -> None:
    """Block c is HMAC-SHA256(seed, "client:nonce:c"): the cursor counts the blocks."""
    got = list(zip(range(3), serverdice.blocks(SEED, "x", 4), strict=False))
    assert [block for _, block in got] == [
        hmac.new(SEED, f"x:4:{c}".encode(), hashlib.sha256).digest() for c in range(3)
    ]


def test_commitment_and_client_seeds() -> None:
    seed = SEED.hex()
    assert serverdice.commit_to(seed) == hashlib.sha256(SEED).hexdigest()
    assert serverdice.is_seed(seed) and not serverdice.is_seed(seed.upper())
    assert serverdice.require_client_seed("a" * 64) == "a" * 64
    for bad in ("", "a" * 65, "tab\there", "é", 7):
        with pytest.raises(RuleBroken) as info:
            serverdice.require_client_seed(bad)
        assert info.value.rule is Rule.INVALID_CLIENT_SEED


# -- a server-dice table, played as the ledger plays it ---------------------------------


def referee(events: list[ev.Event], state: TableState = INITIAL) -> Referee:
    r = Referee(state)
    for e in events:
        r.check(e)
    r.finish()
    return r


def of(events: list[ev.Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def test_opening_a_server_table_keeps_the_opening_as_it_was() -> None:
    events = engine.open_table(BUILTIN["club"], ev.Limits(), dice="server")
    assert events == [ev.TableOpened(1, BUILTIN["club"], ev.Limits()), ev.ServerDiceChosen(2)]
    assert fold(events).dice == "server"
    assert engine.open_table(BUILTIN["club"]) == events[:1]
    with pytest.raises(RuleBroken) as info:
        engine.open_table(BUILTIN["club"], dice="dealer")
    assert info.value.rule is Rule.UNKNOWN_DICE
    with pytest.raises(RuleBroken):
        engine.serve_dice(fold(events))  # once only, and only as the table opens


def test_a_turn_commits_first_and_reveals_last_and_every_throw_draws_again() -> None:
    game = ServerGame()
    chosen = game.events[-2:]
    assert [type(e) for e in chosen] == [ev.CasterChosen, ev.SeedCommitted]
    first = game.turn()
    assert isinstance(first[0], ev.DiceDrawn) and isinstance(first[1], ev.DiceThrown)
    assert [type(e) for e in first[-3:]] == [ev.DicePassed, ev.SeedRevealed, ev.SeedCommitted]
    revealed, committed = first[-2], first[-1]
    assert isinstance(revealed, ev.SeedRevealed) and isinstance(committed, ev.SeedCommitted)
    assert hashlib.sha256(bytes.fromhex(revealed.seed)).hexdigest() == chosen[1].commitment
    drawn = of(game.events, ev.DiceDrawn)
    assert [d.nonce for d in drawn] == list(range(len(drawn)))
    for d in drawn:
        assert serverdice.draw(bytes.fromhex(revealed.seed), d.client_seed, d.nonce) == (
            d.die1,
            d.die2,
        )
    assert game.state.commitment == committed.commitment and game.state.nonce == 0
    assert game.state.caster == "bob"
    r = referee(game.events)
    assert r.unrevealed == ()


def test_leaving_and_closing_reveal_the_turn_and_passing_to_nobody_commits_nothing() -> None:
    game = ServerGame(("ann",))
    game.throw("one")
    left = game.do(engine.leave, "ann")
    assert [type(e) for e in left[-3:]] == [ev.PlayerLeft, ev.DicePassed, ev.SeedRevealed]
    assert game.state.commitment is None
    game.do(engine.seat, "bob")
    game.do(engine.cast_for_caster, "bob", 3)
    game.throw("two")
    closed = game.do(engine.close)
    assert isinstance(closed[-1], ev.SeedRevealed) and isinstance(closed[-2], ev.TableClosed)
    assert referee(game.events).unrevealed == ()


def test_the_wrong_dice_command_for_the_table_is_refused() -> None:
    game = ServerGame()
    for command, args in (
        (engine.throw, (3, 4)),
        (engine.void_throw, ("cocked", 1, None)),
    ):
        with pytest.raises(RuleBroken) as info:
            command(game.state, *args)
        assert info.value.rule is Rule.SERVER_DICE
    with pytest.raises(RuleBroken) as info:
        engine.server_throw(game.state, "", 3, 4)
    assert info.value.rule is Rule.INVALID_CLIENT_SEED
    croupier = fold(engine.open_table(BUILTIN["club"]))
    with pytest.raises(RuleBroken) as info:
        engine.server_throw(croupier, "abc", 3, 4)
    assert info.value.rule is Rule.CROUPIER_DICE


def test_seal_refuses_a_seed_that_is_not_the_one_committed_to() -> None:
    game = ServerGame(("ann",))
    new = engine.leave(game.state, "ann")
    with pytest.raises(RuleBroken) as info:
        serverdice.seal(game.state, new, "00" * 32, None)
    assert info.value.rule is Rule.SEED_MISMATCH
    with pytest.raises(ValueError):
        serverdice.seal(game.state, engine.leave(game.state, "ann"), None, None)


def test_a_turn_in_play_is_listed_as_unrevealed() -> None:
    game = ServerGame()
    game.turn()
    game.throw("a")
    pending = [d.version for d in of(game.events, ev.DiceDrawn)][-game.state.nonce :]
    assert game.state.nonce >= 1
    assert referee(game.events).unrevealed == tuple(pending)


# -- tampering: each fails at the event it changed ------------------------------------


def _changed(events: list[ev.Event], i: int, **fields: Any) -> list[ev.Event]:
    copy = list(events)
    copy[i] = dataclasses.replace(copy[i], **fields)  # type: ignore[type-var]
    return copy


def _fails_at(events: list[ev.Event], version: int, words: str) -> None:
    with pytest.raises(Disagreement) as info:
        referee(events)
    assert info.value.version == version, info.value.reason
    assert words in info.value.reason, info.value.reason


def _swappable(game: ServerGame) -> int:
    """The index of a DiceDrawn of the first turn whose dice differ (so swapping them
    keeps the total, and every settlement, the same)."""
    return next(
        i for i, e in enumerate(game.events) if isinstance(e, ev.DiceDrawn) and e.die1 != e.die2
    )


def test_a_die_changed_in_both_events_fails_at_the_throw_once_the_seed_is_revealed() -> None:
    game = ServerGame()
    game.turn()
    i = _swappable(game)
    d = game.events[i]
    assert isinstance(d, ev.DiceDrawn)
    tampered = _changed(game.events, i, die1=d.die2, die2=d.die1)
    tampered = _changed(tampered, i + 1, die1=d.die2, die2=d.die1)
    _fails_at(tampered, d.version, f"draws {d.die1}+{d.die2}")


def test_a_die_changed_in_the_throw_alone_fails_at_once() -> None:
    game = ServerGame()
    game.turn()
    i = _swappable(game)
    d = game.events[i]
    assert isinstance(d, ev.DiceDrawn)
    _fails_at(_changed(game.events, i + 1, die1=d.die2, die2=d.die1), d.version + 1, "derives")


def test_a_changed_client_seed_nonce_commitment_or_seed_fails() -> None:
    game = ServerGame()
    game.turn()
    i = _swappable(game)
    d = game.events[i]
    assert isinstance(d, ev.DiceDrawn)
    _fails_at(_changed(game.events, i, client_seed="forged"), d.version, "draws")
    _fails_at(_changed(game.events, i, nonce=d.nonce + 1), d.version, "nonce")
    c = next(i for i, e in enumerate(game.events) if isinstance(e, ev.SeedCommitted))
    r = next(i for i, e in enumerate(game.events) if isinstance(e, ev.SeedRevealed))
    reveal = game.events[r]
    _fails_at(
        _changed(game.events, c, commitment="ab" * 32), reveal.version, "the turn committed to"
    )
    _fails_at(_changed(game.events, r, seed="cd" * 32), reveal.version, "SHA-256")
    _fails_at(_changed(game.events, c, commitment="not hex"), game.events[c].version, "hex")
    without_reveal = (
        game.events[:r]
        + [
            dataclasses.replace(e, version=e.version - 1)  # type: ignore[type-var]
            for e in game.events[r + 1 :]
        ]
    )
    with pytest.raises(Disagreement):
        referee(without_reveal)


def test_a_croupier_throw_at_a_server_table_is_refused_by_the_referee() -> None:
    game = ServerGame()
    game.turn()
    i = _swappable(game)
    d = game.events[i]
    assert isinstance(d, ev.DiceDrawn)
    # The DiceDrawn dropped: the throw looks entered by the croupier.
    forged = (
        game.events[:i]
        + [
            dataclasses.replace(e, version=e.version - 1)  # type: ignore[type-var]
            for e in game.events[i + 1 :]
        ]
    )
    _fails_at(forged, d.version, "server-dice")


# -- the client seed logged before the draw -------------------------------------------


class LoggingGame(ServerGame):
    """As the ledger plays a server-dice table now: each throw's client seed logged
    first (`engine.give_seed`, a write of its own), then the throw drawn from it."""

    def throw(self, client_seed: str) -> list[ev.Event]:
        given = self.do(engine.give_seed, client_seed)
        return given + self.draw()

    def draw(self) -> list[ev.Event]:
        """The throw, drawn from the seed logged for it."""
        assert self.seed is not None and self.state.client_seed is not None
        seed = self.state.client_seed
        d1, d2 = serverdice.draw(self.seed, seed, self.state.nonce)
        return self.do(engine.server_throw, seed, d1, d2)


def test_the_seed_is_logged_alone_and_the_throw_is_drawn_from_it() -> None:
    game = LoggingGame()
    given = game.do(engine.give_seed, "ann's first")
    assert given == [ev.ClientSeedGiven(given[0].version, "ann's first", 0)]
    assert (game.state.client_seed, game.state.nonce) == ("ann's first", 0)
    drawn = game.draw()
    assert isinstance(drawn[0], ev.DiceDrawn) and drawn[0].client_seed == "ann's first"
    assert game.state.client_seed is None and game.state.nonce == 1
    game.turn()
    r = referee(game.events)
    assert r.unrevealed == ()
    assert len(of(game.events, ev.ClientSeedGiven)) == len(of(game.events, ev.DiceDrawn))


def test_a_repeat_of_the_logged_seed_logs_nothing_and_another_seed_is_refused() -> None:
    game = LoggingGame()
    game.do(engine.give_seed, "A")
    assert engine.give_seed(game.state, "A") == []
    for refused in (
        lambda s: engine.give_seed(s, "B"),
        lambda s: engine.server_throw(s, "B", 3, 4),
    ):
        with pytest.raises(RuleBroken) as info:
            refused(game.state)
        assert info.value.rule is Rule.SEED_ALREADY_GIVEN
        assert "'A'" in info.value.detail and "throw 0" in info.value.detail


def test_nothing_but_the_draw_comes_between_a_logged_seed_and_its_throw() -> None:
    game = LoggingGame()
    game.do(engine.stake, 10)
    game.do(engine.give_seed, "A")
    state = game.state
    for command in (
        lambda: engine.lay(state, "bob", 5),
        lambda: engine.leave(state, "bob"),
        lambda: engine.close(state),
    ):
        events = command()
        with pytest.raises(RuleBroken) as info:
            serverdice.require_draw_next(state, events[0])
        assert info.value.rule is Rule.DRAW_PENDING
        assert "'A'" in info.value.detail
    # The draw itself may come, and at a table with no seed logged anything may.
    d1, d2 = serverdice.draw(game.seed or b"", "A", 0)
    serverdice.require_draw_next(state, engine.server_throw(state, "A", d1, d2)[0])
    serverdice.require_draw_next(fold(game.events[:-1]), engine.lay(state, "bob", 5)[0])


def test_the_seed_is_given_only_when_a_throw_is_due() -> None:
    game = LoggingGame()
    game.do(engine.lay, "bob", 5)  # a stake laid against the caster, not yet covered
    with pytest.raises(RuleBroken) as info:
        engine.give_seed(game.state, "A")
    assert info.value.rule is Rule.STAKES_PENDING
    croupier = fold(engine.open_table(BUILTIN["club"]))
    with pytest.raises(RuleBroken) as info:
        engine.give_seed(croupier, "A")
    assert info.value.rule is Rule.CROUPIER_DICE
    with pytest.raises(RuleBroken) as info:
        engine.give_seed(game.state, "")
    assert info.value.rule is Rule.INVALID_CLIENT_SEED


def _given(game: LoggingGame) -> int:
    """The index of the first ClientSeedGiven whose throw's dice differ."""
    return next(
        i - 1 for i, e in enumerate(game.events) if isinstance(e, ev.DiceDrawn) and e.die1 != e.die2
    )


def test_the_referee_holds_each_throw_to_the_seed_logged_for_it() -> None:
    game = LoggingGame()
    game.turn()
    i = _given(game)
    given, drawn = game.events[i], game.events[i + 1]
    assert isinstance(given, ev.ClientSeedGiven) and isinstance(drawn, ev.DiceDrawn)
    # The throw drawn from another seed than the one logged for it (its dice as that
    # seed draws them, so only the log can tell): refused at the throw.
    assert game.seed is not None
    other = serverdice.draw(game.seed, "B", drawn.nonce)
    swapped = _changed(game.events, i + 1, client_seed="B", die1=other[0], die2=other[1])
    _fails_at(swapped, drawn.version, "seed-already-given")
    # A logged seed followed by anything but its throw.
    moved = [*game.events[: i + 1], ev.TableClosed(given.version + 1)]
    _fails_at(moved, given.version + 1, "draw-pending")
    # The seed logged for another nonce than the throw's.
    _fails_at(_changed(game.events, i, nonce=given.nonce + 1), given.version, "nonce")


def test_once_a_table_logs_its_seeds_every_throw_is_drawn_from_a_logged_seed() -> None:
    game = LoggingGame()
    game.turn()
    game.turn()
    # The second throw's ClientSeedGiven dropped (the rest renumbered): a throw drawn
    # from a seed the log never held first, at a table that logged the first one.
    i = [i for i, e in enumerate(game.events) if isinstance(e, ev.ClientSeedGiven)][1]
    given = game.events[i]
    unlogged = (
        game.events[:i]
        + [
            dataclasses.replace(e, version=e.version - 1)  # type: ignore[type-var]
            for e in game.events[i + 1 :]
        ]
    )
    _fails_at(unlogged, given.version, "seed-not-given")
    # A table written before seeds were logged (no ClientSeedGiven at all) plays as it did.
    old = ServerGame()
    old.turn()
    assert not of(old.events, ev.ClientSeedGiven)
    assert referee(old.events).unrevealed == ()


def test_a_pending_seed_folds_and_a_turn_ends_with_none() -> None:
    game = LoggingGame()
    game.do(engine.give_seed, "A")
    assert fold(game.events).client_seed == "A" and fold(game.events).logs_seeds
    game.draw()
    assert fold(game.events).client_seed is None and fold(game.events).logs_seeds
