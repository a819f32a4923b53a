"""The referee: re-runs every command a table's stream records and holds each event the
command derives to what the engine derives.

The fold (`engine.fold`) applies a `BetSettled` as given; it does not ask whether the
throw before it really decided that bet for that winner. The referee does. A table's
stream is a run of *groups*, one per command, appended together in order; the first
event of a group says which command it was and carries its inputs (the dice thrown,
the stake laid, the bet offered), and the rest is what that command derived
(settlements, voided bets, the dice passing, ...). The referee runs the command on the
state before the group and compares the file's events with the command's, one by one,
as they arrive: a group's length is known only once its first event is seen, so the
referee never needs to read ahead.

Which command a group's first event records:

- `TableOpened` open_table, `PlayerSeated` seat, `PlayerLeft` leave, `TableClosed`
  close, `DieCastForCaster` cast_for_caster, `MainCalled` call_main, `DiceThrown` throw,
  `ThrowVoided` void_throw, `CasterStaked` stake, `StakeLaid` lay, `OddsLaid` lay_odds
  (its payout and breakage are derived), `SideBetOffered` offer_side_bet,
  `SideBetAccepted` accept_side_bet, `DicePassed` (reason "choice") pass_dice.
- `StakeCovered`: cover. The ledger knows the caster's funds and the file does not, so
  the referee gives the caster exactly what the stakes named come to. Under the refuse
  policy each `StakeCovered` is checked as a cover of the one stake it names (covering
  several stakes at once derives the same events as covering them one at a time).
  Under hard-core play (`CoverPolicy.FORFEIT`) a cover covers every pending stake, so
  the first `StakeCovered` starts a group of all of them, in the engine's order.
- `BetVoided` first: its reason names the command. "refused" refuse; "withdrawn"
  withdraw_side_bet by the offer's maker; "caster-left" the caster leaving;
  "offeree-left" the player the offer was made to leaving; "table-closed" close;
  "dice-passed" pass_dice; "forfeit" the caster forfeiting (below).
  "never-accepted" and "undecidable" only ever follow a throw.
- `CasterForfeited` (or `BetVoided` "forfeit") first: the caster could not cover every
  stake under hard-core play. The referee cannot know the caster's funds; it accepts
  the forfeit when the rules are hard-core and stakes are pending (the only time the
  engine forfeits), runs cover with one minor unit less than those stakes come to, and
  holds every event the forfeit derives (the round's bets voided, the dice passing) to
  the engine's.
- `CasterChosen`, `BetSettled` and any other `DicePassed` start no command: they are
  only ever derived.
- Server dice (engine.serverdice): `ServerDiceChosen` serve_dice (right after the
  opening); `DiceDrawn` server_throw, with the client seed and the dice it records.
  `SeedRevealed` and `SeedCommitted` start no command: a command that ends a caster's
  turn or gives a caster the dice derives them last. Their values are the ledger's, not
  the engine's: the referee takes the commitment as the file gives it, and holds the
  revealed seed to it (SHA-256) and every throw of the turn to the seed (each
  `DiceDrawn` drawn again from it, its client seed and nonce). A throw whose turn has
  not ended yet cannot be drawn again: `unrevealed` lists them.

Each group is folded onto the state once, when its last event has been matched.
Standard library and engine only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from engine import events as ev
from engine.betting import (
    accept_side_bet,
    cover,
    lay,
    lay_odds,
    offer_side_bet,
    refuse,
    stake,
    withdraw_side_bet,
)
from engine.command import Drafted
from engine.errors import HazardError, RuleBroken
from engine.fold import INITIAL, fold
from engine.money import ESCROW
from engine.play import call_main, server_throw, throw, void_throw
from engine.rounds import RoundBook
from engine.rules import CoverPolicy
from engine.serverdice import SERVER, commit_to, draw, is_seed, turn_change
from engine.state import SETTER, BetKind, TableState
from engine.table import cast_for_caster, close, leave, open_table, pass_dice, seat, serve_dice


class Disagreement(HazardError):
    """The file's stream and the engine disagree. `version` is the version of the
    event in the file that differs, or where an event the engine derives is missing;
    `reason` says in the game's words what differs (it is also the message)."""

    def __init__(self, version: int, reason: str) -> None:
        super().__init__(reason)
        self.version = version
        self.reason = reason


