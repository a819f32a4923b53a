"""Bets: placing them, and resolving them when a throw or a departure decides them."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from fractions import Fraction
from math import ceil, floor

from engine import events as ev
from engine.command import (
    Draft,
    open_rules,
    pass_to_left,
    require_caster,
    require_exposure,
    require_participant,
    require_player,
    require_stake,
)
from engine.dice import TOTALS
from engine.errors import Rule, RuleBroken
from engine.events import Proposition, PropositionKind
from engine.money import odds_payout, payout_transfers, refund_transfers, settled_breakage
from engine.odds import odds_ratio
from engine.rules import CoverPolicy, Rounding, RuleSet
from engine.state import SETTER, Bet, BetKind, Phase, RoundResult, TableState

MAX_OPEN_BETS = 1000
"""A table holds at most this many open bets and offers together, so that the table's
state and the write that closes them all (closing the table, a throw, a caster
leaving) stay bounded: one event per bet closed."""
RESERVE = 200
"""Places of the table's cap kept for the round's own stakes (the caster's against the
setter, the lays against the caster) and the setter's offers: players' offers and odds
fill the table to `PLAYERS_SHARE` only, so they can never leave a round unable to be bet."""
PLAYERS_SHARE = MAX_OPEN_BETS - RESERVE
MAX_BETS_PER_PLAYER = 100
"""The most open bets and offers one player may be party to at a table (the setter
aside: it is the bank). Well below `PLAYERS_SHARE`, so that one player cannot fill the
table for the rest. The caster's stake and covers are not refused by it: the round's
stakes are the game itself, and a caster covers what others lay."""


class Verdict(enum.Enum):
    """What a throw made of a bet's proposition, once it is decided."""

    YES = "yes"
    """The proposition came true: the bet's `yes` side wins."""
    NO = "no"
    """The proposition did not come true: the bet's `no` side wins."""
    VOID = "void"
    """The proposition can never be decided now (its round ended without deciding it):
    the bet is voided and every stake returned."""


_BEFORE_FIRST_THROW = (Phase.AWAITING_MAIN, Phase.FIRST_THROW)
_IN_ROUND = (Phase.AWAITING_MAIN, Phase.FIRST_THROW, Phase.CHANCE)


def _require_round_betting(state: TableState) -> str:
    caster = require_caster(state)
    if state.phase not in _BEFORE_FIRST_THROW:
        raise RuleBroken(
            Rule.BETTING_CLOSED, "stakes on the round are placed before its first throw"
        )
    return caster


def _require_room(state: TableState, placer: str | None = None, reserved: bool = False) -> None:
    """Room for one more open bet or offer at the table: within the table's cap, within
    the players' share of it unless the bet is `reserved` (a round's stake, a lay, or the
    setter's), and within `placer`'s own cap (None: the caster's stake)."""
    if len(state.bets) >= MAX_OPEN_BETS:
        raise RuleBroken(
            Rule.TOO_MANY_OPEN_BETS,
            f"the table holds at most {MAX_OPEN_BETS} open bets and offers; wait for some "
            "to resolve",
        )
    if state.limits.caps < 2:  # opened before players had caps of their own
        return
    if not reserved and placer != SETTER and len(state.bets) >= PLAYERS_SHARE:
        raise RuleBroken(
            Rule.TOO_MANY_OPEN_BETS,
            f"the table holds {len(state.bets)} open bets and offers: players' offers and "
            f"odds fill it to {PLAYERS_SHARE}, and the other {RESERVE} places are kept for "
            "the caster's stake, the lays and the setter's offers; wait for some to resolve",
        )
    _require_own_room(state, placer)


def _require_own_room(state: TableState, player: str | None) -> None:
    """Room for `player` to be party to one more open bet or offer (the setter, and None,
    always have it)."""
    if player is None or player == SETTER or state.limits.caps < 2:
        return
    # `player in b.parties`, without building each bet's parties: run for every bet
    # placed, over every open bet of the table.
    held = sum(1 for b in state.bets.values() if b.yes == player or b.no == player)
    if held >= MAX_BETS_PER_PLAYER:
        raise RuleBroken(
            Rule.TOO_MANY_OWN_BETS,
            f"{player!r} holds {held} open bets and offers at this table, the most one "
            "player may: wait for some to resolve, or withdraw an offer",
        )


