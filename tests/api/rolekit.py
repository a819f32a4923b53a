"""The role matrix: every operation on players and tables (OPS), who may do it, and the
table it needs, made fresh for each attempt. tests/api/test_roles.py tries each one as
every role; test_hostile.py sends each what a careless or malicious client sends; and
test_log.py holds each write's receipt.

    bank = club(api)                       # players ann, bob, cat, dan; a funded bank
    for op in OPS:
        response = attempt(bank, op, prepare(bank, op.setup))
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ledger.store.schema import events
from tests.api.conftest import Api, Client

_tables = itertools.count(1)
"""The number of the next table `prepare` opens: a fresh table for every attempt."""


@dataclass
class Op:
    name: str
    method: str
    path: str
    body: Callable[[dict[str, Any]], Any] | None
    allowed: frozenset[str]
    self_name: str = "ann"
    """The player the operation concerns (ann is the caster; bob and cat sit)."""
    other_name: str = "cat"
    setup: str = "caster"
    expect: int = 201
    rule: str | None = None
    """For an allowed attempt refused by the table's rules, not by the role."""
    extra: dict[str, Any] = field(default_factory=dict)


def _everyone(*roles: str) -> frozenset[str]:
    return frozenset(roles)


MONEY = _everyone("setter")
RUN = _everyone("setter", "croupier")
BET = _everyone("setter", "croupier", "self")
READ_TABLE = _everyone("setter", "croupier", "auditor", "self", "other")
RECALL_TABLE = _everyone("setter", "croupier", "auditor")
RECALL_PLAYER = _everyone("setter", "auditor", "self")


OPS = [
    Op("create player", "post", "/players", lambda c: {"name": f"dan{c['n']}"}, RUN),
    Op("deposit", "post", "/players/ann/deposits", lambda c: {"amount": 5}, MONEY),
    Op("withdraw", "post", "/players/ann/withdrawals", lambda c: {"amount": 5}, MONEY),
    Op("credit", "put", "/players/ann/credit-limit", lambda c: {"limit": 5}, MONEY, expect=200),
    Op(
        "balance",
        "get",
        "/players/ann/balance",
        None,
        _everyone("setter", "auditor", "self"),
        expect=200,
    ),
    Op("limits", "get", "/players/ann/limits", None, RECALL_PLAYER, expect=200),
    Op(
        "set a limit",
        "put",
        "/players/ann/limits/stake",
        lambda c: {"limit": 5000},
        _everyone("setter", "self"),
        expect=200,
    ),
    Op(
        "remove a limit",
        "delete",
        "/players/ann/limits/stake",
        None,
        _everyone("setter", "self"),
        expect=200,
    ),
    Op(
        "take a break",
        "post",
        "/players/dan/breaks",  # dan sits at no table: a break ends his play, not theirs
        lambda c: {"kind": "time-out", "length": 24},
        _everyone("setter", "self"),
        "dan",
        "bob",
    ),
    Op("open table", "post", "/tables", lambda c: {"id": f"new{c['n']}"}, RUN),
    Op(
        "table state",
        "get",
        "/tables/{t}",
        None,
        _everyone("setter", "croupier", "auditor", "self", "other"),
        expect=200,
    ),
    Op("session replay", "get", "/tables/{t}/replay", None, READ_TABLE, expect=200),
    Op("round replay", "get", "/tables/{t}/rounds/1/replay", None, READ_TABLE, expect=200),
    Op("table recall", "get", "/tables/{t}/recall", None, RECALL_TABLE, expect=200),
    Op("player recall", "get", "/players/ann/recall", None, RECALL_PLAYER, expect=200),
    Op("seat", "post", "/tables/{t}/seats", lambda c: {"player": "dan"}, RUN),
    Op("leave", "post", "/tables/{t}/leave", lambda c: {"player": "cat"}, BET, "cat", "bob"),
    Op("close", "post", "/tables/{t}/close", None, RUN),
    Op(
        "cast for caster",
        "post",
        "/tables/{t}/casts",
        lambda c: {"player": "ann", "die": 2},
        RUN,
        setup="seated",
    ),
    Op("call main", "post", "/tables/{t}/main", lambda c: {"main": 7}, RUN),
    Op("throw", "post", "/tables/{t}/throws", lambda c: {"die1": 2, "die2": 2}, RUN, setup="main"),
    Op(
        "void throw",
        "post",
        "/tables/{t}/void-throws",
        lambda c: {"reason": "cocked", "off": 0},
        RUN,
        setup="main",
    ),
    Op("pass", "post", "/tables/{t}/pass", None, BET, expect=422, rule="pass-not-allowed"),
    Op("caster's stake", "post", "/tables/{t}/stakes", lambda c: {"amount": 100}, BET),
    Op(
        "lay",
        "post",
        "/tables/{t}/lays",
        lambda c: {"player": "bob", "amount": 50},
        BET,
        "bob",
    ),
    Op("everyone lays", "post", "/tables/{t}/lays/everyone", lambda c: {"amount": 50}, RUN),
    Op("cover", "post", "/tables/{t}/covers", lambda c: {}, BET, other_name="bob", setup="laid"),
    Op(
        "refuse",
        "post",
        "/tables/{t}/refusals",
        lambda c: {"bet": c["bet"]},
        BET,
        other_name="bob",
        setup="laid",
    ),
    Op(
        "odds",
        "post",
        "/tables/{t}/odds",
        lambda c: {"player": "ann", "on": "chance", "amount": 50},
        BET,
        setup="chance",
    ),
    Op(
        "offer side bet",
        "post",
        "/tables/{t}/side-bets",
        lambda c: {
            "player": "bob",
            "proposition": {"kind": "next-total", "totals": [2]},
            "backs": True,
            "stake": 10,
            "asks": 350,
        },
        BET,
        "bob",
    ),
    Op(
        "accept side bet",
        "post",
        "/tables/{t}/side-bets/accept",
        lambda c: {"player": "cat", "bet": c["bet"]},
        BET,
        "cat",
        "ann",
        setup="offer",
    ),
    Op(
        "withdraw side bet",
        "post",
        "/tables/{t}/side-bets/withdraw",
        lambda c: {"player": "bob", "bet": c["bet"]},
        BET,
        "bob",
        setup="offer",
    ),
    # The dice-fairness report can point at a croupier: the setter and the auditor read
    # it; croupiers, its subject, and players do not.
    Op(
        "dice report",
        "get",
        "/reports/dice?table={t}",
        None,
        _everyone("setter", "auditor"),
        expect=200,
        setup="main",
    ),
    # Disputes: the setter, a croupier, or a player with money in the round opens one
    # (ann and bob both staked in round 1); only the setter resolves.
    Op(
        "open dispute",
        "post",
        "/tables/{t}/rounds/1/disputes",
        lambda c: {"claim": "the dice were misread"},
        _everyone("setter", "croupier", "self", "other"),
        "ann",
        "bob",
        setup="ended",
    ),
    Op(
        "resolve dispute",
        "post",
        "/tables/{t}/disputes/{d}/resolution",
        lambda c: {"resolution": "upheld", "reason": "the camera agrees"},
        MONEY,
        setup="disputed",
    ),
    Op("table disputes", "get", "/tables/{t}/disputes", None, READ_TABLE, expect=200),
    Op("club disputes", "get", "/disputes", None, READ_TABLE, expect=200),
    # The setter opened it: a player reads only the disputes they opened.
    Op(
        "one dispute",
        "get",
        "/tables/{t}/disputes/{d}",
        None,
        _everyone("setter", "croupier", "auditor"),
        expect=200,
        setup="disputed",
    ),
]