_PLACED = frozenset({ev.CasterStaked, ev.StakeLaid, ev.OddsLaid, ev.SideBetOffered})
_CLOSING = (ev.BetSettled, ev.BetVoided)
_DISPUTE_CAUSES = frozenset({ev.DisputeOpened, ev.DisputeResolved})
_FROM_FILE = ""
"""The seed or commitment of a turn event the referee expects: the file gives it."""
_NEXT_COMMITMENT = "(the next turn's commitment)"
_ENDING_SEED = "(the ending turn's seed)"


class Referee:
    """Re-runs every command a table's stream records and holds each derived event to
    what the engine derives.

    Feed it the table's events in order with `check`, then call `finish`. `state` is
    the table after every complete group checked so far (a group still being compared
    is not yet folded in). `rounds` counts the rounds finished while checking: every
    round the state ends is one more win, loss or abandoned round
    (`TableState.wins + losses + abandoned`), so this is that sum's growth. `bets`
    counts the bets placed: `CasterStaked`, `StakeLaid`, `OddsLaid` and
    `SideBetOffered` events checked.
    """

    def __init__(
        self,
        state: TableState = INITIAL,
        on_group: Callable[[Sequence[ev.Event], TableState, TableState], None] | None = None,
        judge_disputes: bool = True,
    ) -> None:
        self.state = state
        self.bets = 0
        self._on_group = on_group
        self._judging = judge_disputes
        self._book = RoundBook(whole_from=1 if state.version == 0 else None)
        self.trusted: list[int] = []
        """The versions of dispute events taken as the file gives them: a dispute over a
        round this referee did not see whole (it began after the round did)."""
        self._trusting: str | None = None
        """The dispute whose resolution is being taken on trust, for its adjustments."""
        self._ended_before = state.wins + state.losses + state.abandoned
        self._due: Sequence[ev.Event] = ()
        """What the command being compared derives, its first event included."""
        self._next = 0
        """How many of `_due` the file has matched so far."""
        self._cause: ev.Event | None = None
        """The first event of the group being compared (or of the last one)."""
        self._last: tuple[ev.Event, Sequence[ev.Event], TableState] | None = None
        """The last complete group: its cause, its events, the state before it."""
        self._drawn: list[ev.DiceDrawn] = []
        """The server throws of the turn in play, checked once its seed is revealed."""
        self._committed_at = 0
        """The version of the turn's `SeedCommitted`, if the referee saw it."""

    @property
    def unrevealed(self) -> tuple[int, ...]:
        """The versions of the server throws whose turn's seed is not revealed yet: the
        turn in play when the stream ends. They cannot be drawn again (yet)."""
        return tuple(d.version for d in self._drawn)

    @property
    def rounds(self) -> int:
        s = self.state
        return s.wins + s.losses + s.abandoned - self._ended_before

    @property
    def at_boundary(self) -> bool:
        """No command's events are being compared: the next event starts one."""
        return self._next >= len(self._due)

    def check(self, event: ev.Event) -> None:
        """Hold `event` to what the engine derives; raises `Disagreement`."""
        if self._trusting is not None:
            if isinstance(event, ev.BetAdjusted) and event.dispute_id == self._trusting:
                self._take_on_trust(event)
                return
            self._trusting = None
        due = self._due
        if self._next < len(due):
            want = due[self._next]
            if event != want:
                if not self._from_file(event, want):
                    raise self._differs(event, want)
                due[self._next] = event  # type: ignore[index]
            self._next += 1
            if self._next == len(due):
                self._settle()
            return
        self._begin(event)

    def finish(self) -> None:
        """Raise `Disagreement` if the stream ends inside a command's events."""
        due = self._due
        if self._next < len(due):
            missing = due[self._next]
            rest = len(due) - self._next - 1
            more = f" and {rest} event{'s' if rest > 1 else ''} more" if rest else ""
            raise Disagreement(
                missing.version,
                f"the stream ends inside {self._what()}: it also derives "
                f"{describe(missing)}{more}{self._so_far()}",
            )

    # -- a group -------------------------------------------------------------------

    def _begin(self, event: ev.Event) -> None:
        state = self.state
        if event.version != state.version + 1:
            raise Disagreement(
                event.version,
                f"{type(event).__name__} has version {event.version}, but the table's next "
                f"event is version {state.version + 1}: the stream skips or repeats an event",
            )
        self._cause = event
        run = _COMMANDS.get(event.__class__)
        if run is None:
            raise Disagreement(event.version, f"unknown event type {type(event).__name__}")
        if event.__class__ in _DISPUTE_CAUSES:
            run = self._judge
        try:
            due = run(state, event)
        except Disagreement:
            raise
        except _Orphan:
            raise self.orphan(event) from None
        except RuleBroken as exc:
            raise Disagreement(
                event.version,
                f"the engine refuses {self._what()}: {exc.detail} (rule {exc.code})",
            ) from None
        except (HazardError, TypeError, ValueError, AssertionError) as exc:
            raise Disagreement(
                event.version, f"the engine cannot run {self._what()}: {exc}"
            ) from None
        if due is _TRUSTED:
            return
        if not due:
            raise Disagreement(
                event.version, f"{describe(event)}: the engine derives nothing from it here"
            )
        ends, begins = turn_change(state, due)
        if ends or begins:
            due = list(due) if not isinstance(due, Drafted) else due
            if ends:
                due.append(ev.SeedRevealed(version=due[-1].version + 1, seed=_FROM_FILE))
            if begins:
                due.append(ev.SeedCommitted(version=due[-1].version + 1, commitment=_FROM_FILE))
        self._due, self._next = due, 0
        if event != due[0]:
            raise self._differs(event, due[0])
        self._next = 1
        if len(due) == 1:
            self._settle()

    def _settle(self) -> None:
        """The group is complete and matches: fold it onto the state, once."""
        due, before = self._due, self.state
        # A command that folded its first events (a throw, before deciding its bets)
        # left that state with them: fold only the rest onto it.
        done = due.folded if isinstance(due, Drafted) else None
        try:
            if done is None:
                self.state = fold(due, before)
            elif done[0] == len(due):
                self.state = done[1]
            else:
                self.state = fold(due[done[0] :], done[1])
        except HazardError as exc:  # the engine's own events do not fold: an engine bug
            raise Disagreement(due[-1].version, f"the engine's events do not fold: {exc}") from None
        if due[0].__class__ in _PLACED:
            self.bets += 1
        self._book.add(due, before, self.state)
        if self._on_group is not None:
            self._on_group(due, before, self.state)
        if self.state.dice == SERVER:
            for e in due:
                if isinstance(e, ev.DiceDrawn):
                    self._drawn.append(e)
                elif isinstance(e, ev.SeedRevealed | ev.SeedCommitted):
                    self._drawn.clear()
                    if isinstance(e, ev.SeedCommitted):
                        self._committed_at = e.version
        assert self._cause is not None
        self._last = (self._cause, due, before)
        self._due, self._next = (), 0

    # -- disputes ------------------------------------------------------------------------

    def _judge(self, state: TableState, event: ev.Event) -> list[ev.Event]:
        """Run the dispute command `event` records, on the record of its round; or take
        it on trust when this referee did not see that round whole."""
        from engine.disputes import open_dispute, resolve

        if isinstance(event, ev.DisputeOpened):
            number: int | None = event.round
        else:
            number = state.disputes.get(event.dispute_id)  # type: ignore[union-attr]
        record = self._book.record(number, state) if number is not None else None
        # A round this referee never saw whole cannot be judged here: taken on trust. One
        # it saw and let go is too old to dispute, and the command is judged (refused).
        if (
            record is None
            and number is not None
            and (not self._judging or not self._book.knows(number))
        ):
            self._take_on_trust(event)
            return _TRUSTED
        if isinstance(event, ev.DisputeOpened):
            return open_dispute(
                state,
                record,
                event.round,
                event.claimant,
                event.role,
                event.claim,
                event.throw,
                event.die1,
                event.die2,
            )
        assert isinstance(event, ev.DisputeResolved)
        return resolve(
            state,
            record,
            event.dispute_id,
            event.resolution,
            event.reason,
            event.throw,
            event.die1,
            event.die2,
        )

    def _take_on_trust(self, event: ev.Event) -> None:
        before = self.state
        try:
            self.state = fold([event], before)
        except HazardError as exc:
            raise Disagreement(event.version, f"{describe(event)} does not fold: {exc}") from None
        self.trusted.append(event.version)
        if isinstance(event, ev.DisputeResolved):
            self._trusting = event.dispute_id
        self._book.add((event,), before, self.state)
        if self._on_group is not None:
            self._on_group((event,), before, self.state)
        self._due, self._next = (), 0

    # -- the turn's seed ----------------------------------------------------------------

    def _from_file(self, got: ev.Event, want: ev.Event) -> bool:
        """Whether `got` is the turn event `want` stands for, its value the file's: any
        commitment of the right form; a seed that hashes to the turn's commitment and
        draws every throw of the turn as recorded (else Disagreement)."""
        if type(got) is not type(want) or got.version != want.version:
            return False
        if isinstance(got, ev.SeedCommitted) and isinstance(want, ev.SeedCommitted):
            if want.commitment != _FROM_FILE:
                return False
            if not is_seed(got.commitment):
                raise Disagreement(
                    got.version,
                    "SeedCommitted: a commitment is SHA-256 as 64 lowercase hex digits, not "
                    f"{got.commitment!r}",
                )
            return True
        if isinstance(got, ev.SeedRevealed) and isinstance(want, ev.SeedRevealed):
            if want.seed != _FROM_FILE:
                return False
            self._reveal(got)
            return True
        return False

    def _reveal(self, revealed: ev.SeedRevealed) -> None:
        commitment = self.state.commitment
        at = f" (SeedCommitted at version {self._committed_at})" if self._committed_at else ""
        if not is_seed(revealed.seed):
            raise Disagreement(
                revealed.version,
                "SeedRevealed: a server seed is 32 bytes as 64 lowercase hex digits, not "
                f"{revealed.seed!r}",
            )
        if commit_to(revealed.seed) != commitment:
            raise Disagreement(
                revealed.version,
                f"SeedRevealed: SHA-256 of the seed revealed is {commit_to(revealed.seed)}, "
                f"but the turn committed to {commitment}{at}",
            )
        seed = bytes.fromhex(revealed.seed)
        matched = [e for e in self._due[: self._next] if isinstance(e, ev.DiceDrawn)]
        for d in (*self._drawn, *matched):
            drawn = draw(seed, d.client_seed, d.nonce)
            if drawn != (d.die1, d.die2):
                raise Disagreement(
                    d.version,
                    f"{describe(d)}, but the seed revealed at version {revealed.version} "
                    f"draws {drawn[0]}+{drawn[1]} for that client seed and nonce",
                )

    # -- saying what differs ------------------------------------------------------------

    def _what(self, cause: ev.Event | None = None, state: TableState | None = None) -> str:
        """The command being compared, in words."""
        return command_words(cause or self._cause, self.state if state is None else state)

    def _so_far(self) -> str:
        matched = self._due[1 : self._next]
        closed = [e.bet_id for e in matched if isinstance(e, _CLOSING)]
        due = [e.bet_id for e in self._due if isinstance(e, _CLOSING)]
        if not due:
            return ""
        return (
            f" (it decides bets {', '.join(due)}; the file closes "
            f"{'only ' + ', '.join(closed) if closed else 'none of them'})"
        )

    def _differs(self, got: ev.Event, want: ev.Event) -> Disagreement:
        return Disagreement(got.version, self._explain(got, want))

    def _explain(self, got: ev.Event, want: ev.Event) -> str:
        what = self._what()
        due_closing = [e.bet_id for e in self._due if isinstance(e, _CLOSING)]
        if type(got) is type(want) and getattr(got, "bet_id", None) == getattr(
            want, "bet_id", None
        ):
            if got.version != want.version:
                return (
                    f"{type(got).__name__} has version {got.version}, but {what} derives it "
                    f"as version {want.version}"
                )
            return _same_kind(got, want, what)
        if type(got) is type(want) and got.__class__ in _PLACED:
            return (
                f"{describe(got)}, but the bet {what} places is "
                f"{getattr(want, 'bet_id', '')}: a bet's id comes from the version of the "
                "event that places it"
            )
        if isinstance(got, _CLOSING) and isinstance(want, _CLOSING):
            if got.bet_id in due_closing[due_closing.index(want.bet_id) :]:
                return (
                    f"the file has {describe(got)} where {what} closes {want.bet_id} next "
                    f"(it decides bets {', '.join(due_closing)}, in that order): "
                    f"{describe(want)}"
                )
            return f"{describe(got)}, but {what} does not decide {got.bet_id}" + (
                f": it decides bets {', '.join(due_closing)}" if due_closing else ""
            )
        if isinstance(want, _CLOSING):
            return (
                f"{what} decides bets {', '.join(due_closing)} but the file closes "
                + self._closed_so_far()
                + f": {describe(want)} is missing, {describe(got)} is in its place"
            )
        if isinstance(got, _CLOSING):
            return (
                f"{describe(got)}, but {what} "
                + (f"decides only {', '.join(due_closing)}" if due_closing else "decides no bet")
                + f": the engine derives {describe(want)} here"
            )
        if isinstance(got, ev.StakeCovered) or isinstance(want, ev.StakeCovered):
            pending = [e.bet_id for e in self._due if isinstance(e, ev.StakeCovered)]
            return (
                f"{what} covers every pending stake ({', '.join(pending)}) under hard-core "
                f"play, in that order: the engine derives {describe(want)}, the file has "
                f"{describe(got)}"
            )
        return f"{what} derives {describe(want)} here, but the file has {describe(got)}"

    def _closed_so_far(self) -> str:
        closed = [e.bet_id for e in self._due[: self._next] if isinstance(e, _CLOSING)]
        return "only " + ", ".join(closed) if closed else "none of them"

    def orphan(self, event: ev.Event) -> Disagreement:
        """An event that only a command derives, standing where a command must start."""
        last = self._last
        text = f"{describe(event)} is derived by no command here"
        if last is not None:
            cause, due, before = last
            closing = [e.bet_id for e in due if isinstance(e, _CLOSING)]
            what = command_words(cause, before)
            if isinstance(event, _CLOSING):
                text = (
                    f"{describe(event)}, but {what} "
                    + (f"decides only {', '.join(closing)}" if closing else "decides no bet")
                    + f", and no command since decides {event.bet_id}"
                )
            else:
                text += f": the events of {what} ended before it"
        return Disagreement(event.version, text)


