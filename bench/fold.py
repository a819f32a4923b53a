"""How fast `engine.fold.fold` replays a recorded table, against two baselines.

Run from the repository root:

    .venv/bin/python -m bench.fold                 # readable table
    .venv/bin/python -m bench.fold --json          # machine-readable JSON on stdout
    .venv/bin/python -m bench.fold --events 200000 --repeat 5

The targets (from the issue): fold recorded throws at 1,000,000 or more events a second
on one core, and a mixed stream with bets and settlements at 300,000 or more.

Five contenders are timed in one run, interleaved: each repetition runs every
contender once, in an order rotated by one place per repetition, so slow drift in
the machine (thermal, noisy neighbours) spreads over all of them alike.

  baseline_bare_loop     A bare loop over the recorded dice doing only the
                         nick/out/chance arithmetic. No objects built. The ceiling.
  baseline_bare_loop_events
                         The same loop reading the dice off the event objects
                         (class check, attribute loads). Informational.
  baseline_frozen_state  The same events folded by a design that builds a new frozen
                         dataclass state (8 fields) per event. The design to beat.
  engine_fold_throws     engine.fold.fold over the recorded throws stream.
  engine_fold_mixed      engine.fold.fold over a mixed stream of throws, bets,
                         odds, side bets and settlements.

Both streams are generated once, before any timing, by driving the real engine
commands (open_table, seat, cast_for_caster, call_main, throw, stake, lay, cover,
lay_odds, offer_side_bet, accept_side_bet, void_throw) with a seeded random.Random,
so every event is exactly what the commands produce. Only the fold is timed.

Speed is reported, never asserted: the numbers are medians over the repetitions.
Standard library only.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine import BUILTIN, SETTER, Phase, Proposition, PropositionKind, TableState
from engine import events as ev
from engine.betting import accept_side_bet, cover, lay, lay_odds, offer_side_bet, stake
from engine.fold import INITIAL, contest_for, fold
from engine.play import call_main, throw, void_throw
from engine.rules import Outcome, RuleSet
from engine.table import cast_for_caster, open_table, seat

SEED = 1757
PLAYERS = ("ann", "bob", "cat")
THROWS_TARGET = 1_000_000
MIXED_TARGET = 300_000
DEFAULT_EVENTS = 1_000_000
MIXED_SHARE = 0.3
"""The mixed stream's default size, as a share of --events."""

# Multiples of 60 make every odds payout exact: Hoyle's odds are ways(main)/ways(chance)
# (or the inverse), and 60 is a multiple of every ways() from 1 to 6.
UNIT = 60
FUNDS = 10**12
"""What the caster has free to cover stakes: never the limit in this benchmark."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- generating the streams through the real commands -----------------------------


class _Recorder:
    """Keeps the events the commands return and the state they fold to."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []
        self.state: TableState = INITIAL

    def record(self, new: list[ev.Event]) -> list[ev.Event]:
        self.events.extend(new)
        self.state = fold(new, self.state)
        return new


def _set_up(rng: random.Random, rules: RuleSet) -> _Recorder:
    """Open a table, seat three players and cast for the first caster."""
    rec = _Recorder()
    rec.record(open_table(rules, state=rec.state))
    for player in PLAYERS:
        rec.record(seat(rec.state, player))
    while rec.state.phase is Phase.SEATING:
        s = rec.state
        contest, casts = contest_for(s.contest, s.casts, s.seats)
        player = next(p for p in contest if p not in casts)
        rec.record(cast_for_caster(s, player, rng.randrange(1, 7)))
    return rec


def generate_throws(n: int, seed: int) -> list[ev.Event]:
    """A called-main table that only throws: MainCalled, then throws until the round
    ends, round after round (the commands add DicePassed after three losses)."""
    rng = random.Random(seed)
    rec = _set_up(rng, BUILTIN["english"])
    die = rng.randrange
    while len(rec.events) < n:
        rec.record(call_main(rec.state, die(5, 10)))
        current = rec.state.round
        while rec.state.round == current:
            rec.record(throw(rec.state, die(1, 7), die(1, 7)))
    return rec.events