def club(api: Api) -> Client:
    """Players ann, bob, cat and dan with money, and a funded bank."""
    bank = api.client()
    bank.ok("post", "/players/setter/deposits", {"amount": 1_000_000})
    for name in ("ann", "bob", "cat", "dan"):
        bank.ok("post", "/players", {"name": name})
        bank.ok("post", f"/players/{name}/deposits", {"amount": 100_000})
    return bank


def prepare(bank: Client, setup: str) -> dict[str, Any]:
    """A fresh table `t` in the state the operation needs: ann, bob and cat seated; ann
    the caster unless only "seated"."""
    n = next(_tables)
    t = f"t{n}"
    context: dict[str, Any] = {"t": t, "n": n}
    bank.ok("post", "/tables", {"id": t})
    for name in ("ann", "bob", "cat"):
        bank.ok("post", f"/tables/{t}/seats", {"player": name})
    if setup == "seated":
        return context
    for name, die in (("ann", 1), ("bob", 3), ("cat", 5)):
        bank.ok("post", f"/tables/{t}/casts", {"player": name, "die": die})
    if setup == "main":
        bank.ok("post", f"/tables/{t}/main", {"main": 7})
    elif setup == "laid":
        laid = bank.ok("post", f"/tables/{t}/lays", {"player": "bob", "amount": 50})
        context["bet"] = laid["events"][0]["payload"]["bet_id"]
    elif setup == "chance":
        bank.ok("post", f"/tables/{t}/stakes", {"amount": 100})
        bank.ok("post", f"/tables/{t}/main", {"main": 7})
        bank.ok("post", f"/tables/{t}/throws", {"die1": 2, "die2": 2})  # a chance of 4
    elif setup in ("ended", "disputed"):
        bank.ok("post", f"/tables/{t}/stakes", {"amount": 100})
        laid = bank.ok("post", f"/tables/{t}/lays", {"player": "bob", "amount": 50})
        bank.ok("post", f"/tables/{t}/covers", {"bets": [laid["events"][0]["payload"]["bet_id"]]})
        bank.ok("post", f"/tables/{t}/main", {"main": 7})
        bank.ok("post", f"/tables/{t}/throws", {"die1": 3, "die2": 4})  # a nick: round 1 ends
        if setup == "disputed":
            opened = bank.ok("post", f"/tables/{t}/rounds/1/disputes", {"claim": "a 4? a 5?"})
            context["d"] = opened["dispute_id"]
    elif setup == "offer":
        offer = {
            "player": "bob",
            "proposition": {"kind": "next-total", "totals": [2]},
            "backs": True,
            "stake": 10,
            "asks": 350,
        }
        context["bet"] = bank.ok("post", f"/tables/{t}/side-bets", offer)["events"][0]["payload"][
            "bet_id"
        ]
    return context


def attempt(client: Client, op: Op, context: dict[str, Any]) -> Any:
    path = op.path.format(**context)
    if op.method == "get":
        return client.get(path)
    body = op.body(context) if op.body else None
    return getattr(client, op.method)(path, json=body)


def event_count(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one()