# -- running the command a group records -------------------------------------------------

Run = Callable[[TableState, Any], list[ev.Event]]
_TRUSTED: list[ev.Event] = []
"""What `Referee._judge` returns for a dispute event it took on trust."""


def derive(state: TableState, cause: ev.Event) -> list[ev.Event]:
    """The events the command that `cause` records derives on `state` (cause first), as
    the referee runs it. Raises RuleBroken if the engine refuses it, and HazardError for
    an event no command starts with, or a dispute (which needs its round's record)."""
    if isinstance(cause, ev.DisputeOpened | ev.DisputeResolved):
        raise HazardError(f"{describe(cause)} is judged on its round's record")
    try:
        return _COMMANDS[cause.__class__](state, cause)
    except _Orphan:
        raise HazardError(f"{describe(cause)} is derived by a command, not one itself") from None


def _orphan(state: TableState, e: ev.Event) -> list[ev.Event]:
    raise _Orphan(e)


class _Orphan(Exception):
    def __init__(self, event: ev.Event) -> None:
        self.event = event


def _covered(state: TableState, e: ev.StakeCovered) -> list[ev.Event]:
    if state.rules is not None and state.rules.cover is CoverPolicy.FORFEIT:
        pending = [b for b in state.bets.values() if b.kind is BetKind.LAID and b.pending]
        return cover(state, sum(b.no_stake for b in pending))
    bet = state.bets.get(e.bet_id)
    return cover(state, bet.no_stake if bet is not None else 0, (e.bet_id,))