def stake(state: TableState, amount: int) -> list[ev.Event]:
    """The caster stakes `amount` against the setter, at even money."""
    caster = _require_round_betting(state)
    if any(b.kind is BetKind.CASTER and b.round == state.round for b in state.bets.values()):
        raise RuleBroken(Rule.CASTER_ALREADY_STAKED, "the caster has already staked this round")
    require_stake(state, amount)
    require_exposure(state, amount)
    _require_room(state, reserved=True)
    draft = Draft(state)
    draft.add(ev.CasterStaked, bet_id=draft.next_bet_id(), caster=caster, amount=amount)
    return draft.events


def lay(state: TableState, bettor: str, amount: int) -> list[ev.Event]:
    """`bettor` lays `amount` against the caster; the caster must cover or refuse it."""
    caster = _require_round_betting(state)
    require_player(state, bettor)
    if bettor == caster:
        raise RuleBroken(Rule.CASTER_CANNOT_LAY, "the caster cannot lay a stake against themself")
    require_stake(state, amount)
    _require_room(state, bettor, reserved=True)
    draft = Draft(state)
    draft.add(ev.StakeLaid, bet_id=draft.next_bet_id(), bettor=bettor, amount=amount)
    return draft.events


def _pending_laid(state: TableState) -> list[Bet]:
    return [b for b in state.bets.values() if b.kind is BetKind.LAID and b.pending]


def cover(
    state: TableState, caster_funds: int, bet_ids: Iterable[str] | None = None
) -> list[ev.Event]:
    """The caster matches stakes laid against them, from `caster_funds` (what the
    caster has free to stake, as the ledger knows it).

    Under the refuse policy the caster covers the stakes named (all, if none are) or
    is refused; under hard-core play a caster who cannot cover every stake forfeits.
    """
    caster = require_caster(state)
    rules = open_rules(state)
    if type(caster_funds) is not int or caster_funds < 0:
        raise RuleBroken(Rule.INVALID_STAKE, "the caster's funds are a whole number, 0 or more")
    pending = _pending_laid(state)
    # A stake named twice is covered once (dict.fromkeys keeps the order, drops repeats).
    chosen = (
        pending if bet_ids is None else [_pending_bet(state, i) for i in dict.fromkeys(bet_ids)]
    )
    draft = Draft(state)
    if rules.cover is CoverPolicy.FORFEIT:
        owed = sum(b.no_stake for b in pending)
        if owed > caster_funds:
            _forfeit(state, draft, caster)
            return draft.events
        chosen = pending
    owed = sum(b.no_stake for b in chosen)
    if owed > caster_funds:
        raise RuleBroken(
            Rule.STAKE_NOT_COVERED,
            "the caster has {free} free but the stakes to cover come to {owed}; "
            "cover fewer or refuse some",
            {"free": caster_funds, "owed": owed},
        )
    for bet in chosen:
        draft.add(ev.StakeCovered, bet_id=bet.id, caster=caster, amount=bet.no_stake)
    return draft.events


def refuse(state: TableState, bet_id: str) -> list[ev.Event]:
    """The caster refuses a stake laid against them; it is returned."""
    rules = open_rules(state)
    if rules.cover is CoverPolicy.FORFEIT:
        raise RuleBroken(
            Rule.REFUSAL_NOT_ALLOWED,
            "under hard-core play the caster covers every stake or forfeits the dice",
        )
    bet = _pending_bet(state, bet_id)
    draft = Draft(state)
    draft.add(ev.BetVoided, bet_id=bet.id, reason="refused", transfers=refund_transfers(bet))
    return draft.events


def _pending_bet(state: TableState, bet_id: str) -> Bet:
    bet = state.bets.get(bet_id)
    if bet is None or bet.kind is not BetKind.LAID or not bet.pending:
        raise RuleBroken(Rule.UNKNOWN_BET, f"no stake {bet_id!r} is waiting to be covered")
    return bet


def _forfeit(state: TableState, draft: Draft, caster: str) -> None:
    void_round(state, draft, "forfeit")
    draft.add(ev.CasterForfeited, caster=caster)
    pass_to_left(state, draft, caster, "forfeit")


