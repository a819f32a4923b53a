"""What the API and the console show of a table: its state (GET /tables/{t}, the
console's table page) and a replay's step (GET /tables/{t}/replay, the console's
replay page, `hazard replay`), built from the engine's state as one dict each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import engine as hz
from ledger.audit import replay


def bet_number(bet_id: str) -> int:
    """A bet's place in the table's order: its id is "b" and the version that placed it."""
    return int(bet_id.removeprefix("b"))


def standing_view(standing: tuple[int, int] | None) -> dict[str, int] | None:
    """The die left standing by a void throw (the state keeps the die that went off)."""
    if standing is None:
        return None
    off, value = standing
    return {"die": 3 - off, "value": value}


def state_view(
    table: str, state: hz.TableState, after: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """The table's state, with its open bets placed after bet number `after`, at most
    `limit` of them (all when None)."""
    bets = [b for b in state.open_bets if bet_number(b.id) > after]
    shown = bets if limit is None else bets[:limit]
    return _view(table, state, shown, bet_number(shown[-1].id) if len(shown) < len(bets) else None)


def touched_view(table: str, state: hz.TableState, bet_ids: Sequence[str]) -> dict[str, Any]:
    """The table's state after an event, with only the open bets the event named (its
    `bet_id`): a replay's step is about its event, and a table may hold a thousand open
    bets. `next_after` is 0 when others are open: the table's state as of the event (GET
    /tables/{t}?as_of=) lists them, a page at a time."""
    shown = [state.bets[i] for i in bet_ids if i in state.bets]
    return _view(table, state, shown, 0 if len(shown) < len(state.bets) else None)


def _view(
    table: str, state: hz.TableState, shown: Sequence[hz.Bet], next_after: int | None
) -> dict[str, Any]:
    assert state.rules is not None
    return {
        "table": table,
        "version": state.version,
        "phase": state.phase.value,
        "rules": state.rules.name,
        "seats": list(state.seats),
        "caster": state.caster,
        "round": state.round,
        "main": state.main,
        "chance": state.chance,
        "consecutive_losses": state.consecutive_losses,
        "consecutive_wins": state.consecutive_wins,
        "setter_exposure": state.exposure(),
        "dice": state.dice,
        "commitment": state.commitment,
        "nonce": state.nonce,
        "client_seed": state.client_seed,
        "standing": standing_view(state.standing),
        "open_bet_count": len(state.bets),
        "open_bets": [
            {
                "id": b.id,
                "kind": b.kind.value,
                "round": b.round,
                "proposition": {
                    "kind": b.proposition.kind.value,
                    "totals": sorted(b.proposition.totals),
                },
                "yes": b.yes,
                "no": b.no,
                "yes_stake": b.yes_stake,
                "no_stake": b.no_stake,
                "pending": b.pending,
                "offered_to": b.offered_to,
            }
            for b in shown
        ],
        "next_after": next_after,
    }


STEP_SETTLEMENTS = 50
"""The most settlements a step lists: a throw may decide every open bet of the table."""


def step_view(table: str, step: replay.Step, only: str | None = None) -> dict[str, Any]:
    """A step as the API shows it, bounded by its event: the table after it with the open
    bets it named, and the first STEP_SETTLEMENTS of the settlements it made, with
    counts of both; `only`: the one account whose balance is shown."""
    bet_id = step.payload.get("bet_id")
    return {
        "position": step.position,
        "version": step.version,
        "type": step.type,
        "payload": step.payload,
        "actor": step.actor,
        "recorded_at": step.recorded_at,
        "state": touched_view(table, step.state, [bet_id] if isinstance(bet_id, str) else []),
        "transfers": step.transfers,
        "settlements": step.settlements[:STEP_SETTLEMENTS],
        "settlement_count": len(step.settlements),
        "balances": [b for b in step.balances if only is None or b["account"] == only],
    }