def _forfeit(state: TableState, e: ev.Event) -> list[ev.Event]:
    rules = state.rules
    if rules is not None and rules.cover is not CoverPolicy.FORFEIT:
        raise Disagreement(
            e.version,
            f"{describe(e)}, but under {rules.name} rules a caster who cannot cover refuses "
            "stakes: only hard-core play (cover: forfeit) forfeits the dice",
        )
    owed = sum(b.no_stake for b in state.bets.values() if b.kind is BetKind.LAID and b.pending)
    if owed == 0:
        raise Disagreement(
            e.version,
            f"{describe(e)}, but no stake laid against the caster is waiting to be covered: "
            "the caster forfeits only when they cannot cover the stakes pending",
        )
    return cover(state, owed - 1)


def _voided(state: TableState, e: ev.BetVoided) -> list[ev.Event]:
    reason = e.reason
    if reason == "refused":
        return refuse(state, e.bet_id)
    if reason == "withdrawn":
        bet = state.bets.get(e.bet_id)
        maker = bet.parties[0] if bet is not None and bet.parties else ""
        return withdraw_side_bet(state, e.bet_id, maker)
    if reason == "caster-left":
        if state.caster is None:
            raise Disagreement(e.version, f"{describe(e)}, but no caster holds the dice to leave")
        return leave(state, state.caster)
    if reason == "offeree-left":
        bet = state.bets.get(e.bet_id)
        if bet is None or bet.offered_to is None:
            raise Disagreement(
                e.version,
                f"{describe(e)}, but {e.bet_id} is not an open offer made to one player",
            )
        return leave(state, bet.offered_to)
    if reason == "table-closed":
        return close(state)
    if reason == "dice-passed":
        return pass_dice(state)
    if reason == "forfeit":
        return _forfeit(state, e)
    if reason in ("never-accepted", "undecidable"):
        raise _Orphan(e)
    raise Disagreement(
        e.version, f"{describe(e)}: no command of the engine voids a bet for {reason!r}"
    )