def _side_proposition(rng: random.Random, phase: Phase) -> Proposition:
    kinds = [PropositionKind.CASTER_WINS, PropositionKind.NEXT_TOTAL]
    if phase is not Phase.CHANCE:
        kinds += [PropositionKind.CHANCE_BEFORE_MAIN, PropositionKind.NICK_FIRST_THROW]
    else:
        kinds += [PropositionKind.CHANCE_BEFORE_MAIN]
    kind = rng.choice(kinds)
    if kind is PropositionKind.NEXT_TOTAL:
        return Proposition(kind, frozenset(rng.sample(range(2, 13), rng.randrange(1, 6))))
    return Proposition(kind)


def _offer_side_bet(rec: _Recorder, rng: random.Random, accept_p: float) -> None:
    """Someone offers a side bet; usually someone else takes it, else it stays
    pending and the throw that decides it voids it (never-accepted)."""
    s = rec.state
    participants = [*s.seats, SETTER]
    offerer = rng.choice(participants)
    prop = _side_proposition(rng, s.phase)
    amount = rng.randrange(1, 11) * 10
    asks = rng.randrange(1, 11) * 10
    new = rec.record(offer_side_bet(s, offerer, prop, rng.random() < 0.5, amount, asks))
    if rng.random() < accept_p:
        acceptor = rng.choice([p for p in participants if p != offerer])
        rec.record(accept_side_bet(rec.state, new[0].bet_id, acceptor))  # type: ignore[union-attr]


def _throw(rec: _Recorder, rng: random.Random) -> None:
    """A throw; now and then a cocked or wild one first, recast as the rules say."""
    die1, die2 = rng.randrange(1, 7), rng.randrange(1, 7)
    if rng.random() < 0.03:
        off = rng.choice((0, 1, 2))
        standing = rng.randrange(1, 7) if off and rng.random() < 0.5 else None
        rec.record(void_throw(rec.state, rng.choice(("cocked", "wild")), off, standing))
        if standing is not None:
            # The die that stood keeps its value; only the die that went off is recast.
            if off == 1:
                die2 = standing
            else:
                die1 = standing
    rec.record(throw(rec.state, die1, die2))


