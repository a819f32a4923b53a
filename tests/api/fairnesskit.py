"""What the dice-fairness report's tests share: a club with croupiers, tables opened and
seated, dice thrown as a croupier would, the report asked for, and the store's clock."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tests.api.conftest import Api, Client

Dice = tuple[int, int]


def club(api: Api, croupiers: Iterable[str] = ("cecil",)) -> dict[str, Client]:
    """ann and bob, and a client for the bank and for each croupier named."""
    bank = api.client()
    for name in ("ann", "bob"):
        bank.ok("post", "/players", {"name": name})
    return {"bank": bank, **{name: api.client("croupier", name) for name in croupiers}}


def open_table(croupier: Client, table: str, ruleset: str = "english") -> None:
    croupier.ok("post", "/tables", {"id": table, "ruleset": ruleset})
    for name in ("ann", "bob"):
        croupier.ok("post", f"/tables/{table}/seats", {"player": name})
    croupier.ok("post", f"/tables/{table}/casts", {"player": "ann", "die": 1})
    croupier.ok("post", f"/tables/{table}/casts", {"player": "bob", "die": 2})


def throw(croupier: Client, table: str, dice: Iterable[Dice], main: int = 7) -> None:
    """Throw `dice` at `table`, calling `main` whenever a round waits for one to be
    called (english rules; under rolled mains the throws set it)."""
    for die1, die2 in dice:
        state = croupier.ok("get", f"/tables/{table}")
        if state["phase"] == "awaiting-main" and state["rules"] == "english":
            croupier.ok("post", f"/tables/{table}/main", {"main": main})
        croupier.ok("post", f"/tables/{table}/throws", {"die1": die1, "die2": die2})


def report(client: Client, **query: Any) -> dict[str, Any]:
    answer: dict[str, Any] = client.ok("get", "/reports/dice", query_string=query)
    return answer


def clock(api: Api) -> Callable[[str], None]:
    """Set the time the store records (ISO, as stored) for the writes that follow."""
    now = ["2026-01-01T00:00:00.000000Z"]
    api.book.store.clock = lambda: now[0]

    def at(when: str) -> None:
        now[0] = when

    return at