def _passed(state: TableState, e: ev.DicePassed) -> list[ev.Event]:
    if e.reason != "choice":
        raise _Orphan(e)
    return pass_dice(state)


_COMMANDS: dict[type, Run] = {
    ev.TableOpened: lambda s, e: open_table(e.rules, e.limits, s),
    ev.PlayerSeated: lambda s, e: seat(s, e.player),
    ev.PlayerLeft: lambda s, e: leave(s, e.player),
    ev.TableClosed: lambda s, e: close(s),
    ev.DieCastForCaster: lambda s, e: cast_for_caster(s, e.player, e.die),
    ev.CasterChosen: _orphan,
    ev.DicePassed: _passed,
    ev.CasterForfeited: _forfeit,
    ev.MainCalled: lambda s, e: call_main(s, e.main),
    ev.DiceThrown: lambda s, e: throw(s, e.die1, e.die2),
    ev.ThrowVoided: lambda s, e: void_throw(s, e.reason, e.off, e.standing),
    ev.ServerDiceChosen: lambda s, e: serve_dice(s),
    ev.SeedCommitted: _orphan,
    ev.DiceDrawn: lambda s, e: server_throw(s, e.client_seed, e.die1, e.die2),
    ev.SeedRevealed: _orphan,
    ev.CasterStaked: lambda s, e: stake(s, e.amount),
    ev.StakeLaid: lambda s, e: lay(s, e.bettor, e.amount),
    ev.StakeCovered: _covered,
    ev.OddsLaid: lambda s, e: lay_odds(s, e.bettor, e.on, e.stake),
    ev.SideBetOffered: lambda s, e: offer_side_bet(
        s, e.offerer, e.proposition, e.backs, e.stake, e.asks, e.to
    ),
    ev.SideBetAccepted: lambda s, e: accept_side_bet(s, e.bet_id, e.acceptor),
    ev.BetSettled: _orphan,
    ev.BetVoided: _voided,
    ev.DisputeOpened: _orphan,  # judged by Referee._judge, on the round's record
    ev.DisputeResolved: _orphan,
    ev.BetAdjusted: _orphan,
}
if _COMMANDS.keys() != set(ev.TABLE_EVENTS):  # as the fold: fail on import, not in a replay
    raise TypeError(
        "engine.events.Event and the referee disagree on "
        + ", ".join(sorted(c.__name__ for c in _COMMANDS.keys() ^ set(ev.TABLE_EVENTS)))
    )