def lay_odds(state: TableState, bettor: str, on: str, amount: int) -> list[ev.Event]:
    """`bettor` backs the chance (or the main) against the setter at Hoyle's odds."""
    rules = open_rules(state)
    if state.phase is not Phase.CHANCE:
        raise RuleBroken(Rule.ODDS_BEFORE_CHANCE, "odds are laid only once a chance is set")
    require_player(state, bettor)
    if on not in ("chance", "main"):
        raise RuleBroken(Rule.INVALID_PROPOSITION, "odds are on the chance or on the main")
    if type(amount) is not int or amount <= 0:
        raise RuleBroken(Rule.INVALID_STAKE, "the stake must be a whole, positive number")
    mine = [b for b in state.bets.values() if b.round == state.round and bettor in b.parties]
    # The original stake: the caster's stake against the setter, or a player's stakes
    # laid against the caster. Stakes the caster covered are not the caster's own bet.
    original = sum(
        b.yes_stake if b.kind is BetKind.CASTER else b.no_stake
        for b in mine
        if (b.kind is BetKind.CASTER and b.yes == bettor)
        or (b.kind is BetKind.LAID and b.no == bettor)
    )
    if original == 0:
        raise RuleBroken(
            Rule.ODDS_WITHOUT_STAKE, f"{bettor!r} has no stake on this round for odds to back"
        )
    laid = sum(b.held_by(bettor) for b in mine if b.kind is BetKind.ODDS)
    limit = rules.odds_multiple * original
    if laid + amount > limit:
        raise RuleBroken(
            Rule.ODDS_LIMIT,
            f"odds are limited to {rules.odds_multiple} times the original stake of "
            "{original}: {more} more may be laid",
            {"original": original, "more": limit - laid},
        )
    assert state.main is not None and state.chance is not None
    ratio = odds_ratio(state.main, state.chance, on == "chance")
    most = _most_odds(state, rules, ratio, limit - laid)
    payout, breakage = odds_payout(
        state.main, state.chance, on == "chance", amount, rules.rounding, most
    )
    require_exposure(state, payout)
    _require_room(state, bettor)
    draft = Draft(state)
    draft.add(
        ev.OddsLaid,
        bet_id=draft.next_bet_id(),
        bettor=bettor,
        on=on,
        stake=amount,
        payout=payout,
        breakage=breakage,
    )
    return draft.events


def _most_odds(state: TableState, rules: RuleSet, ratio: Fraction, room: int) -> int:
    """The largest odds stake the bettor may lay now: at most `room` more under the
    odds limit, and one whose payout the setter can still hold under its exposure cap."""
    cap = state.limits.max_exposure
    if cap is None:
        return room
    spare = max(cap - state.exposure(SETTER), 0)
    if rules.rounding is Rounding.ROUND_DOWN:  # the setter holds floor(ratio * stake)
        return min(room, max(ceil((spare + 1) / ratio) - 1, 0))
    return min(room, floor(spare / ratio))


def offer_side_bet(
    state: TableState,
    offerer: str,
    proposition: Proposition,
    backs: bool,
    amount: int,
    asks: int,
    to: str | None = None,
) -> list[ev.Event]:
    """`offerer` stakes `amount` that `proposition` is `backs`, asking `asks` of the taker."""
    open_rules(state)
    require_participant(state, offerer)
    if to is not None:
        require_participant(state, to)
        if to == offerer:
            raise RuleBroken(Rule.SELF_BET, "a side bet is between two participants")
    _require_decidable(state, proposition)
    require_stake(state, amount)
    require_stake(state, asks, "amount asked")
    if offerer == SETTER:
        require_exposure(state, amount)
    _require_room(state, offerer)
    draft = Draft(state)
    draft.add(
        ev.SideBetOffered,
        bet_id=draft.next_bet_id(),
        offerer=offerer,
        proposition=proposition,
        backs=bool(backs),
        stake=amount,
        asks=asks,
        to=to,
    )
    return draft.events


def _require_decidable(state: TableState, proposition: Proposition) -> None:
    kind = proposition.kind
    if not isinstance(kind, PropositionKind):
        raise RuleBroken(Rule.INVALID_PROPOSITION, "unknown proposition")
    if kind is PropositionKind.NEXT_TOTAL:
        totals = proposition.totals
        outside = sorted(t for t in totals if t not in TOTALS)
        if outside:
            raise RuleBroken(
                Rule.INVALID_PROPOSITION,
                f"a next-total bet names totals 2 to 12, not {outside[0]!r}",
            )
        if not totals or not totals < frozenset(TOTALS):
            raise RuleBroken(
                Rule.INVALID_PROPOSITION,
                "a next-total bet names some, but not all, of the totals 2 to 12",
            )
        return
    if proposition.totals:
        raise RuleBroken(Rule.INVALID_PROPOSITION, f"{kind.value} takes no totals")
    if state.caster is None or state.phase not in _IN_ROUND:
        raise RuleBroken(Rule.WRONG_PHASE, f"{kind.value} needs a round in play")
    if kind is PropositionKind.NICK_FIRST_THROW and state.phase is Phase.CHANCE:
        raise RuleBroken(Rule.PROPOSITION_DECIDED, "this round's first throw has already been made")


