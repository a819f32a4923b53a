"""The table's commands: opening a table, seating, the cast for the first caster, the
main, throws, stakes, bets and side bets, and closing. Each is one engine command
through `Club.command`, as its caller may send it (ledger.commands).

Each takes the club, the table, the caller and the command's values, then how it was
sent (`Sent`: the idempotency key, already scoped to the caller; the If-Match version;
what the key's answer is remembered against), and returns the write's answer. A
refusal writes nothing: `NotPermitted` (the caller's role, or a player acting for
another), `Forbidden` (what the table allows this caller: only the caster stakes),
a rule of the table broken (engine.errors.RuleBroken), a rule set that is not one
(RuleSetError), or the service's own (no such table or player, a stale version, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import engine as hz
from engine import serverdice
from engine.rules import from_mapping
from ledger.commands import Caller, Role, Sent, caster_only, require_role, require_self
from ledger.commands import serverdice as served
from ledger.service import Club, Decide, Forbidden, Reads

RUN = (Role.CROUPIER,)
"""Who runs a table (besides the setter)."""
BET = (Role.CROUPIER, Role.PLAYER)
"""Who places bets (a player only their own)."""


def _run(
    club: Club,
    table: str,
    caller: Caller,
    decide: Decide,
    sent: Sent,
    players: Sequence[str] = (),
) -> dict[str, Any]:
    return club.command(table, caller.actor, decide, players=players, **sent)


def rule_set(ruleset: str | None, rules: Mapping[str, Any] | None) -> hz.RuleSet:
    """The rule set a table opens with: a built-in one by name (the default's when
    neither is given), or a custom one (as `hazard odds` takes it). RuleSetError if it
    is not one, or both are given."""
    if rules is not None:
        if ruleset is not None:
            raise hz.RuleSetError("ruleset", "name a built-in rule set or give rules, not both")
        return from_mapping(rules)
    name = ruleset or hz.DEFAULT
    if name not in hz.BUILTIN:
        known = ", ".join(sorted(hz.BUILTIN))
        raise hz.RuleSetError("ruleset", f"{name!r} is not a built-in rule set ({known})")
    return hz.BUILTIN[name]


def open_table(
    club: Club,
    table: str,
    caller: Caller,
    *,
    ruleset: str | None = None,
    rules: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    dice: str = serverdice.CROUPIER,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """Open `table` with a rule set (`rule_set`) and its limits (engine.Limits' fields),
    its dice thrown by the croupier or drawn by the server. AlreadyExists if it is."""
    require_role(caller, *RUN)
    chosen, bounds = rule_set(ruleset, rules), hz.Limits(**(limits or {}))
    return club.command(
        table,
        caller.actor,
        lambda _st, _funds: hz.open_table(chosen, bounds, dice=dice),
        new_table=True,
        **sent,
    )


def seat(
    club: Club, table: str, caller: Caller, player: str, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """Seat a player at the table."""
    require_role(caller, *RUN)
    return _run(club, table, caller, lambda st, _: hz.seat(st, player), sent, [player])


def leave(
    club: Club, table: str, caller: Caller, player: str, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """A player leaves the table (a player: only themselves)."""
    require_role(caller, *BET)
    require_self(caller, player)
    return _run(club, table, caller, lambda st, _: hz.leave(st, player), sent)


def close(club: Club, table: str, caller: Caller, **sent: Unpack[Sent]) -> dict[str, Any]:
    """Close the table; open bets are voided and their stakes returned."""
    require_role(caller, *RUN)
    return _run(club, table, caller, lambda st, _: hz.close(st), sent)


def cast(
    club: Club, table: str, caller: Caller, player: str, die: int, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """The die a player cast to choose the first caster."""
    require_role(caller, *RUN)
    return _run(club, table, caller, lambda st, _: hz.cast_for_caster(st, player, die), sent)


def call_main(
    club: Club, table: str, caller: Caller, main: int, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """The caster's main, called (5 to 9) where the rule set lets them."""
    require_role(caller, *RUN)
    return _run(club, table, caller, lambda st, _: hz.call_main(st, main), sent)


def throw(
    club: Club,
    table: str,
    caller: Caller,
    die1: int | None = None,
    die2: int | None = None,
    client_seed: str | None = None,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """A throw. At a croupier table the croupier gives the dice. At a server-dice table
    the caster (or the croupier for them) gives the caster's client seed, which is
    logged in a write of its own before the server draws the dice from it and the
    turn's committed seed (ledger.commands.serverdice); the setter, a party to the
    bets, may not."""
    require_role(caller, *BET)

    def entered(st: hz.TableState, reads: Reads) -> list[hz.Event]:
        if st.dice == serverdice.SERVER:
            _refuse_entered(st, die1, die2)
        require_enterer(caller)
        if client_seed is not None:
            serverdice.require_server_dice(st)
        if die1 is None or die2 is None:
            raise hz.RuleBroken(
                hz.Rule.CROUPIER_DICE, "the croupier enters this table's dice: give die1 and die2"
            )
        return hz.throw(st, die1, die2)

    if client_seed is None or die1 is not None or die2 is not None:
        return _run(club, table, caller, entered, sent)
    return served.throw(club, table, caller, client_seed, sent, entered)


def require_enterer(caller: Caller) -> None:
    """Who enters a croupier table's dice: the croupier (or the setter), never a player."""
    if caller.role is Role.PLAYER:
        raise Forbidden("the croupier enters this table's dice; a player does not")


def _refuse_entered(st: hz.TableState, die1: int | None, die2: int | None) -> None:
    """A server-dice table's throw sent with dice, or with no client seed."""
    if die1 is not None or die2 is not None:
        serverdice.require_croupier_dice(st)
    raise hz.RuleBroken(
        hz.Rule.SERVER_DICE,
        "the server throws this table's dice: give the caster's client_seed for this throw",
    )


def void_throw(
    club: Club,
    table: str,
    caller: Caller,
    reason: str,
    off: int,
    standing: int | None = None,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """A cocked or wild throw, which does not count."""
    require_role(caller, *RUN)
    return _run(club, table, caller, lambda st, _: hz.void_throw(st, reason, off, standing), sent)


def _as_caster(caller: Caller, act: Decide) -> Decide:
    """`act`, which only the caster does: a player sending it must be the caster."""

    def decide(st: hz.TableState, reads: Reads) -> list[hz.Event]:
        caster_only(caller, st)
        return act(st, reads)

    return decide


def pass_dice(club: Club, table: str, caller: Caller, **sent: Unpack[Sent]) -> dict[str, Any]:
    """The caster passes the dice (where the rule set allows)."""
    require_role(caller, *BET)
    return _run(club, table, caller, _as_caster(caller, lambda st, _: hz.pass_dice(st)), sent)


def stake(
    club: Club, table: str, caller: Caller, amount: int, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """The caster stakes against the setter."""
    require_role(caller, *BET)
    decide = _as_caster(caller, lambda st, _: hz.stake(st, amount))
    return _run(club, table, caller, decide, sent)


def lay(
    club: Club, table: str, caller: Caller, player: str, amount: int, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """A player lays a stake against the caster."""
    require_role(caller, *BET)
    require_self(caller, player)
    return _run(club, table, caller, lambda st, _: hz.lay(st, player, amount), sent)


def everyone_lays(
    club: Club, table: str, caller: Caller, amount: int, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """Each seated player but the caster lays `amount` against the caster, in one write:
    the lay each would make alone (engine.lay, in seat order), all or none. A rule one
    of them breaks, or a stake one of them cannot fund (the ledger refuses its posting),
    refuses every lay, and says whose. The croupier's, who enters the table's bets."""
    require_role(caller, *RUN)

    def laid(st: hz.TableState, _: Reads) -> list[hz.Event]:
        layers = [p for p in st.seats if p != st.caster]
        if st.caster is None or not layers:
            raise hz.RuleBroken(hz.Rule.NOT_SEATED, "no one is seated to lay against a caster")
        events: list[hz.Event] = []
        for player in layers:
            try:
                one = hz.lay(st, player, amount)
            except hz.RuleBroken as exc:
                raise hz.RuleBroken(exc.rule, f"{player}: {exc.detail}") from exc
            events += one
            st = hz.fold(one, st)
        return events

    return _run(club, table, caller, laid, sent)


def cover(
    club: Club,
    table: str,
    caller: Caller,
    bets: Sequence[str] | None = None,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """The caster covers stakes laid against them (`bets`; all pending when None), as far
    as their free funds go."""
    require_role(caller, *BET)

    def covered(st: hz.TableState, funds: Reads) -> list[hz.Event]:
        return hz.cover(st, funds(st.caster) if st.caster else 0, bets)

    return _run(club, table, caller, _as_caster(caller, covered), sent)


def refuse(
    club: Club, table: str, caller: Caller, bet: str, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """The caster refuses a laid stake; it is returned."""
    require_role(caller, *BET)
    decide = _as_caster(caller, lambda st, _: hz.refuse(st, bet))
    return _run(club, table, caller, decide, sent)


def lay_odds(
    club: Club,
    table: str,
    caller: Caller,
    player: str,
    on: str,
    amount: int,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """Odds laid on the chance or the main, once a chance is set."""
    require_role(caller, *BET)
    require_self(caller, player)
    return _run(club, table, caller, lambda st, _: hz.lay_odds(st, player, on, amount), sent)


def offer_side_bet(
    club: Club,
    table: str,
    caller: Caller,
    player: str,
    proposition: Mapping[str, Any],
    backs: bool,
    stake: int,
    asks: int,
    to: str | None = None,
    **sent: Unpack[Sent],
) -> dict[str, Any]:
    """A side bet offered, to anyone or to one participant (`to`): the `proposition`
    (its kind and totals), for it (`backs`) or against, `stake` against `asks`."""
    require_role(caller, *BET)
    require_self(caller, player)
    kind = hz.PropositionKind(proposition["kind"])
    offered = hz.Proposition(kind, frozenset(proposition.get("totals", ())))
    return _run(
        club,
        table,
        caller,
        lambda st, _: hz.offer_side_bet(st, player, offered, backs, stake, asks, to),
        sent,
    )


def accept_side_bet(
    club: Club, table: str, caller: Caller, player: str, bet: str, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """A side bet offered, accepted."""
    require_role(caller, *BET)
    require_self(caller, player)
    return _run(club, table, caller, lambda st, _: hz.accept_side_bet(st, bet, player), sent)


def withdraw_side_bet(
    club: Club, table: str, caller: Caller, player: str, bet: str, **sent: Unpack[Sent]
) -> dict[str, Any]:
    """A side bet not yet accepted, withdrawn."""
    require_role(caller, *BET)
    require_self(caller, player)
    return _run(club, table, caller, lambda st, _: hz.withdraw_side_bet(st, bet, player), sent)