# -- words ---------------------------------------------------------------------------


def _who(name: str) -> str:
    return "the setter" if name == SETTER else f"player {name}"


def _money(transfers: Sequence[ev.Transfer]) -> str:
    """Transfers out of a bet's escrow in words: "ann is paid 40"."""
    parts = []
    for t in transfers:
        if t.source.startswith(ESCROW):
            parts.append(f"{t.target} is paid {t.amount}")
        else:
            parts.append(f"{t.amount} moves from {t.source} to {t.target}")
    return ", ".join(parts) if parts else "no money moves"


def _fraction(value: Fraction) -> str:
    return str(value)


def describe(e: ev.Event) -> str:
    """One event in words."""
    name = type(e).__name__
    match e:
        case ev.BetSettled():
            paid = sum(t.amount for t in e.transfers if t.target == e.winner)
            text = f"BetSettled {e.bet_id} pays {_who(e.winner)} {paid}"
            if e.breakage:
                text += f" with breakage {_fraction(e.breakage)}"
            return text
        case ev.BetVoided():
            returned = ", ".join(f"{t.amount} to {t.target}" for t in e.transfers)
            return f"BetVoided {e.bet_id} ({e.reason}) returning {returned or 'nothing'}"
        case ev.DiceThrown():
            return f"DiceThrown {e.die1}+{e.die2}"
        case ev.DicePassed():
            to = e.caster if e.caster is not None else "nobody"
            return f"DicePassed to {to} ({e.reason})"
        case ev.OddsLaid():
            return (
                f"OddsLaid {e.bet_id}: {e.bettor} lays {e.stake} on the {e.on}, payout "
                f"{e.payout} with breakage {_fraction(e.breakage)}"
            )
        case ev.StakeCovered():
            return f"StakeCovered {e.bet_id}: {e.caster} covers {e.amount}"
        case ev.StakeLaid():
            return f"StakeLaid {e.bet_id}: {e.bettor} lays {e.amount}"
        case ev.CasterStaked():
            return f"CasterStaked {e.bet_id}: {e.caster} stakes {e.amount}"
        case ev.SideBetAccepted():
            return f"SideBetAccepted {e.bet_id}: {e.acceptor} takes it for {e.amount}"
        case ev.SideBetOffered():
            return f"SideBetOffered {e.bet_id}: {e.offerer} stakes {e.stake} against {e.asks}"
        case ev.CasterChosen() | ev.PlayerSeated() | ev.PlayerLeft():
            return f"{name} {e.player}"
        case ev.CasterForfeited():
            return f"CasterForfeited {e.caster}"
        case ev.MainCalled():
            return f"MainCalled {e.main}"
        case ev.DieCastForCaster():
            return f"DieCastForCaster {e.player} casts {e.die}"
        case ev.ThrowVoided():
            return f"ThrowVoided ({e.reason}, die {e.off} off)"
        case ev.DiceDrawn():
            return (
                f"DiceDrawn {e.die1}+{e.die2} (client seed {e.client_seed!r}, nonce {e.nonce}) "
                f"at version {e.version}"
            )
        case ev.SeedCommitted():
            return f"SeedCommitted {e.commitment or _NEXT_COMMITMENT}"
        case ev.SeedRevealed():
            return f"SeedRevealed {e.seed or _ENDING_SEED}"
        case ev.DisputeOpened():
            dice = f", dice {e.die1}+{e.die2}" if e.die1 is not None else ""
            at = f", throw at version {e.throw}" if e.throw is not None else ""
            return (
                f"DisputeOpened {e.dispute_id} on round {e.round} by {e.role} {e.claimant}"
                f"{at}{dice}"
            )
        case ev.DisputeResolved():
            dice = f" to {e.die1}+{e.die2} at version {e.throw}" if e.die1 is not None else ""
            return f"DisputeResolved {e.dispute_id} {e.resolution}{dice}"
        case ev.BetAdjusted():
            return f"BetAdjusted {e.bet_id} ({e.adjustment}): {_money(e.transfers)}"
    return name


