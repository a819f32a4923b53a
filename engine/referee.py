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
  opening); `ClientSeedGiven` give_seed, a group of its own, after which nothing but
  its throw may come (`require_draw_next`); `DiceDrawn` server_throw, with the client
  seed (the one logged for it) and the dice it records.
  `SeedRevealed` and `SeedCommitted` start no command: a command that ends a caster's
  turn or gives a caster the dice derives them last. Their values are the ledger's, not
  the engine's: the referee takes the commitment as the file gives it, and holds the
  revealed seed to it (SHA-256) and every throw of the turn to the seed (each
  `DiceDrawn` drawn again from it, its client seed and nonce). A throw whose turn has
  not ended yet cannot be drawn again: `unrevealed` lists them.

Each group is folded onto the state once, when its last event has been matched. The
commands of one event that a table plays most (the main called, stakes laid, covered
and staked, side bets offered and taken) are checked by their quick checks
(engine.quick) on the fold's own copy of the table instead, without running the
command or freezing a state for it; what a quick check does not let through is run as
above, so a refusal is always the command's own, in its words.
Standard library and engine only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from engine import events as ev
from engine.causes import COMMANDS, ON_THE_FOLD, Orphan, Run
from engine.command import Drafted
from engine.disputes import open_dispute, resolve
from engine.errors import Disagreement, HazardError, Rule, RuleBroken
from engine.fold import INITIAL, Folding, fold
from engine.phrase import Phrase, of_refusal
from engine.quick import QUICK
from engine.rounds import RoundBook, RoundRecord
from engine.serverdice import SERVER, commit_to, draw, is_seed, require_draw_next, turn_change
from engine.state import Phase, TableState
from engine.words import command_words, describe, same_kind

