"""A stateful model of the whole service (issue 15): hypothesis drives the API in-process,
on SQLite and on PostgreSQL, with random sequences of valid and invalid commands from
every role, and after every step holds the service to what must always be true.

The actors: the setter (the bank), a croupier (cecil), an auditor (audrey) and four
players (ann, bob, cat, dan), each with a token of their own. The commands: players
created, deposits, withdrawals (some past what the account holds), credit limits;
tables opened (any built-in rule set), seats, casts for the caster, mains, throws
(dice from hypothesis), void throws, the caster's stakes, lays, covers and refusals,
odds, side bets offered, accepted and withdrawn, passing the dice, leaving, closing;
disputes opened over ended rounds and resolved (upheld, voided, corrected); exports
(a table, a player's statement, the whole log) checked offline; and, on purpose, the
wrong role, a stale If-Match, bad amounts, commands out of phase, and an
Idempotency-Key sent again (with the same body: the first answer, nothing written;
with another: refused).

Each answer is held to its kind: never a 5xx; a refusal is a problem document and
leaves nothing behind (every table's row count, the log's head and every account as
before it: modelchecks.footprint); a write is answered with a receipt whose positions
are its events', and whose checkpoint holds them and ends at the write's seal, right
after them (inclusion proofs of its first and last event, and of its seal). Where the
model knows the answer it is held to it: a wrong role is 403, a stale If-Match 409, a
withdrawal past balance and credit 422, a key reused with another body 422
`idempotency-key-reused`, a repeat the first answer. No answer is larger than
ANSWER_BOUND (a write lists at most WRITE_EVENTS events, counts them all and links the
rest), and no player locks another out: a stake, a lay or a cover is never refused for
the table's room, nor the setter's or croupier's dispute for the table's
(`_not_locked_out`).

After every step (the invariant `holds`), modelchecks':
1. money: the accounts sum to zero; no escrow below zero; no player or setter below
   minus their credit limit unless a dispute's adjustment moved them there, and then
   the API shows it as `owed`; every balance the API shows is the account's; every
   table's escrow is what its open bets hold;
2. each table's state as GET /tables/<t> serves it is its events from the database run
   through the referee (every command re-run, every derived event held to the
   engine's), rendered as the API renders a state, whole; and `hazard verify`'s log
   check (positions, hash chains, the Merkle tree, every checkpoint's signature);
3. every settlement row names its own event and its sources, in its table's stream,
   in the round the rounds read model gives its position; GET /settlements serves
   exactly those;
4. (per request, above) a refusal left nothing behind;
5. receipts: the newest checkpoint (GET /log/checkpoint) is proved consistent with
   the one before it and with every receipt the step was answered with, and, in
   turn, with RECEIPTS_PER_STEP of the older receipts kept (the least recently
   checked first), each proof checked client-side with ledger.store.log.merkle and both
   checkpoints' signatures with the log's key; at the end of the example every kept
   receipt is checked against the newest.

`hazard verify --deep` (every read model rebuilt from the events in a scratch database
and compared) runs after every step too (DEEP_EVERY): at the sizes a run reaches (tens
to a couple of hundred events) it costs about 20 ms, a little under what the other
checks of a step cost together, and a drifted read model is then named at the step
that drifted it. A much longer HAZARD_MODEL_STEPS may want DEEP_EVERY raised: its
cost grows with the log.

The run is sized for CI (CI=true: derandomized, tests/conftest.py); a longer one:

    HAZARD_MODEL_EXAMPLES=200 .venv/bin/python -m pytest tests/api/test_service_model.py \
        -p no:cacheprovider -q

HAZARD_MODEL_STEPS sets the steps an example (default 40), HAZARD_MODEL_FIGURES=FILE
writes what was sent, by kind and answer, with the run's totals, as JSON, and
HAZARD_MODEL_SHRINK=0 reports a failure as found rather than spend minutes shrinking
it. Without CI=true hypothesis explores new sequences on every run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from engine.events import PropositionKind
from ledger.api import create_app
from ledger.books.book import Book
from ledger.service import WRITE_EVENTS
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.heads import SEALS
from tests.api import modelchecks as check
from tests.api.conftest import Api, Client, postgres_copy
from tests.signing import SIGNER

PLAYERS = ("ann", "bob", "cat", "dan")
TABLES = ("t1", "t2")
RULESETS = ("english", "french", "history", "club", "hard-core", "three-wins")
BAD_AMOUNTS = (0, -1, -(10**6), 1.5, "5", None, True, 10**16, [], {})
RECEIPTS_PER_STEP = 3
ANSWER_BOUND = 256 * 1024
"""Bytes: the most any answer but an export may hold (issue 22: a throw answered 414 KB,
a replay page 21.8 MB). Every answer is about one thing, and bounded by it."""
DEEP_EVERY = 1

EXAMPLES = int(os.environ.get("HAZARD_MODEL_EXAMPLES") or 0)
STEPS = int(os.environ.get("HAZARD_MODEL_STEPS") or 0)
SIZES = {"sqlite": (12, 40), "postgres": (8, 40)}
"""(examples, steps) by database when the environment does not say."""

PHASES = [p for p in Phase if p is not Phase.shrink or os.environ.get("HAZARD_MODEL_SHRINK") != "0"]
"""HAZARD_MODEL_SHRINK=0: report a failure as found, without shrinking it (which can
take minutes for a long sequence)."""

WEIGHTS = {
    "seating": {"seat": 1, "cast": 2, "leave": 1},
    "awaiting-main": {"stake": 2, "lay": 2, "cover": 1, "refuse": 1, "main": 3, "throw": 3,
                      "side bet": 1, "accept": 1, "withdraw bet": 1, "pass": 1, "leave": 1},
    "first-throw": {"throw": 3, "side bet": 1, "accept": 1, "void throw": 1, "odds": 1},
    "chance": {"throw": 3, "odds": 2, "side bet": 1, "accept": 1, "void throw": 1},
}  # fmt: skip
BY_PHASE = {
    phase: [k for k, n in kinds.items() for _ in range(n)] for phase, kinds in WEIGHTS.items()
}
"""The table commands tried in each phase, as often as each is named: what fits it."""
ANYTHING = sorted({kind for kinds in BY_PHASE.values() for kind in kinds})
"""One in ten is any of them, most of them out of phase."""

FIGURES: Counter[str] = Counter()
"""What was sent, by "kind status", and the run's totals, across examples."""