def command_words(cause: ev.Event | None, state: TableState) -> str:
    """The command a group's first event records, in words, as run on `state`."""
    if cause is None:
        return "the command"
    at = f"at version {cause.version}"
    rules = state.rules.name if state.rules is not None else "no"
    match cause:
        case ev.DiceThrown():
            return f"the throw {cause.die1}+{cause.die2} {at} under {rules} rules"
        case ev.MainCalled():
            return f"the main called ({cause.main}) {at}"
        case ev.TableOpened():
            return f"the table's opening {at}"
        case ev.PlayerSeated():
            return f"{cause.player} sitting down {at}"
        case ev.PlayerLeft():
            return f"{cause.player} leaving {at}"
        case ev.TableClosed():
            return f"the table closing {at}"
        case ev.DieCastForCaster():
            return f"{cause.player}'s cast of {cause.die} for first caster {at}"
        case ev.ThrowVoided():
            return f"the void throw ({cause.reason}) {at}"
        case ev.DiceDrawn():
            return f"the server throw {cause.die1}+{cause.die2} {at} under {rules} rules"
        case ev.ServerDiceChosen():
            return f"the choice of server dice {at}"
        case ev.CasterStaked():
            return f"the caster's stake of {cause.amount} {at}"
        case ev.StakeLaid():
            return f"{cause.bettor}'s stake of {cause.amount} laid {at}"
        case ev.StakeCovered():
            if state.rules is not None and state.rules.cover is CoverPolicy.FORFEIT:
                return f"the caster covering the stakes laid {at} under {rules} rules"
            return f"the caster covering {cause.bet_id} {at}"
        case ev.OddsLaid():
            return (
                f"{cause.bettor}'s odds of {cause.stake} on the {cause.on} {at} under {rules} "
                f"rules (main {state.main}, chance {state.chance})"
            )
        case ev.SideBetOffered():
            return f"{cause.offerer}'s side bet offer {at}"
        case ev.SideBetAccepted():
            return f"{cause.acceptor} taking side bet {cause.bet_id} {at}"
        case ev.CasterForfeited():
            return f"the caster forfeiting under {rules} rules {at}"
        case ev.DicePassed():
            return f"the caster passing the dice by choice {at}"
        case ev.DisputeOpened():
            return f"the dispute {cause.dispute_id} over round {cause.round} opened {at}"
        case ev.DisputeResolved():
            return f"the dispute {cause.dispute_id} resolved ({cause.resolution}) {at}"
        case ev.BetVoided():
            bet = state.bets.get(cause.bet_id)
            return {
                "refused": f"the caster refusing {cause.bet_id} {at}",
                "withdrawn": f"side bet {cause.bet_id} withdrawn {at}",
                "caster-left": f"the caster {state.caster} leaving {at}",
                "offeree-left": (
                    f"{bet.offered_to if bet is not None else 'a player'} leaving {at}"
                ),
                "table-closed": f"the table closing {at}",
                "dice-passed": f"the caster passing the dice by choice {at}",
                "forfeit": f"the caster forfeiting under {rules} rules {at}",
            }.get(cause.reason, f"a command {at}")
    return f"{type(cause).__name__} {at}"