def accept_side_bet(state: TableState, bet_id: str, acceptor: str) -> list[ev.Event]:
    open_rules(state)
    bet = _offer(state, bet_id)
    require_participant(state, acceptor)
    if acceptor in bet.parties:
        raise RuleBroken(Rule.SELF_BET, "a side bet is between two participants")
    if bet.offered_to is not None and bet.offered_to != acceptor:
        raise RuleBroken(Rule.NOT_OFFERED_TO_YOU, f"this offer is made to {bet.offered_to!r}")
    amount = bet.yes_stake if bet.yes is None else bet.no_stake
    if acceptor == SETTER:
        require_exposure(state, amount)
    _require_own_room(state, acceptor)
    draft = Draft(state)
    draft.add(ev.SideBetAccepted, bet_id=bet.id, acceptor=acceptor, amount=amount)
    return draft.events


def withdraw_side_bet(state: TableState, bet_id: str, offerer: str) -> list[ev.Event]:
    open_rules(state)
    bet = _offer(state, bet_id)
    if offerer not in bet.parties:
        raise RuleBroken(Rule.NOT_YOUR_BET, "only the one who made an offer withdraws it")
    draft = Draft(state)
    draft.add(ev.BetVoided, bet_id=bet.id, reason="withdrawn", transfers=refund_transfers(bet))
    return draft.events


def _offer(state: TableState, bet_id: str) -> Bet:
    bet = state.bets.get(bet_id)
    if bet is None or bet.kind is not BetKind.SIDE or not bet.pending:
        raise RuleBroken(Rule.UNKNOWN_BET, f"no side bet {bet_id!r} is on offer")
    return bet


# -- resolution ---------------------------------------------------------------------


def resolve(before: TableState, after: TableState, total: int, draft: Draft) -> None:
    """Settle or void every bet that the throw `total` decided."""
    ended = after.round != before.round
    result = after.last_result if ended else None
    for bet in before.bets.values():
        decided = _decide(bet.proposition, before.phase, result, total, ended)
        if decided is None:
            continue
        if bet.pending:
            draft.add(
                ev.BetVoided,
                bet_id=bet.id,
                reason="never-accepted",
                transfers=refund_transfers(bet),
            )
        elif decided is Verdict.VOID:
            draft.add(
                ev.BetVoided, bet_id=bet.id, reason="undecidable", transfers=refund_transfers(bet)
            )
        else:
            winner = bet.yes if decided is Verdict.YES else bet.no
            assert winner is not None
            draft.add(
                ev.BetSettled,
                bet_id=bet.id,
                winner=winner,
                transfers=payout_transfers(bet, winner),
                breakage=settled_breakage(bet, winner),
            )


def _decide(
    prop: Proposition, phase: Phase, result: RoundResult | None, total: int, ended: bool
) -> Verdict | None:
    """The proposition's verdict once the throw decides it, and None while it is still
    open."""
    kind = prop.kind
    if kind is PropositionKind.NEXT_TOTAL:
        return _yes_if(total in prop.totals)
    if kind is PropositionKind.NICK_FIRST_THROW:
        if phase is Phase.FIRST_THROW:
            return _yes_if(result is RoundResult.NICK)
        return Verdict.VOID if ended else None
    if not ended or result is None:
        return None
    if kind is PropositionKind.CASTER_WINS:
        won = result.caster_won
        return Verdict.VOID if won is None else _yes_if(won)
    if result in (RoundResult.CHANCE, RoundResult.MAIN):  # CHANCE_BEFORE_MAIN
        return _yes_if(result is RoundResult.CHANCE)
    return Verdict.VOID


def _yes_if(came_true: bool) -> Verdict:
    return Verdict.YES if came_true else Verdict.NO


def void_round(state: TableState, draft: Draft, reason: str) -> None:
    """Void the bets on the current round: the caster went, so it cannot be decided."""
    for bet in state.bets.values():
        if bet.proposition.round_scoped and bet.round == state.round:
            draft.add(ev.BetVoided, bet_id=bet.id, reason=reason, transfers=refund_transfers(bet))


def void_all(state: TableState, draft: Draft, reason: str) -> None:
    for bet in state.bets.values():
        draft.add(ev.BetVoided, bet_id=bet.id, reason=reason, transfers=refund_transfers(bet))