_PLACED = frozenset({ev.CasterStaked, ev.StakeLaid, ev.OddsLaid, ev.SideBetOffered})
_CLOSING = (ev.BetSettled, ev.BetVoided)
_DISPUTE_CAUSES = frozenset({ev.DisputeOpened, ev.DisputeResolved})
_FROM_FILE = ""
"""The seed or commitment of a turn event the referee expects: the file gives it."""


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

    To judge a dispute, a referee keeps the last rounds it read (engine.rounds.RoundBook).
    A caller that knows no dispute comes on the stream (the offline verify looks through
    the file first) says `disputes=False`, and the referee keeps none of them.
    """

    def __init__(
        self,
        state: TableState = INITIAL,
        on_group: Callable[[Sequence[ev.Event], TableState, TableState], None] | None = None,
        judge_disputes: bool = True,
        source: str = "the file",
        disputes: bool = True,
    ) -> None:
        self._folding = Folding(state)
        """The fold kept open on `state`, to fold each group's events on: it holds the
        state (a group checked quickly leaves it to be frozen when next asked for)."""
        self._before: TableState | None = None
        """The state before the group being compared, while it is (the fold kept open
        may be past it: a throw folds its first event to decide its bets)."""
        self.source = source
        """Where the events checked come from, as its messages say it: an export file,
        or the log in the database (`hazard verify --deep`)."""
        self.bets = 0
        self._on_group = on_group
        self._judging = judge_disputes
        self._book = RoundBook(whole_from=1 if state.version == 0 else None) if disputes else None
        """The last rounds, to judge a dispute over one; None when the caller has looked
        at the stream ahead and no dispute comes (`disputes=False`): fifty rounds of
        events and states a table, kept for nothing."""
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
        self._last: tuple[ev.Event, Sequence[ev.Event], TableState | None] | None = None
        """The last complete group: its cause, its events, the state before it (None
        when the group was checked quickly: the state now says the same of it)."""
        self._drawn: list[ev.DiceDrawn] = []
        """The server throws of the turn in play, checked once its seed is revealed."""
        self._committed_at = 0
        """The version of the turn's `SeedCommitted`, if the referee saw it."""

    @property
    def state(self) -> TableState:
        before = self._before
        return before if before is not None else self._folding.state

    @state.setter
    def state(self, state: TableState) -> None:
        self._before = None
        if self._folding.state is not state:  # come to otherwise than by the fold kept
            self._folding = Folding(state)

    def at_rest(self) -> tuple[ev.Event, tuple[ev.Event, ...], TableState | None, int] | None:
        """A closed table's referee with nothing left waiting (no command's events being
        compared, no throw to draw again, no dispute's adjustments, no rounds kept): what
        it judges any later event by besides the state, its last group (`orphan`'s
        words) and the rounds it began after; None otherwise."""
        if (
            self.state.phase is not Phase.CLOSED
            or not self.at_boundary
            or self._drawn
            or self._trusting is not None
            or self._book is not None
            or self._on_group is not None
            or self._last is None
        ):
            return None
        cause, due, before = self._last
        return cause, tuple(due), before, self._ended_before

    @classmethod
    def resumed(
        cls,
        state: TableState,
        last: tuple[ev.Event, tuple[ev.Event, ...], TableState | None, int],
        bets: int,
        trusted: list[int],
        source: str,
    ) -> Referee:
        """The referee `at_rest` gave `last` of, as it was: it judges what comes next
        as that one would."""
        referee = cls(state, source=source, disputes=False)
        cause, due, before, referee._ended_before = last
        referee._last = (cause, due, before)
        referee._cause = cause
        referee.bets, referee.trusted = bets, trusted
        return referee

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
                Phrase(
                    "the stream ends inside ",
                    self._what(),
                    ": it also derives ",
                    describe(missing),
                    f"{more}{self._so_far()}",
                ),
            )

    # -- a group -------------------------------------------------------------------

    def _begin(self, event: ev.Event) -> None:
        quick = QUICK.get(event.__class__)
        if quick is not None and self._quickly(event, quick):
            return
        before = self._before  # `self.state`, without the property: run for every command
        state = self._before = before if before is not None else self._folding.state
        if event.version != state.version + 1:
            raise Disagreement(
                event.version,
                f"{type(event).__name__} has version {event.version}, but the table's next "
                f"event is version {state.version + 1}: the stream skips or repeats an event",
            )
        self._cause = event
        run = COMMANDS.get(event.__class__)
        if run is None:
            raise Disagreement(event.version, f"unknown event type {type(event).__name__}")
        if event.__class__ in _DISPUTE_CAUSES:
            run = self._judge
        try:
            require_draw_next(state, event)
            due = self._run(run, state, event)
        except Disagreement:
            raise
        except Orphan:
            raise self.orphan(event) from None
        except RuleBroken as exc:
            raise Disagreement(
                event.version,
                Phrase(
                    "the engine refuses ",
                    self._what(),
                    ": ",
                    of_refusal(exc),
                    f" (rule {exc.code})",
                ),
            ) from None
        except (HazardError, TypeError, ValueError, AssertionError) as exc:
            raise Disagreement(
                event.version, Phrase("the engine cannot run ", self._what(), f": {exc}")
            ) from None
        if due is _TRUSTED:
            return
        if not due:
            raise Disagreement(
                event.version, Phrase(describe(event), ": the engine derives nothing from it here")
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

    def _quickly(self, event: ev.Event, quick: Callable[[object, ev.Event], bool]) -> bool:
        """Check a command of one event by its quick check (engine.quick) on the fold's
        own table, and fold it there: whether the check let it through. When it does
        not, the command is run as any other (`_begin`), and says why if it refuses."""
        keeps = self._book is not None or self._on_group is not None
        folding = self._folding
        before = folding.state if keeps else None  # the book's and the caller's, frozen
        if not folding.admit(event, quick):
            return False
        self._cause = event
        due = (event,)
        if event.__class__ in _PLACED:
            self.bets += 1
        if keeps:
            assert before is not None
            after = folding.state
            if self._book is not None:
                self._book.add(due, before, after)
            if self._on_group is not None:
                self._on_group(due, before, after)
        # No state before it kept for `orphan`'s words: none of these commands changes
        # what they say of it (the rules, the main and the chance).
        self._last = (event, due, None)
        return True

    def _run(self, run: Run, state: TableState, event: ev.Event) -> Sequence[ev.Event]:
        """The events of the command `event` records, run on `state`: a throw on the fold
        kept open on it, which the group's events are then folded on (`_fold`)."""
        on_the_fold = ON_THE_FOLD.get(event.__class__)
        if on_the_fold is None:
            return run(state, event)
        folding = self._folding
        if folding.state is not state:
            folding = self._folding = Folding(state)
        return on_the_fold(state, event, folding)

    def _settle(self) -> None:
        """The group is complete and matches: fold it onto the state, once."""
        due, before = self._due, self.state  # the state before the group (`_before`)
        try:
            after = self._fold(due, before)
        except HazardError as exc:  # the engine's own events do not fold: an engine bug
            raise Disagreement(due[-1].version, f"the engine's events do not fold: {exc}") from None
        self.state = after
        if due[0].__class__ in _PLACED:
            self.bets += 1
        if self._book is not None:
            self._book.add(due, before, after)
        if self._on_group is not None:
            self._on_group(due, before, after)
        if after.dice == SERVER:
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

    def _fold(self, due: Sequence[ev.Event], before: TableState) -> TableState:
        """The state after the group `due`, which `before` was the state before: the
        same as `fold(due, before)`, folded on the copy of the table kept from the last
        group rather than on a new one."""
        if isinstance(due, Drafted) and due.folding is not None and due.folded is not None:
            # The command folded its first events (a throw, before deciding its bets):
            # the rest go on its copy. Taken, and let go: the round book files these
            # events for the last rounds, and a state kept with each throw of them was
            # most of the verify's memory (fifty rounds' worth, in every table).
            (done, after), folding = due.folded, due.folding
            due.folded = due.folding = None
            self._folding = folding
            return after if done == len(due) else folding.fold(due[done:])
        folding = self._folding
        if folding.state is not before:  # the state was come to otherwise (on trust)
            folding = self._folding = Folding(before)
        return folding.fold(due)

    # -- disputes ------------------------------------------------------------------------

    def _judge(self, state: TableState, event: ev.Event) -> list[ev.Event]:
        """Run the dispute command `event` records, on the record of its round; or take
        it on trust when this referee did not see that round whole."""
        if self._book is None:
            # The caller said no dispute comes on this stream: judging one without its
            # round would give another verdict, so the caller's mistake stops the check.
            raise RuntimeError(f"a dispute at version {event.version}, where none was to come")
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
            raise Disagreement(
                event.version, Phrase(describe(event), f" does not fold: {exc}")
            ) from None
        self.trusted.append(event.version)
        if isinstance(event, ev.DisputeResolved):
            self._trusting = event.dispute_id
        if self._book is not None:
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

    def _what(self, cause: ev.Event | None = None, state: TableState | None = None) -> Phrase:
        """The command being compared, in words."""
        return command_words(cause or self._cause, self.state if state is None else state)

    def _so_far(self) -> str:
        matched = self._due[1 : self._next]
        closed = [e.bet_id for e in matched if isinstance(e, _CLOSING)]
        due = [e.bet_id for e in self._due if isinstance(e, _CLOSING)]
        if not due:
            return ""
        return (
            f" (it decides bets {', '.join(due)}; {self.source} closes "
            f"{'only ' + ', '.join(closed) if closed else 'none of them'})"
        )

    def _differs(self, got: ev.Event, want: ev.Event) -> Disagreement:
        return Disagreement(got.version, self._explain(got, want))

    def _explain(self, got: ev.Event, want: ev.Event) -> Phrase:
        what = self._what()
        due_closing = [e.bet_id for e in self._due if isinstance(e, _CLOSING)]
        if type(got) is type(want) and getattr(got, "bet_id", None) == getattr(
            want, "bet_id", None
        ):
            if got.version != want.version:
                return Phrase(
                    f"{type(got).__name__} has version {got.version}, but ",
                    what,
                    f" derives it as version {want.version}",
                )
            return same_kind(got, want, what)
        if type(got) is type(want) and got.__class__ in _PLACED:
            return Phrase(
                describe(got),
                ", but the bet ",
                what,
                f" places is {getattr(want, 'bet_id', '')}: a bet's id comes from the version "
                "of the event that places it",
            )
        if isinstance(got, _CLOSING) and isinstance(want, _CLOSING):
            if got.bet_id in due_closing[due_closing.index(want.bet_id) :]:
                return Phrase(
                    f"{self.source} has ",
                    describe(got),
                    " where ",
                    what,
                    f" closes {want.bet_id} next (it decides bets {', '.join(due_closing)}, in "
                    "that order): ",
                    describe(want),
                )
            return Phrase(
                describe(got),
                ", but ",
                what,
                f" does not decide {got.bet_id}",
                f": it decides bets {', '.join(due_closing)}" if due_closing else "",
            )
        if isinstance(want, _CLOSING):
            return Phrase(
                what,
                f" decides bets {', '.join(due_closing)} but {self.source} closes ",
                self._closed_so_far(),
                ": ",
                describe(want),
                " is missing, ",
                describe(got),
                " is in its place",
            )
        if isinstance(got, _CLOSING):
            return Phrase(
                describe(got),
                ", but ",
                what,
                f" decides only {', '.join(due_closing)}" if due_closing else " decides no bet",
                ": the engine derives ",
                describe(want),
                " here",
            )
        if isinstance(got, ev.StakeCovered) or isinstance(want, ev.StakeCovered):
            pending = [e.bet_id for e in self._due if isinstance(e, ev.StakeCovered)]
            return Phrase(
                what,
                f" covers every pending stake ({', '.join(pending)}) under hard-core play, in "
                "that order: the engine derives ",
                describe(want),
                f", {self.source} has ",
                describe(got),
            )
        return Phrase(
            what, " derives ", describe(want), f" here, but {self.source} has ", describe(got)
        )

    def _closed_so_far(self) -> str:
        closed = [e.bet_id for e in self._due[: self._next] if isinstance(e, _CLOSING)]
        return "only " + ", ".join(closed) if closed else "none of them"

    def orphan(self, event: ev.Event) -> Disagreement:
        """An event that only a command derives, standing where a command must start."""
        last = self._last
        text = Phrase(describe(event), " is derived by no command here")
        if last is not None:
            cause, due, before = last
            closing = [e.bet_id for e in due if isinstance(e, _CLOSING)]
            what = command_words(cause, self.state if before is None else before)
            if isinstance(event, _CLOSING):
                text = Phrase(
                    describe(event),
                    ", but ",
                    what,
                    f" decides only {', '.join(closing)}" if closing else " decides no bet",
                    f", and no command since decides {event.bet_id}",
                )
            else:
                text = Phrase(text, ": the events of ", what, " ended before it")
        return Disagreement(event.version, text)


_TRUSTED: list[ev.Event] = []
"""What `Referee._judge` returns for a dispute event it took on trust."""


# -- reading a round back -----------------------------------------------------------------


def read_round(
    number: int, start: TableState, events: Iterable[ev.Event], now: TableState
) -> RoundRecord:
    """Round `number`'s record, from `start` (the table at the end of a command, before
    the round's first event) and the events after it, read until the round has ended
    and each of its bets is closed, or the events end. `now` is the table as it stands.
    Raises RuleBroken(ROUND_NOT_ENDED) if the events never reach the round's end."""
    book = RoundBook(keep=1 << 30, whole_from=start.round, most=None)
    referee = Referee(start, on_group=book.add, judge_disputes=False)
    pending: list[ev.Event] = []
    state = start
    broken: Phrase | None = None
    for e in events:
        if broken is None:
            pending.append(e)
            try:
                referee.check(e)
            except Disagreement as exc:
                broken = Phrase(f"at version {exc.version}: ", exc.reason)
                state = referee.state
                book.mismatch[number] = broken
                for raw in pending:  # from the last whole command, event by event
                    state = _raw(book, raw, state)
                pending = []
                continue
            if referee.at_boundary:
                pending = []
                state = referee.state
        else:
            state = _raw(book, e, state)
        if (
            state.round > number
            and not any(b.round == number for b in state.bets.values())
            and (broken is not None or referee.at_boundary)
        ):
            break
    record = book.record(number, now)
    if record is None or not record.ended:
        raise RuleBroken(Rule.ROUND_NOT_ENDED, f"round {number} has not ended")
    return record


def _raw(book: RoundBook, e: ev.Event, state: TableState) -> TableState:
    after = fold([e], state)
    book.add((e,), state, after)
    return after