def _same_kind(got: ev.Event, want: ev.Event, what: str) -> str:
    """Two events of one kind (and one bet) that differ in what they say."""
    match got, want:
        case ev.BetSettled(), ev.BetSettled():
            if got.winner != want.winner or got.transfers != want.transfers:
                return (
                    f"{describe(got)}, but {what} decides {got.bet_id} for {_who(want.winner)}: "
                    f"{_money(want.transfers)}"
                )
            return (
                f"BetSettled {got.bet_id} records breakage {_fraction(got.breakage)}, but "
                f"{what} gives breakage {_fraction(want.breakage)}"
            )
        case ev.OddsLaid(), ev.OddsLaid():
            if (got.payout, got.breakage) != (want.payout, want.breakage):
                return (
                    f"OddsLaid {got.bet_id}: payout {got.payout} with breakage "
                    f"{_fraction(got.breakage)}, the rules give payout {want.payout} with "
                    f"breakage {_fraction(want.breakage)} ({what})"
                )
        case ev.BetVoided(), ev.BetVoided():
            return f"{describe(got)}, but {what} voids it: {describe(want)}"
    fields = [
        f"{name} {getattr(got, name)!r} where the engine has {getattr(want, name)!r}"
        for name in got.__dataclass_fields__
        if getattr(got, name) != getattr(want, name)
    ]
    return f"{describe(got)} differs from what {what} derives: " + "; ".join(fields)