class Players(dict[str, Client]):
    """Each of the model's players' clients, its token made at its first use: a player's
    token is made only for a player who exists."""

    def __init__(self, api: Api) -> None:
        super().__init__()
        self.api = api

    def __missing__(self, name: str) -> Client:
        self[name] = self.api.client("player", name)
        return self[name]

    def __contains__(self, name: object) -> bool:
        return name in PLAYERS

    def get(self, name: str, default: Client | None = None) -> Client | None:  # type: ignore[override]
        return self[name] if name in PLAYERS else default


class ServiceModel(RuleBasedStateMachine):
    database: ClassVar[Callable[[], contextlib.AbstractContextManager[str]]]
    """A fresh, migrated database's URL for each example, set by the test."""

    def __init__(self) -> None:
        super().__init__()
        self._resources = contextlib.ExitStack()
        url = self._resources.enter_context(self.database())
        engine = db.make_engine(url)
        self._resources.callback(engine.dispose)
        self.store = EventStore(engine, signer=SIGNER)
        self._resources.callback(self.store.close)
        api = Api(create_app(book=Book(self.store), TESTING=True))
        self.setter = api.client()
        self.croupier = api.client("croupier", "cecil")
        self.auditor = api.client("auditor", "audrey")
        self.players = Players(api)
        self.created: list[str] = []
        self.states: dict[str, dict[str, Any]] = {}
        self.receipts: list[str] = []  # checkpoints handed out, one per size, oldest first
        self.unchecked: list[str] = []  # handed out since the last step's check
        self.newest: str | None = None
        self.writes: list[tuple[Client, str, str, Any, str, Any]] = []
        self.keys = itertools.count(1)
        self.steps = 0
        self.origin: dict[str, Any] = {}
        FIGURES["examples"] += 1

    def teardown(self) -> None:
        try:
            self._count()
            if self.receipts:
                newest = self.auditor.ok("get", "/log/checkpoint")["checkpoint"]
                for note in self.receipts:
                    check.consistent(self.auditor, note, newest)
                self._deep()
        finally:
            self._resources.close()

    def _count(self) -> None:
        """What the example left in the log, for the figures."""
        with self.store.engine.connect() as conn:
            for name, query in (
                ("events", "SELECT count(*) FROM events"),
                ("settlements", "SELECT count(*) FROM settlements"),
                ("rounds ended", "SELECT count(*) FROM rounds WHERE result IS NOT NULL"),
                ("disputes", "SELECT count(*) FROM disputes"),
                ("adjustments", "SELECT count(*) FROM adjustments"),
            ):
                FIGURES[f"left: {name}"] += conn.execute(sa.text(query)).scalar_one()

    # -- sending ----------------------------------------------------------------------

    def send(
        self,
        kind: str,
        client: Client,
        method: str,
        path: str,
        body: Any = None,
        expect: tuple[int, ...] | None = None,
        headers: dict[str, str] | None = None,
        key: str | None = None,
    ) -> Any:
        """Send one request and hold its answer to its kind (module docstring)."""
        write = method != "get"
        headers = dict(headers or {})
        if write:
            key = key or f"k{next(self.keys)}"
            headers["Idempotency-Key"] = key
        before = check.footprint(self.store) if write else None
        if method == "get":
            response = client.get(path, headers=headers)
        else:
            response = getattr(client, method)(path, json=body, headers=headers)
        status = response.status_code
        FIGURES[f"{kind} {status}"] += 1
        assert status < 500, (kind, path, body, status, response.get_data()[:500])
        if expect is not None:
            assert status in expect, (kind, path, body, status, response.get_json())
        if kind != "export":  # an export is of the log, streamed; every other answer is
            # about one thing: a write, a page, a step, a round (issue 22)
            assert len(response.get_data()) <= ANSWER_BOUND, (kind, path, len(response.data))
        if status >= 400:
            assert response.mimetype == "application/problem+json", (kind, status)
            self._not_locked_out(kind, client, response.get_json())
            if write:
                assert check.footprint(self.store) == before, (kind, path, body, status)
            return response
        if write:
            answer = response.get_json()
            listed = [event["position"] for event in answer["events"]]
            positions = answer.get("receipt", {}).get("positions", listed)
            # A table write lists its first WRITE_EVENTS events, counts them all, and
            # says where the rest are read.
            assert len(listed) <= WRITE_EVENTS and positions[: len(listed)] == listed, answer
            if "event_count" in answer:
                assert answer["event_count"] == len(positions), (kind, answer)
                assert (answer["next_events"] is None) == (len(listed) == len(positions))
            if not positions:  # a write that had nothing to do (a cover of no stake)
                # Accepted, so its key keeps the answer for a repeat; nothing else.
                assert "receipt" not in answer, (kind, answer)
                assert before is not None
                before["counts"]["commands"] += 1
                assert check.footprint(self.store) == before, (kind, path, body, status)
                FIGURES[f"{kind} {status}, no events"] += 1
                return response
            assert positions, (kind, answer)
            note = answer["receipt"]["checkpoint"]
            size = check.checkpoint_size(note)
            assert size == positions[-1] + 1, (kind, size, positions)
            for position in {positions[0], positions[-1]}:
                check.included(self.auditor, position, size)
            seal = check.included(self.auditor, size, size)
            assert (seal["stream"], seal["type"]) == (SEALS, "LogSealed"), (kind, seal)
            if not self.receipts or check.checkpoint_size(self.receipts[-1]) < size:
                self.receipts.append(note)
                self.unchecked.append(note)
                self.origin[note] = (kind, path, body, answer)
            self.writes.append((client, method, path, body, key or "", answer))
        return response

    def _not_locked_out(self, kind: str, client: Client, problem: dict[str, Any]) -> None:
        """No player locks another out (issue 22): the model's four players, at their own
        caps, fill neither the players' share of a table's open bets nor of its disputes,
        so the round's stakes and the staff's disputes are never refused for room."""
        refused = problem["type"].removeprefix("urn:hazard:rule:")
        if kind in ("stake", "lay", "cover"):
            assert refused != "too-many-open-bets", (kind, problem)
        if kind == "open dispute" and client in (self.setter, self.croupier):
            assert refused != "too-many-disputes", (kind, problem)

    def table_write(
        self, kind: str, client: Client, table: str, rule: str, body: Any = None, **kw: Any
    ) -> Any:
        return self.send(kind, client, "post", f"/tables/{table}/{rule}", body, **kw)

    def player(self, data: st.DataObject, among: list[str] | None = None) -> str:
        return data.draw(st.sampled_from(among or self.created or list(PLAYERS)))

    # -- set-up: a club with players and a table in play --------------------------------

    @initialize(
        deposits=st.lists(st.integers(50, 3000), min_size=4, max_size=4),
        ruleset=st.sampled_from(RULESETS),
        dice=st.permutations([6, 5, 4, 3, 2, 1]),
    )
    def a_table_in_play(self, deposits: list[int], ruleset: str, dice: list[int]) -> None:
        for name, amount in zip(PLAYERS[:3], deposits, strict=False):
            self.send("create player", self.setter, "post", "/players", {"name": name}, (201,))
            self.created.append(name)
            self.send(
                "deposit",
                self.setter,
                "post",
                f"/players/{name}/deposits",
                {"amount": amount},
                (201,),
            )
        self.send(
            "deposit",
            self.setter,
            "post",
            "/players/setter/deposits",
            {"amount": deposits[3] * 10},
            (201,),
        )
        self.send(
            "open table", self.croupier, "post", "/tables", {"id": "t1", "ruleset": ruleset}, (201,)
        )
        for name in self.created:
            self.table_write("seat", self.croupier, "t1", "seats", {"player": name}, expect=(201,))
        for name, die in zip(self.created, dice, strict=False):
            self.table_write(
                "cast", self.croupier, "t1", "casts", {"player": name, "die": die}, expect=(201,)
            )

    # -- money and players -------------------------------------------------------------

    @rule(data=st.data(), name=st.sampled_from(PLAYERS))
    def create_player(self, data: st.DataObject, name: str) -> None:
        who = data.draw(st.sampled_from(["setter", "croupier", "player", "auditor"]))
        # A player asks as themselves, or, not made yet (so with no token), as another.
        player = name if name in self.created else self.created[0]
        client = {
            "setter": self.setter,
            "croupier": self.croupier,
            "auditor": self.auditor,
        }.get(who) or self.players[player]
        if who in ("player", "auditor"):
            expect: tuple[int, ...] = (403,)
        else:
            expect = (409,) if name in self.created else (201,)
        response = self.send("create player", client, "post", "/players", {"name": name}, expect)
        if response.status_code == 201:
            self.created.append(name)

    def _balance(self, name: str) -> dict[str, Any]:
        balance: dict[str, Any] = self.auditor.ok("get", f"/players/{name}/balance")
        return balance

    @rule(data=st.data(), amount=st.integers(1, 2000))
    def deposit(self, data: st.DataObject, amount: int) -> None:
        name = self.player(data, [*self.created, "setter"])
        expect = (201,) if name == "setter" or name in self.created else (404,)
        self.send(
            "deposit", self.setter, "post", f"/players/{name}/deposits", {"amount": amount}, expect
        )

    @rule(data=st.data(), amount=st.integers(1, 4000))
    def withdraw(self, data: st.DataObject, amount: int) -> None:
        """A withdrawal, some of them past what the account may spend: refused, 422."""
        name = self.player(data, [*self.created, "setter"])
        account = self._balance(name)
        spendable = account["balance"] + account["credit_limit"]
        expect = (201,) if amount <= spendable and not account["owed"] else (422,)
        self.send(
            "withdraw",
            self.setter,
            "post",
            f"/players/{name}/withdrawals",
            {"amount": amount},
            expect,
        )

    @rule(data=st.data(), limit=st.sampled_from([0, 0, 50, 300, 1000]))
    def credit(self, data: st.DataObject, limit: int) -> None:
        """A limit below what the account has drawn on its credit (a dispute's
        adjustment may have taken it past its old limit) is refused until repaid."""
        name = self.player(data)
        expect: tuple[int, ...] = (404,)
        if name in self.created:
            drawn = max(0, -self._balance(name)["balance"])
            expect = (200,) if limit >= drawn else (422,)
        answer = self.send(
            "credit", self.setter, "put", f"/players/{name}/credit-limit", {"limit": limit}, expect
        )
        if expect == (422,):
            assert answer.get_json()["type"] == "urn:hazard:credit-in-use", answer.get_json()

    @rule(data=st.data(), amount=st.sampled_from(BAD_AMOUNTS))
    def bad_amount(self, data: st.DataObject, amount: Any) -> None:
        """An amount no money write takes: refused, 400 or 422 (a credit limit may be 0,
        so it is sent -1 instead)."""
        name = self.player(data)
        what = data.draw(st.sampled_from(["deposits", "withdrawals", "stake", "lay", "credit"]))
        if what == "credit":
            self.send(
                "bad amount",
                self.setter,
                "put",
                f"/players/{name}/credit-limit",
                {"limit": -1 if amount == 0 else amount},
                (400, 422),
            )
        elif what in ("deposits", "withdrawals"):
            self.send(
                "bad amount",
                self.setter,
                "post",
                f"/players/{name}/{what}",
                {"amount": amount},
                (400, 422),
            )
        elif what == "stake":
            self.table_write(
                "bad amount", self.croupier, "t1", "stakes", {"amount": amount}, expect=(400, 422)
            )
        else:
            self.table_write(
                "bad amount",
                self.players[name],
                "t1",
                "lays",
                {"player": name, "amount": amount},
                expect=(400, 422),
            )

    # -- tables ------------------------------------------------------------------------

    @rule(data=st.data(), table=st.sampled_from(TABLES), ruleset=st.sampled_from(RULESETS))
    def open_table(self, data: st.DataObject, table: str, ruleset: str) -> None:
        who = data.draw(st.sampled_from(["setter", "croupier", "player"]))
        client = {"setter": self.setter, "croupier": self.croupier, "player": self.players["ann"]}[
            who
        ]
        if who == "player":
            expect: tuple[int, ...] = (403,)
        else:
            expect = (409,) if table in self.states else (201,)
        self.send(
            "open table", client, "post", "/tables", {"id": table, "ruleset": ruleset}, expect
        )

    @precondition(lambda self: any(s["round"] >= 3 for s in self.states.values()))
    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        """Close a table that has played a few rounds: its open bets are voided."""
        table = data.draw(
            st.sampled_from(sorted(t for t, s in self.states.items() if s["round"] >= 3))
        )
        self.table_write("close", self.croupier, table, "close", expect=(201, 422))

    # -- play: what fits the table's phase, mostly -------------------------------------

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def play(self, data: st.DataObject) -> None:
        self._play(data)

    # The same rule under four names: hypothesis picks among rules evenly, and play is
    # what most of an evening is (and what ends rounds, for settlements and disputes).
    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def play_on(self, data: st.DataObject) -> None:
        self._play(data)

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def play_more(self, data: st.DataObject) -> None:
        self._play(data)

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def play_again(self, data: st.DataObject) -> None:
        self._play(data)

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def throw(self, data: st.DataObject) -> None:
        table = data.draw(st.sampled_from(sorted(self.states)))
        dice = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)))
        self.table_write(
            "throw",
            self.croupier,
            table,
            "throws",
            {"die1": dice[0], "die2": dice[1]},
            expect=(201, 422),
        )

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def play_out_the_round(self, data: st.DataObject) -> None:
        """The round at a table played on to its end (or a dozen commands): a main
        called where one is awaited, dice from hypothesis otherwise. Rounds that end are
        what settlements and disputes are made of, and a step of a few commands rarely
        ends one."""
        table = data.draw(st.sampled_from(sorted(self.states)))
        refused = ""  # a main refused (it is thrown here) or a throw (call the main first)
        for _ in range(12):
            state = self.croupier.ok("get", f"/tables/{table}")
            self.states[table] = state
            if state["phase"] not in ("awaiting-main", "first-throw", "chance"):
                return
            if state["phase"] == "awaiting-main":
                steps = [s for s in ("stake", "main", "throw") if s != refused]
                step = data.draw(st.sampled_from(steps))
                if step == "stake":  # money on the round, for its settlements to move
                    body: dict[str, Any] = {"amount": data.draw(st.integers(1, 100))}
                    self.table_write(
                        "stake", self.croupier, table, "stakes", body, expect=(201, 422)
                    )
                    continue
                if step == "main":
                    body = {"main": data.draw(st.integers(5, 9))}
                    answer = self.table_write(
                        "main", self.croupier, table, "main", body, expect=(201, 422)
                    )
                    refused = "main" if answer.status_code == 422 else ""
                    continue
            die1, die2 = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)))
            body = {"die1": die1, "die2": die2}
            answer = self.table_write(
                "throw", self.croupier, table, "throws", body, expect=(201, 422)
            )
            refused = "throw" if answer.status_code == 422 else ""
            if answer.status_code == 201:
                after = self.croupier.ok("get", f"/tables/{table}")
                self.states[table] = after
                if after["round"] > state["round"]:
                    return

    def _play(self, data: st.DataObject) -> None:
        """One to four commands at a table, each fitting its phase nine times in ten;
        the model reads the table again between them."""
        for turn in range(data.draw(st.integers(1, 4))):
            table = data.draw(st.sampled_from(sorted(self.states)))
            if turn:
                self.states[table] = self.croupier.ok("get", f"/tables/{table}")
            self._command(data, table, self.states[table])

    def _command(self, data: st.DataObject, table: str, state: dict[str, Any]) -> None:
        caster, bets = state["caster"], state["open_bets"]
        seated = [p for p in state["seats"] if p in self.players]
        others = [p for p in seated if p != caster] or list(self.created) or ["ann"]
        kind = data.draw(st.sampled_from(BY_PHASE.get(state["phase"]) or ANYTHING))
        if data.draw(st.integers(0, 9)) == 0:
            kind = data.draw(st.sampled_from(ANYTHING))  # out of phase, as like as not
        amount = data.draw(st.integers(1, 300))
        player = data.draw(st.sampled_from(others))
        own = self.players[player]
        for_caster = self.players.get(caster or "", self.croupier)
        if data.draw(st.booleans()):
            for_caster = self.croupier  # the croupier acts for the caster as often
        offered = [b for b in bets if b["kind"] == "side" and b["pending"]]
        laid = [b["id"] for b in bets if b["kind"] != "side" and None in (b["yes"], b["no"])]
        loose, missing = (201, 422), (201, 404, 422)
        client, rule, body, expect = self.croupier, "", None, loose
        if kind == "seat":
            unseated = [p for p in self.created if p not in state["seats"]]
            rule, body, expect = "seats", {"player": self.player(data, unseated)}, missing
        elif kind == "cast":
            name = data.draw(st.sampled_from(seated or list(PLAYERS)))
            rule, body = "casts", {"player": name, "die": data.draw(st.integers(1, 6))}
        elif kind == "leave":
            client, rule, body = own, "leave", {"player": player}
        elif kind == "stake":
            client, rule, body = for_caster, "stakes", {"amount": amount}
        elif kind == "lay":
            client, rule, body = own, "lays", {"player": player, "amount": amount}
        elif kind == "cover":
            client, rule, body = for_caster, "covers", {}
        elif kind == "refuse":
            bet = data.draw(st.sampled_from(laid or ["b1"]))
            client, rule, body, expect = for_caster, "refusals", {"bet": bet}, missing
        elif kind == "main":
            rule, body = "main", {"main": data.draw(st.integers(5, 9))}
        elif kind == "throw":
            die1, die2 = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6)))
            rule, body = "throws", {"die1": die1, "die2": die2}
        elif kind == "void throw":
            off = data.draw(st.integers(0, 2))
            body = {"reason": data.draw(st.sampled_from(["cocked", "wild"])), "off": off}
            if off:
                body["standing"] = data.draw(st.integers(1, 6))
            rule = "void-throws"
        elif kind == "odds":
            # Odds back a stake on the round: mostly by someone who has one.
            staked = [b[side] for b in bets if b["kind"] != "side" for side in ("yes", "no")]
            backer = data.draw(
                st.sampled_from([p for p in staked if p in self.players] or [player])
            )
            on = data.draw(st.sampled_from(["chance", "main"]))
            body = {"player": backer, "on": on, "amount": data.draw(st.integers(1, 60))}
            client, rule = self.players[backer], "odds"
        elif kind == "side bet":
            client, rule, body = own, "side-bets", self._offer(data, player, amount, seated)
        elif kind == "accept":
            bet = data.draw(st.sampled_from(offered))["id"] if offered else "b1"
            taker = data.draw(st.sampled_from(seated or self.created))
            client, rule = self.players[taker], "side-bets/accept"
            body, expect = {"player": taker, "bet": bet}, missing
        elif kind == "withdraw bet":
            side = data.draw(st.sampled_from(offered)) if offered else None
            who = (side["yes"] or side["no"]) if side else player
            client, rule = self.players.get(who, self.croupier), "side-bets/withdraw"
            body, expect = {"player": who, "bet": side["id"] if side else "b1"}, missing
        elif kind == "pass":
            client, rule = for_caster, "pass"
        self.table_write(kind, client, table, rule, body, expect=expect)

    def _offer(
        self, data: st.DataObject, player: str, amount: int, seated: list[str]
    ) -> dict[str, Any]:
        kind = data.draw(st.sampled_from([k.value for k in PropositionKind]))
        totals = sorted(data.draw(st.sets(st.integers(2, 12), min_size=1, max_size=4)))
        return {
            "player": player,
            "proposition": {"kind": kind, "totals": totals if kind == "next-total" else []},
            "backs": data.draw(st.booleans()),
            "stake": amount,
            "asks": data.draw(st.integers(1, 300)),
            "to": data.draw(st.sampled_from([None, *seated])),
        }

    # -- disputes -----------------------------------------------------------------------

    def _ended(self) -> list[tuple[str, dict[str, Any]]]:
        found = []
        for table in sorted(self.states):
            page = self.auditor.ok("get", f"/tables/{table}/rounds", query_string={"limit": 500})
            found += [(table, r) for r in page["items"] if r["result"] is not None]
        return found

    @precondition(lambda self: any(s["round"] >= 2 for s in self.states.values()))
    @rule(data=st.data())
    def open_dispute(self, data: st.DataObject) -> None:
        ended = self._ended()
        if not ended:
            return
        table, round_ = data.draw(st.sampled_from(ended))
        detail = self.auditor.ok("get", f"/tables/{table}/rounds/{round_['round']}")
        throws = [e["version"] for e in detail["events"] if e["type"] == "DiceThrown"]
        body: dict[str, Any] = {"claim": "the dice were misread"}
        if throws and data.draw(st.booleans()):
            body["throw"] = data.draw(st.sampled_from(throws))
            body["dice"] = list(data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6))))
        who = data.draw(st.sampled_from(["croupier", "setter", "player", "auditor"]))
        if who == "auditor":
            self.send(
                "open dispute",
                self.auditor,
                "post",
                f"/tables/{table}/rounds/{round_['round']}/disputes",
                body,
                (403,),
            )
            return
        client = {"croupier": self.croupier, "setter": self.setter}.get(who) or self.players[
            self.player(data)
        ]
        self.send(
            "open dispute",
            client,
            "post",
            f"/tables/{table}/rounds/{round_['round']}/disputes",
            body,
            (201, 403, 422),
        )

    @precondition(lambda self: any(s["round"] >= 2 for s in self.states.values()))
    @rule(data=st.data())
    def dispute_start_to_finish(self, data: st.DataObject) -> None:
        """The setter opens a dispute over a round that moved money, and resolves it at
        once: upheld, voided, or a throw corrected. Left to open_dispute and
        resolve_dispute alone, few disputes were ever resolved in a run, and none moved
        money."""
        with_money = [
            (table, r)
            for table, r in self._ended()
            if self.auditor.ok(
                "get", "/settlements", query_string={"table": table, "round": r["round"]}
            )["items"]
        ]
        if not with_money:
            return
        table, round_ = data.draw(st.sampled_from(with_money))
        path = f"/tables/{table}/rounds/{round_['round']}/disputes"
        body: dict[str, Any] = {"claim": "the setter reviews the round"}
        if data.draw(st.integers(0, 3)):  # a claim of other dice: its answer says what a
            detail = self.auditor.ok("get", f"/tables/{table}/rounds/{round_['round']}")
            throws = [e["version"] for e in detail["events"] if e["type"] == "DiceThrown"]
            if throws:  # correction to them would do, and _resolve holds it to that
                body["throw"] = data.draw(st.sampled_from(throws))
                body["dice"] = list(data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6))))
        opened = self.send("open dispute", self.setter, "post", path, body, (201, 422))
        if opened.status_code != 201:
            return
        dispute = opened.get_json()["dispute_id"]
        self._resolve(data, table, {"dispute_id": dispute, "round": round_["round"]})

    @rule(data=st.data())
    def resolve_dispute(self, data: st.DataObject) -> None:
        waiting = [
            (table, d)
            for table in sorted(self.states)
            for d in self.auditor.ok(
                "get", f"/tables/{table}/disputes", query_string={"status": "open"}
            )["items"]
        ]
        if not waiting:
            return
        table, dispute = data.draw(st.sampled_from(waiting))
        self._resolve(data, table, dispute)

    def _resolve(self, data: st.DataObject, table: str, dispute: dict[str, Any]) -> None:
        """Resolve a dispute. A correction to the dice the claim named is held to the
        dispute's answer: made, posting its `adjustments`, exactly when it said
        `correctable`, and otherwise refused under its `refused_rule`."""
        resolution = data.draw(st.sampled_from(["upheld", "voided", "voided", "corrected"]))
        body: dict[str, Any] = {"resolution": resolution, "reason": "the camera shows it"}
        path = f"/tables/{table}/disputes/{dispute['dispute_id']}"
        said = None
        if resolution == "corrected":
            answer = self.auditor.ok("get", path)["answer"]
            said = answer["what_if"] if answer and data.draw(st.integers(0, 3)) else None
            if said is not None:
                body["throw"], body["dice"] = said["throw"], said["dice"]
            else:
                detail = self.auditor.ok("get", f"/tables/{table}/rounds/{dispute['round']}")
                throws = [e["version"] for e in detail["events"] if e["type"] == "DiceThrown"]
                body["throw"] = data.draw(st.sampled_from(throws or [1]))
                body["dice"] = list(data.draw(st.tuples(st.integers(1, 6), st.integers(1, 6))))
        if data.draw(st.integers(0, 4)) == 0:
            self.send("resolve dispute", self.croupier, "post", f"{path}/resolution", body, (403,))
            return
        expect = (201, 422) if said is None else (201,) if said["correctable"] else (422,)
        response = self.send(
            "resolve dispute", self.setter, "post", f"{path}/resolution", body, expect
        )
        if said is not None and said["correctable"]:
            made = [
                {"bet_id": e["payload"]["bet_id"], "transfers": e["transfers"]}
                for e in response.get_json()["events"][1:]
            ]
            assert made == said["adjustments"], (made, said)
        elif said is not None:
            problem = response.get_json()
            assert problem["type"] == f"urn:hazard:rule:{said['refused_rule']}", (problem, said)
            assert problem["detail"] == said["refused"], (problem, said)
        if said is not None:
            FIGURES[f"correction as answered ({said['refused_rule'] or 'made'})"] += 1

    # -- exports ------------------------------------------------------------------------

    @precondition(lambda self: bool(self.states))
    @rule(data=st.data())
    def export(self, data: st.DataObject) -> None:
        """An export, checked offline as `hazard verify FILE --key` checks it."""
        scope = data.draw(st.sampled_from(["table", "all", "player", "another's"]))
        name = self.player(data)
        if scope == "table":
            query: dict[str, Any] = {"table": data.draw(st.sampled_from(sorted(self.states)))}
            verified = check.export_verified(self.auditor, query)
            FIGURES["export 200"] += 1
            assert verified.tables == 1
        elif scope == "all":
            verified = check.export_verified(self.auditor, {"all": "true"})
            FIGURES["export 200"] += 1
            with self.store.engine.connect() as conn:
                assert (
                    verified.events
                    == conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()
                )
        elif scope == "player" and name in self.created:
            check.export_verified(self.players[name], {"player": name})
            FIGURES["export 200"] += 1
        else:
            other = "bob" if name != "bob" else "ann"
            self.send("export", self.players[name], "get", f"/export?player={other}", expect=(403,))

    # -- invalid on purpose ---------------------------------------------------------------

    @rule(data=st.data())
    def wrong_role(self, data: st.DataObject) -> None:
        """A write by a role that may not make it: 403, nothing written."""
        name = self.player(data)
        table = data.draw(st.sampled_from(sorted(self.states) or ["t1"]))
        attempts = [
            (self.auditor, "post", f"/players/{name}/deposits", {"amount": 5}),
            (self.croupier, "post", f"/players/{name}/deposits", {"amount": 5}),
            (self.croupier, "put", f"/players/{name}/credit-limit", {"limit": 5}),
            (self.players[name], "post", f"/players/{name}/withdrawals", {"amount": 5}),
            (self.players[name], "post", f"/tables/{table}/throws", {"die1": 3, "die2": 4}),
            (self.players[name], "post", f"/tables/{table}/main", {"main": 7}),
            (self.auditor, "post", f"/tables/{table}/throws", {"die1": 3, "die2": 4}),
            (
                self.players[name],
                "post",
                f"/tables/{table}/lays",
                {"player": "bob" if name != "bob" else "ann", "amount": 5},
            ),
        ]
        client, method, path, body = data.draw(st.sampled_from(attempts))
        expect = (403, 404) if "/tables/" in path and table not in self.states else (403,)
        self.send("wrong role", client, method, path, body, expect)

    @precondition(lambda self: any(s["version"] > 1 for s in self.states.values()))
    @rule(data=st.data())
    def stale(self, data: st.DataObject) -> None:
        """A table write with an If-Match the table has moved past: 409."""
        table = data.draw(
            st.sampled_from(sorted(t for t, s in self.states.items() if s["version"] > 1))
        )
        version = data.draw(st.integers(0, self.states[table]["version"] - 1))
        dice = {"die1": 3, "die2": 4}
        self.table_write(
            "stale if-match",
            self.croupier,
            table,
            "throws",
            dice,
            headers={"If-Match": f'"{version}"'},
            expect=(409,),
        )

    @precondition(lambda self: bool(self.writes))
    @rule(data=st.data())
    def repeat(self, data: st.DataObject) -> None:
        """A write sent again with its Idempotency-Key: with the same body, the first
        answer and nothing written; with another body, refused 422."""
        client, method, path, body, key, answer = data.draw(st.sampled_from(self.writes))
        before = check.footprint(self.store)
        response = getattr(client, method)(path, json=body, headers={"Idempotency-Key": key})
        FIGURES[f"repeat {response.status_code}"] += 1
        assert response.status_code in (200, 201), response.get_json()
        assert response.get_json() == answer
        assert check.footprint(self.store) == before
        other = _another(body)
        if other is not None:
            self.send("reused key", client, method, path, other, (422,), key=key)
            assert response.get_json() == answer

    # -- after every step --------------------------------------------------------------

    @invariant()
    def holds(self) -> None:
        began = time.monotonic()
        try:
            self._holds()
        finally:
            FIGURES["checks ms"] += round(1000 * (time.monotonic() - began))

    def _holds(self) -> None:
        self.steps += 1
        FIGURES["steps"] += 1
        for table in TABLES:
            if self.auditor.get(f"/tables/{table}").status_code == 200:
                self.states[table] = check.replayed(self.store, self.croupier, table)
        balances = check.money(self.store, self.auditor, self.created)
        for table, state in self.states.items():
            check.escrow_held(balances, table, state)
        check.settlements_traced(self.store, self.auditor)
        size = check.log_checked(self.store)
        if not size:
            return
        newest = self.auditor.ok("get", "/log/checkpoint")["checkpoint"]
        beyond = [
            (check.checkpoint_size(n), self.origin.get(n))
            for n in self.receipts
            if check.checkpoint_size(n) > size
        ]
        assert not beyond, (size, beyond)
        assert check.checkpoint_size(newest) == size
        again = [self.newest] if self.newest else []
        for note in [*again, *self.unchecked]:
            check.consistent(self.auditor, note, newest)
        older = self.receipts[: -len(self.unchecked) or None]
        if older:
            start = (self.steps * RECEIPTS_PER_STEP) % len(older)
            for note in (older + older)[start : start + min(RECEIPTS_PER_STEP, len(older))]:
                check.consistent(self.auditor, note, newest)
        self.newest, self.unchecked = newest, []
        if self.steps % DEEP_EVERY == 0:
            self._deep()

    def _deep(self) -> None:
        began = time.monotonic()
        check.deep_checked(self.store)
        FIGURES["deep checks"] += 1
        FIGURES["deep ms"] += round(1000 * (time.monotonic() - began))