def generate_mixed(n: int, seed: int) -> list[ev.Event]:
    """Rounds with money on them.

    Each round: the caster calls the main and stakes against the setter; usually
    another player lays a stake and the caster covers it; side bets are offered and
    (mostly) accepted; once a chance is set the caster backs it with odds and the
    player who laid backs the main. The throw command settles (BetSettled) or voids
    (BetVoided) whatever each throw decides, and passes the dice after three losses.
    """
    rng = random.Random(seed)
    rec = _set_up(rng, BUILTIN["english"])
    while len(rec.events) < n:
        s = rec.state
        caster = s.caster
        assert caster is not None
        rec.record(call_main(s, rng.randrange(5, 10)))
        caster_stake = rng.randrange(1, 6) * UNIT
        rec.record(stake(rec.state, caster_stake))
        layer, laid = None, 0
        if rng.random() < 0.8:
            layer = rng.choice([p for p in rec.state.seats if p != caster])
            laid = rng.randrange(1, 6) * UNIT
            rec.record(lay(rec.state, layer, laid))
            rec.record(cover(rec.state, FUNDS))
        for _ in range(rng.randrange(0, 3)):
            _offer_side_bet(rec, rng, accept_p=0.85)
        current = rec.state.round
        odds_laid = False
        while rec.state.round == current:
            if rec.state.phase is Phase.CHANCE:
                if not odds_laid:
                    odds_laid = True
                    if rng.random() < 0.7:
                        amount = rng.randrange(1, caster_stake // UNIT + 1) * UNIT
                        rec.record(lay_odds(rec.state, caster, "chance", amount))
                    if layer is not None and rng.random() < 0.5:
                        amount = rng.randrange(1, laid // UNIT + 1) * UNIT
                        rec.record(lay_odds(rec.state, layer, "main", amount))
                if rng.random() < 0.15:
                    _offer_side_bet(rec, rng, accept_p=0.85)
            _throw(rec, rng)
    return rec.events


def composition(events: Sequence[ev.Event]) -> dict[str, int]:
    return dict(Counter(type(e).__name__ for e in events).most_common())


# -- the contenders ---------------------------------------------------------------


def dice_of(events: Sequence[Any]) -> list[tuple[int, int]]:
    """The recorded dice as plain pairs for the bare loop: (die1, die2) for a throw,
    (0, main) for a called main. Other events carry no dice and are left out."""
    out: list[tuple[int, int]] = []
    for e in events:
        if e.__class__ is ev.DiceThrown:
            out.append((e.die1, e.die2))
        elif e.__class__ is ev.MainCalled:
            out.append((0, e.main))
    return out


def bare_loop(pairs: list[tuple[int, int]], table: Any) -> tuple[int, int]:
    """Only the round's arithmetic: outcome lookup on the first throw, the chance and
    main comparison in the chance phase, and the reset when the round ends."""
    chance_o, nick = Outcome.CHANCE, Outcome.NICK
    phase = main = chance = wins = losses = 0  # phase: 0 awaiting main, 1 first throw, 2 chance
    row: tuple[Outcome, ...] = ()
    for d1, d2 in pairs:
        if not d1:
            main = d2
            row = table[main]
            phase = 1
            continue
        total = d1 + d2
        if phase == 2:
            if total == chance:
                wins += 1
                phase = main = chance = 0
            elif total == main:
                losses += 1
                phase = main = chance = 0
        else:
            outcome = row[total]
            if outcome is chance_o:
                chance = total
                phase = 2
            elif outcome is nick:
                wins += 1
                phase = main = 0
            else:
                losses += 1
                phase = main = 0
    return wins, losses


def bare_loop_events(events: Sequence[Any], table: Any) -> tuple[int, int]:
    """The bare loop again, but reading the dice off the recorded event objects (class
    check and attribute loads per event), as a fold must. Informational."""
    thrown, called = ev.DiceThrown, ev.MainCalled
    chance_o, nick = Outcome.CHANCE, Outcome.NICK
    phase = main = chance = wins = losses = 0
    row: tuple[Outcome, ...] = ()
    for e in events:
        cls = e.__class__
        if cls is not thrown:
            if cls is called:
                main = e.main
                row = table[main]
                phase = 1
            continue
        total = e.die1 + e.die2
        if phase == 2:
            if total == chance:
                wins += 1
                phase = main = chance = 0
            elif total == main:
                losses += 1
                phase = main = chance = 0
        else:
            outcome = row[total]
            if outcome is chance_o:
                chance = total
                phase = 2
            elif outcome is nick:
                wins += 1
                phase = main = 0
            else:
                losses += 1
                phase = main = 0
    return wins, losses


@dataclass(frozen=True)
class FrozenState:
    """The naive design's state: a new frozen dataclass for every event."""

    version: int = 0
    phase: int = 0
    main: int = 0
    chance: int = 0
    throws: int = 0
    round: int = 0
    wins: int = 0
    losses: int = 0


def frozen_state_fold(events: Sequence[Any], table: Any) -> tuple[int, int]:
    """The same rules over the same events, building a new FrozenState per event."""
    thrown, called, new = ev.DiceThrown, ev.MainCalled, FrozenState
    chance_o, nick = Outcome.CHANCE, Outcome.NICK
    s = new()
    for e in events:
        cls = e.__class__
        if cls is thrown:
            total = e.die1 + e.die2
            if s.phase == 2:
                if total == s.chance:
                    s = new(e.version, 0, 0, 0, 0, s.round + 1, s.wins + 1, s.losses)
                elif total == s.main:
                    s = new(e.version, 0, 0, 0, 0, s.round + 1, s.wins, s.losses + 1)
                else:
                    s = new(e.version, 2, s.main, s.chance, s.throws + 1, s.round, s.wins, s.losses)
            else:
                outcome = table[s.main][total]
                if outcome is chance_o:
                    s = new(e.version, 2, s.main, total, 1, s.round, s.wins, s.losses)
                elif outcome is nick:
                    s = new(e.version, 0, 0, 0, 0, s.round + 1, s.wins + 1, s.losses)
                else:
                    s = new(e.version, 0, 0, 0, 0, s.round + 1, s.wins, s.losses + 1)
        elif cls is called:
            s = new(e.version, 1, e.main, 0, 0, s.round, s.wins, s.losses)
        else:
            s = new(e.version, s.phase, s.main, s.chance, s.throws, s.round, s.wins, s.losses)
    return s.wins, s.losses


@dataclass
class Contender:
    name: str
    stream: str
    items: int
    """What the rate counts: events folded (dice pairs for the bare loop)."""
    run: Callable[[], Any]
    target: int | None = None
    rates: list[float] | None = None


def _time_once(run: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(contenders: list[Contender], repeat: int) -> None:
    """Time every contender `repeat` times, interleaved, rotating the order each time."""
    for c in contenders:  # one untimed warm-up each
        c.rates = []
        _time_once(c.run)
    k = len(contenders)
    for r in range(repeat):
        order = contenders[r % k :] + contenders[: r % k]
        for c in order:
            seconds = _time_once(c.run)
            assert c.rates is not None
            c.rates.append(c.items / seconds)
        _say(f"  repetition {r + 1}/{repeat} done")


# -- reporting --------------------------------------------------------------------


def _machine() -> dict[str, Any]:
    try:
        cpus: list[int] | None = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": cpus,
    }


def summarise(contenders: list[Contender]) -> dict[str, Any]:
    bare = next(c for c in contenders if c.name == "baseline_bare_loop")
    assert bare.rates
    bare_median = statistics.median(bare.rates)
    out: dict[str, Any] = {}
    for c in contenders:
        assert c.rates
        median = statistics.median(c.rates)
        out[c.name] = {
            "stream": c.stream,
            "items": c.items,
            "rates": [round(x) for x in c.rates],
            "median": round(median),
            "min": round(min(c.rates)),
            "max": round(max(c.rates)),
            "ratio_to_bare_loop": round(median / bare_median, 4),
            "target": c.target,
            "target_met": None if c.target is None else median >= c.target,
        }
    return out


def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:.3f}M"


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"bench.fold  Python {m['python']} ({m['implementation']}) on {m['platform']}",
        f"  cpus: {m['cpu_count']}, affinity: {m['cpu_affinity']}   seed: {report['seed']}"
        f"   repetitions: {report['repeat']} (interleaved, plus one warm-up each)",
        "",
        "Streams (generated once through the engine commands; not timed below):",
    ]
    for name, g in report["streams"].items():
        comp = ", ".join(f"{k} {v}" for k, v in g["composition"].items())
        lines.append(
            f"  {name:<7} {g['events']:>9,} events in {g['generation_seconds']:.1f} s"
            f" ({g['events'] / g['generation_seconds']:,.0f}/s through the commands)"
        )
        lines.append(f"          {comp}")
    lines += [
        "",
        f"{'contender':<25} {'stream':<7} {'items':>9}  {'median/s':>9} {'min/s':>9} "
        f"{'max/s':>9}  {'x bare':>6}  target",
    ]
    for name, r in report["results"].items():
        if r["target"] is None:
            target = "-"
        else:
            verdict = "MET" if r["target_met"] else "MISSED"
            target = f">= {r['target'] / 1e6:g}M/s {verdict}"
        lines.append(
            f"{name:<25} {r['stream']:<7} {r['items']:>9,}  {_fmt_rate(r['median']):>9} "
            f"{_fmt_rate(r['min']):>9} {_fmt_rate(r['max']):>9}  {r['ratio_to_bare_loop']:>6.3f}"
            f"  {target}"
        )
    lines += [
        "",
        "items: events folded; for the bare loop, the throws and called mains of the",
        "throws stream as (die1, die2) / (0, main) pairs. x bare: median / bare-loop median.",
        f"Total run time {report['total_seconds']:.1f} s.",
    ]
    return "\n".join(lines)


def profile(events: Sequence[ev.Event], label: str, top: int = 12) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fold(events)
    prof.disable()
    buf = io.StringIO()
    buf.write(f"\n-- cProfile of one fold over the {label} stream ({len(events):,} events) --\n")
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fold", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--events",
        type=int,
        default=DEFAULT_EVENTS,
        help=f"size of the throws stream (default {DEFAULT_EVENTS:,})",
    )
    parser.add_argument(
        "--mixed-events",
        type=int,
        default=None,
        help=f"size of the mixed stream (default {MIXED_SHARE:g} x --events)",
    )
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions (default 7)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"generator seed (default {SEED})")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile one engine fold of each stream"
    )
    args = parser.parse_args(argv)
    mixed_n = args.mixed_events if args.mixed_events is not None else int(args.events * MIXED_SHARE)
    if args.events < 1 or mixed_n < 1 or args.repeat < 1:
        parser.error("--events, --mixed-events and --repeat must be at least 1")

    started = time.perf_counter()
    rules = BUILTIN["english"]
    streams: dict[str, Any] = {}

    _say(f"generating the throws stream (~{args.events:,} events) through the commands...")
    t0 = time.perf_counter()
    throws_stream = generate_throws(args.events, args.seed)
    streams["throws"] = {
        "events": len(throws_stream),
        "generation_seconds": round(time.perf_counter() - t0, 3),
        "composition": composition(throws_stream),
    }
    _say(f"generating the mixed stream (~{mixed_n:,} events) through the commands...")
    t0 = time.perf_counter()
    mixed_stream = generate_mixed(mixed_n, args.seed + 1)
    streams["mixed"] = {
        "events": len(mixed_stream),
        "generation_seconds": round(time.perf_counter() - t0, 3),
        "composition": composition(mixed_stream),
    }

    # Every contender must reach the same result as the engine, or it is not doing
    # the same work.
    pairs = dice_of(throws_stream)
    table = rules.first_throw
    final = fold(throws_stream)
    expected = (final.wins, final.losses)
    assert bare_loop(pairs, table) == expected, "bare loop disagrees with the engine"
    assert bare_loop_events(throws_stream, table) == expected, "bare loop disagrees"
    assert frozen_state_fold(throws_stream, table) == expected, "frozen baseline disagrees"
    assert fold(mixed_stream).version == len(mixed_stream)

    contenders = [
        Contender("baseline_bare_loop", "throws", len(pairs), lambda: bare_loop(pairs, table)),
        Contender(
            "baseline_bare_loop_events",
            "throws",
            len(throws_stream),
            lambda: bare_loop_events(throws_stream, table),
        ),
        Contender(
            "baseline_frozen_state",
            "throws",
            len(throws_stream),
            lambda: frozen_state_fold(throws_stream, table),
        ),
        Contender(
            "engine_fold_throws",
            "throws",
            len(throws_stream),
            lambda: fold(throws_stream),
            THROWS_TARGET,
        ),
        Contender(
            "engine_fold_mixed",
            "mixed",
            len(mixed_stream),
            lambda: fold(mixed_stream),
            MIXED_TARGET,
        ),
    ]
    _say(f"timing {len(contenders)} contenders x {args.repeat} repetitions, interleaved...")
    measure(contenders, args.repeat)
    results = summarise(contenders)

    report = {
        "benchmark": "bench.fold",
        "machine": _machine(),
        "seed": args.seed,
        "repeat": args.repeat,
        "streams": streams,
        "results": results,
        "targets": {"engine_fold_throws": THROWS_TARGET, "engine_fold_mixed": MIXED_TARGET},
        "targets_met": all(r["target_met"] for r in results.values() if r["target"] is not None),
        "total_seconds": round(time.perf_counter() - started, 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    if args.profile:
        text = profile(throws_stream, "throws") + profile(mixed_stream, "mixed")
        print(text, file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