def _another(body: Any) -> Any:
    """The body with one of its numbers changed, or None when it has none."""
    if not isinstance(body, dict):
        return None
    for field in ("amount", "limit", "main", "die", "die1"):
        if isinstance(body.get(field), int) and not isinstance(body.get(field), bool):
            changed = (
                body[field] + 1 if field not in ("main", "die", "die1") else 5 + (body[field] == 5)
            )
            return {**body, field: changed}
    return None


# -- the test --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_service_holds_under_random_commands(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    examples, steps = SIZES[kind]
    examples, steps = EXAMPLES or examples, STEPS or steps
    databases = _sqlite(request, tmp_path) if kind == "sqlite" else _postgres(request)
    machine = type(f"ServiceModel_{kind}", (ServiceModel,), {"database": staticmethod(databases)})
    FIGURES.clear()
    began = time.monotonic()
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            phases=PHASES,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.filter_too_much,
                HealthCheck.data_too_large,
            ],
        ),
    )
    FIGURES["seconds"] = round(time.monotonic() - began)
    assert FIGURES["examples"] >= min(examples, 2)
    _report(kind)


def _report(kind: str) -> None:
    where = os.environ.get("HAZARD_MODEL_FIGURES")
    if not where:
        return
    path = Path(where)
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures[kind] = dict(sorted(FIGURES.items()))
    path.write_text(json.dumps(figures, indent=1) + "\n")


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Iterator[str]]:
    template = request.getfixturevalue("sqlite_migrated")
    copies = itertools.count()

    @contextlib.contextmanager
    def database() -> Iterator[str]:
        copy = tmp_path / f"model-{next(copies)}.sqlite3"
        shutil.copyfile(template, copy)
        try:
            yield f"sqlite:///{copy}"
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)

    return database


def _postgres(
    request: pytest.FixtureRequest,
) -> Callable[[], contextlib.AbstractContextManager[str]]:
    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("postgres_migrated")
    return lambda: postgres_copy(server, template, "model")
