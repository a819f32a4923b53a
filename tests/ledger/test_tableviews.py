"""The settlements and rounds read models, on SQLite and PostgreSQL: a game played
through the book and checked by hand, the queries over it, and rebuild equal to live."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as hz
from engine import events as ev
from ledger.books import projections, tableviews
from ledger.books.accounts import account_stream
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.schema import metadata, rounds, settlement_parties, settlements
from ledger.store.vocabulary import Deposited
from ledger.unit_of_work import UnitOfWork
from tests.engine.strategies import History, histories
from tests.engine.tablekit import NICK_FIRST, next_total
from tests.ledger.plankit import capture, full_scan_or_sort, plan
from tests.signing import SIGNER

STREAM = "table:t1"
FUNDED = 4
"""Deposits made before the table opens, each a write of its own."""
FOLLOWING = frozenset({6, 17, 18, 23, 24, 25, 31, 33, 37})
"""The table's versions written by the same command as the version before them (as the
comments of `play_three_rounds` give them: 5 and 6, 16 to 18, 22 to 25, ...): every
other version begins a write of its own."""


def minute(n: int) -> str:
    return f"2024-05-01T{10 + n // 60:02d}:{n % 60:02d}:00.000000Z"


def p(version: int) -> int:
    """The global position of the table's event at `version`: after the deposits, each
    with its write's seal, the table's events before it, and the seal that ends each of
    the table's writes before its own (every write ends with one, ledger.store.log
    .sealing)."""
    writes_before = sum(1 for v in range(2, version + 1) if v not in FOLLOWING)
    return 2 * FUNDED + version + writes_before


@pytest.fixture
def clocked(engine: sa.Engine) -> Iterator[EventStore]:
    """A store whose every append is a minute after the one before: minute(0), ..."""
    ticks = itertools.count()
    store = EventStore(engine, clock=lambda: minute(next(ticks)), signer=SIGNER)
    yield store
    store.close()


class Game:
    """A table played through the book, with the read models written as the service
    writes them: in each command's transaction, given the state before it."""

    def __init__(self, book: Book, stream: str = STREAM) -> None:
        self.book, self.stream, self.state = book, stream, hz.INITIAL

    def do(self, command: Callable[..., list[hz.Event]], *args: Any) -> list[Recorded]:
        events = command(self.state, *args)
        with UnitOfWork(self.book.store) as uow:
            rows, after = uow.play(self.stream, self.state, events, "croupier")
            uow.commit()
        assert after == hz.fold(events, self.state)
        self.state = after
        return rows


def deposit(book: Book, account: str, amount: int) -> None:
    """Money into `account`: one append of one Deposited, in a unit of work of its own
    (the positions and times below count them), with no account opened first."""
    stream = account_stream(account)
    with UnitOfWork(book.store) as uow:
        version = book.store.stream_version(uow.conn, stream)
        event = Deposited(version=version + 1, account=account, amount=amount)
        uow.record(stream, version, [event], "setter")
        uow.commit()


def play_three_rounds(book: Book) -> Game:
    """Three rounds at one table; the comments give each event's version."""
    for account in ("player:ann", "player:bob", "player:cat"):
        deposit(book, account, 5000)
    deposit(book, "setter", 100_000)
    g = Game(book)
    g.do(lambda s: hz.open_table(hz.BUILTIN["english"]))  # 1
    g.do(hz.seat, "ann")  # 2
    g.do(hz.seat, "bob")  # 3
    g.do(hz.cast_for_caster, "ann", 1)  # 4
    g.do(hz.cast_for_caster, "bob", 6)  # 5, and 6: ann is chosen, round 1 begins
    # Round 1: ann calls 7, throws a chance of 4, then the chance.
    g.do(hz.call_main, 7)  # 7
    g.do(hz.stake, 1000)  # 8: b8, ann against the setter
    g.do(hz.lay, "bob", 400)  # 9: b9
    g.do(hz.lay, "bob", 100)  # 10: b10
    g.do(hz.refuse, "b10")  # 11
    g.do(hz.cover, 4000)  # 12: b9 covered
    g.do(hz.offer_side_bet, "bob", next_total(7), True, 100, 500)  # 13: b13
    g.do(hz.accept_side_bet, "b13", "setter")  # 14
    g.do(hz.offer_side_bet, "ann", NICK_FIRST, True, 200, 200, "bob")  # 15: b15
    g.do(hz.throw, 2, 2)  # 16; 17: b13 to the setter; 18: b15 never accepted
    g.do(hz.lay_odds, "ann", "chance", 500)  # 19: b19, pays 6/3
    g.do(hz.offer_side_bet, "bob", next_total(11), True, 50, 50)  # 20: b20
    g.do(hz.withdraw_side_bet, "b20", "bob")  # 21
    g.do(hz.throw, 1, 3)  # 22; 23, 24, 25: b8, b9, b19 to ann
    # Round 2: ann calls 6 and throws out with 2; cat sits down and wins.
    g.do(hz.call_main, 6)  # 26
    g.do(hz.seat, "cat")  # 27
    g.do(hz.lay, "cat", 300)  # 28: b28
    g.do(hz.cover, 4000)  # 29
    g.do(hz.throw, 1, 1)  # 30; 31: b28 to cat
    # Round 3: ann leaves before the main, which abandons it, as leaving after the main
    # would. Round 4: bob takes the dice; the table closes, which abandons it too.
    g.do(hz.leave, "ann")  # 32; 33: the dice pass to bob, round 4 begins
    g.do(hz.call_main, 5)  # 34
    g.do(hz.stake, 200)  # 35: b35, bob against the setter
    g.do(hz.close)  # 36: b35 voided; 37
    return g


def escrow(bet: str, to: str, amount: int) -> dict[str, Any]:
    return {"source": f"escrow:t1:{bet}", "target": to, "amount": amount}


def settlement(
    version: int,
    round_: int,
    bet: str,
    kind: str,
    transfers: list[dict[str, Any]],
    sources: list[int],
    winner: str | None = None,
    reason: str | None = None,
    at: int = 0,
) -> dict[str, Any]:
    return {
        "position": p(version),
        "table": "t1",
        "round": round_,
        "bet_id": bet,
        "kind": kind,
        "outcome": "settled" if winner else "voided",
        "winner": winner,
        "reason": reason,
        "recorded_at": minute(at),
        "transfers": transfers,
        "sources": [p(v) for v in sources],
        "adjustments": [],  # no dispute here adjusts a bet
    }


# Worked by hand from the game above. Append n (from 0: four deposits, then one per
# command) is recorded at minute(n).
EXPECTED = [
    settlement(11, 1, "b10", "laid", [escrow("b10", "player:bob", 100)], [10, 11],
               reason="refused", at=13),
    settlement(17, 1, "b13", "side", [escrow("b13", "setter", 600)], [13, 14, 16, 17],
               winner="setter", at=18),
    settlement(18, 1, "b15", "side", [escrow("b15", "player:ann", 200)], [15, 16, 18],
               reason="never-accepted", at=18),
    settlement(21, 1, "b20", "side", [escrow("b20", "player:bob", 50)], [20, 21],
               reason="withdrawn", at=21),
    settlement(23, 1, "b8", "caster", [escrow("b8", "player:ann", 2000)], [8, 22, 23],
               winner="ann", at=22),
    settlement(24, 1, "b9", "laid", [escrow("b9", "player:ann", 800)], [9, 12, 22, 24],
               winner="ann", at=22),
    settlement(25, 1, "b19", "odds", [escrow("b19", "player:ann", 1500)], [19, 22, 25],
               winner="ann", at=22),
    settlement(31, 2, "b28", "laid", [escrow("b28", "player:cat", 600)], [28, 29, 30, 31],
               winner="cat", at=27),
    settlement(36, 4, "b35", "caster",
               [escrow("b35", "player:bob", 200), escrow("b35", "setter", 200)], [35, 36, 37],
               reason="table-closed", at=31),
]  # fmt: skip
BY_BET = {s["bet_id"]: s for s in EXPECTED}

ROUNDS = [
    {"table": "t1", "round": 1, "caster": "ann", "main": 7, "chance": 4, "result": "chance",
     "first_version": 6, "last_version": 25, "first_position": p(6), "last_position": p(25),
     "started_at": minute(8), "ended_at": minute(22), "winner": "ann"},
    {"table": "t1", "round": 2, "caster": "ann", "main": 6, "chance": None, "result": "out",
     "first_version": 26, "last_version": 31, "first_position": p(26), "last_position": p(31),
     "started_at": minute(23), "ended_at": minute(27), "winner": "setter"},
    {"table": "t1", "round": 3, "caster": "ann", "main": None, "chance": None,
     "result": "abandoned", "first_version": 32, "last_version": 32, "first_position": p(32),
     "last_position": p(32), "started_at": minute(28), "ended_at": minute(28), "winner": None},
    {"table": "t1", "round": 4, "caster": "bob", "main": 5, "chance": None,
     "result": "abandoned", "first_version": 33, "last_version": 37, "first_position": p(33),
     "last_position": p(37), "started_at": minute(28), "ended_at": minute(31), "winner": None},
]  # fmt: skip


@pytest.fixture
def game(clocked: EventStore) -> Game:
    return play_three_rounds(Book(clocked))


def bets(rows: list[dict[str, Any]]) -> list[str]:
    return [r["bet_id"] for r in rows]


# -- what is written ----------------------------------------------------------------------


def test_every_closed_bet_is_a_settlement_with_its_transfers_and_sources(
    game: Game, engine: sa.Engine
) -> None:
    with engine.connect() as conn:
        assert tableviews.settlements(conn, limit=100) == EXPECTED
        assert tableviews.rounds(conn, STREAM) == ROUNDS


def test_a_settlement_s_transfers_are_what_the_book_posted(game: Game, engine: sa.Engine) -> None:
    from ledger.store.schema import postings

    with engine.connect() as conn:
        for s in tableviews.settlements(conn, limit=100):
            posted = conn.execute(
                sa.select(postings.c.account, postings.c.counterparty, postings.c.amount).where(
                    postings.c.position == s["position"], postings.c.amount > 0
                )
            ).all()
            moved = {(t["target"], t["source"], t["amount"]) for t in s["transfers"]}
            assert set(map(tuple, posted)) == moved


def test_each_settlement_names_its_parties_as_ledger_accounts(
    game: Game, engine: sa.Engine
) -> None:
    with engine.connect() as conn:
        rows = conn.execute(sa.select(settlement_parties)).all()
    parties: dict[int, set[str]] = {}
    for row in rows:
        parties.setdefault(row.position, set()).add(row.party)
    assert parties == {
        p(11): {"player:bob"},  # a refused stake had only the one side
        p(17): {"player:bob", "setter"},
        p(18): {"player:ann"},  # an offer never accepted
        p(21): {"player:bob"},
        p(23): {"player:ann", "setter"},
        p(24): {"player:ann", "player:bob"},
        p(25): {"player:ann", "setter"},
        p(31): {"player:ann", "player:cat"},
        p(36): {"player:bob", "setter"},
    }


# -- the queries --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"stream": STREAM}, ["b10", "b13", "b15", "b20", "b8", "b9", "b19", "b28", "b35"]),
        ({"stream": "table:other"}, []),
        ({"stream": STREAM, "round": 2}, ["b28"]),
        ({"stream": STREAM, "round": 3}, []),
        ({"stream": STREAM, "round": 4}, ["b35"]),
        ({"party": "player:cat"}, ["b28"]),
        ({"party": "setter"}, ["b13", "b8", "b19", "b35"]),
        ({"party": "player:bob", "round": 1}, ["b10", "b13", "b20", "b9"]),
        ({"bet_id": "b9"}, ["b9"]),
        ({"bet_id": "b9", "stream": STREAM}, ["b9"]),
        ({"since": minute(22), "until": minute(28)}, ["b8", "b9", "b19", "b28"]),
        ({"since": minute(27)}, ["b28", "b35"]),
        ({"until": minute(18)}, ["b10"]),
        ({"party": "player:ann", "since": minute(22)}, ["b8", "b9", "b19", "b28"]),
    ],
)
def test_settlements_filter_by_table_round_party_bet_and_time(
    game: Game, engine: sa.Engine, filters: dict[str, Any], expected: list[str]
) -> None:
    with engine.connect() as conn:
        found = tableviews.settlements(conn, **filters)
    assert bets(found) == expected
    assert found == [BY_BET[b] for b in expected]


def test_settlements_page_by_position(game: Game, engine: sa.Engine) -> None:
    with engine.connect() as conn:
        pages, after = [], 0
        while page := tableviews.settlements(conn, stream=STREAM, after_position=after, limit=4):
            pages.append(bets(page))
            after = page[-1]["position"]
        by_party = tableviews.settlements(conn, party="player:ann", after_position=p(23), limit=2)
    assert pages == [["b10", "b13", "b15", "b20"], ["b8", "b9", "b19", "b28"], ["b35"]]
    assert bets(by_party) == ["b9", "b19"]


def test_rounds_page_by_round(game: Game, engine: sa.Engine) -> None:
    with engine.connect() as conn:
        assert tableviews.rounds(conn, STREAM, limit=2) == ROUNDS[:2]
        assert tableviews.rounds(conn, STREAM, after_round=2) == ROUNDS[2:]
        assert tableviews.rounds(conn, "table:other") == []


def test_a_round_in_detail_lists_its_events_and_settlements(game: Game, engine: sa.Engine) -> None:
    with engine.connect() as conn:
        detail = tableviews.round_detail(conn, game.book.store, STREAM, 2)
        assert tableviews.round_detail(conn, game.book.store, STREAM, 5) is None
        pages = [
            tableviews.round_detail(conn, game.book.store, STREAM, 2, p(after), limit=2)
            for after in (0, 27, 29, 31)
        ]
        settled = tableviews.settlements(conn, stream=STREAM, round=2)
    assert detail is not None
    assert {k: v for k, v in detail.items() if k != "events"} == ROUNDS[1]
    assert [(e["version"], e["position"], e["type"]) for e in detail["events"]] == [
        (26, p(26), "MainCalled"),
        (27, p(27), "PlayerSeated"),
        (28, p(28), "StakeLaid"),
        (29, p(29), "StakeCovered"),
        (30, p(30), "DiceThrown"),
        (31, p(31), "BetSettled"),
    ]
    thrown = detail["events"][4]
    assert thrown == {
        "position": p(30),
        "version": 30,
        "type": "DiceThrown",
        "payload": {"die1": 1, "die2": 1},
        "actor": "croupier",
        "recorded_at": minute(27),
        "transfers": [],  # a throw moves no money; what it settles does
    }
    # The money each event moved, in ledger accounts, as the settlement has it.
    assert detail["events"][5]["transfers"] == BY_BET["b28"]["transfers"]
    # A page at a time: after the position of the page before's last event.
    assert [[e["version"] for e in page["events"]] for page in pages if page is not None] == [
        [26, 27],
        [28, 29],
        [30, 31],
        [],
    ]
    # Its settlements are the settlements listing's, filtered by the round.
    assert settled == [BY_BET["b28"]]


def test_the_dice_passing_after_a_round_begins_the_next(
    store: EventStore, engine: sa.Engine
) -> None:
    """Under `club` rules a loss passes the dice: the throw and what it settles end
    round 1, and the DicePassed that follows in the same append begins round 2."""
    book = Book(store)
    deposit(book, "setter", 10_000)
    deposit(book, "player:ann", 1000)
    g = Game(book)
    g.do(lambda s: hz.open_table(hz.BUILTIN["club"]))
    g.do(hz.seat, "ann")
    g.do(hz.seat, "bob")
    g.do(hz.cast_for_caster, "ann", 1)
    g.do(hz.cast_for_caster, "bob", 2)  # ann takes the dice: version 6
    g.do(hz.throw, 3, 4)  # 7: the main is 7
    (staked,) = g.do(hz.stake, 100)  # 8: b8
    rows = g.do(hz.throw, 1, 1)  # 9: out; 10: b8 to the setter; 11: the dice pass
    assert [r.type for r in rows] == ["DiceThrown", "BetSettled", "DicePassed"]
    with engine.connect() as conn:
        found = tableviews.rounds(conn, "table:t1")
        (settled,) = tableviews.settlements(conn)
    spans = [(r["round"], r["caster"], r["result"], r["first_version"], r["last_version"])
             for r in found]  # fmt: skip
    assert spans == [(1, "ann", "out", 6, 10), (2, "bob", None, 11, 11)]
    assert settled["round"] == 1
    assert settled["sources"] == [staked.position, *(r.position for r in rows[:2])]


def test_closing_an_emptied_table_ends_no_round_live_or_rebuilt(
    store: EventStore, engine: sa.Engine
) -> None:
    """Both casters left, so the dice went to nobody: the events after (the last
    DicePassed, the closing) belong to no round, and no round 3 is listed, live or
    rebuilt (QA, issue 9)."""
    g = Game(Book(store))
    g.do(lambda s: hz.open_table(hz.BUILTIN["english"]))
    g.do(hz.seat, "p1")
    g.do(hz.seat, "p2")
    g.do(hz.cast_for_caster, "p1", 1)
    g.do(hz.cast_for_caster, "p2", 3)  # p1 takes the dice: version 6
    g.do(hz.leave, "p1")  # 7, 8: p2 takes them
    g.do(hz.leave, "p2")  # 9, 10: to nobody
    g.do(hz.close)  # 11
    with engine.connect() as conn:
        found = tableviews.rounds(conn, "table:t1")
    spans = [(r["round"], r["caster"], r["result"], r["first_version"], r["last_version"])
             for r in found]  # fmt: skip
    assert spans == [(1, "p1", "abandoned", 6, 7), (2, "p2", "abandoned", 8, 9)]
    live = read_models(engine)
    projections.rebuild(store)
    assert read_models(engine) == live


# -- the fold and the texts, against the slow way ------------------------------------------


class _Row:
    """As much of a stored row as the fold reads: its version and its event."""

    def __init__(self, event: hz.Event) -> None:
        self.version, self._event = event.version, event

    def event(self) -> hz.Event:
        return self._event


@given(histories(), st.data())
@settings(max_examples=60, deadline=None)
def test_the_fold_kept_open_gives_each_event_the_states_a_fresh_fold_gives(
    h: History, data: st.DataObject
) -> None:
    """`tableviews._fold` keeps one fold open over the rows (engine.fold.Folding): each
    step's states either side are those `hz.fold` gives one event at a time from the
    same start, from any step of the history, and when a command's own fold is taken
    for one of the rows (the `folded` of an append)."""
    events = [e for step in h.steps for e in step.events]
    if not events:
        return
    start = data.draw(st.integers(0, len(events) - 1))
    state = hz.fold(events[:start])
    expected = []
    for event in events[start:]:
        after = hz.fold([event], state)
        expected.append((event, state, after))
        state = after
    rows = [_Row(e) for e in events[start:]]
    known = data.draw(st.integers(0, len(rows)))
    folded = (known, expected[known - 1][2]) if known else None
    steps = list(tableviews._fold(expected[0][1], rows, folded))  # type: ignore[arg-type]
    assert [(s.event, s.before, s.after) for s in steps] == expected


@given(st.lists(st.integers(0, 2**63 - 1)))
def test_a_settlement_s_sources_are_written_as_the_canonical_encoder_writes_them(
    positions: list[int],
) -> None:
    assert tableviews._positions_text(positions) == tableviews._canonical(positions)


_TRANSFERS = st.lists(
    st.builds(ev.Transfer, st.text(), st.text(), st.integers(-(2**70), 2**70)), max_size=4
)


@given(_TRANSFERS)
def test_a_settlement_s_transfers_are_written_as_the_canonical_encoder_writes_them(
    transfers: list[ev.Transfer],
) -> None:
    """Any text (quotes, backslashes, control characters, any script) and any integer."""
    views = [{"source": t.source, "target": t.target, "amount": t.amount} for t in transfers]
    assert tableviews._transfers_text(transfers) == tableviews._canonical(views)


# -- rebuilding -----------------------------------------------------------------------------


def read_models(engine: sa.Engine) -> tuple[list[tuple[Any, ...]], ...]:
    with engine.connect() as conn:
        return tuple(
            [tuple(row) for row in conn.execute(sa.select(t).order_by(*t.primary_key.columns))]
            for t in (rounds, settlements, settlement_parties)
        )


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 5000])
def test_rebuilding_gives_the_live_rows(game: Game, engine: sa.Engine, batch: int) -> None:
    live = read_models(engine)
    assert all(live)
    projections.rebuild(game.book.store, batch=batch)
    assert read_models(engine) == live


def test_a_rebuild_replaces_read_models_gone_wrong(game: Game, engine: sa.Engine) -> None:
    live = read_models(engine)
    with engine.begin() as conn:
        conn.execute(rounds.update().values(caster="nobody"))
        conn.execute(settlement_parties.delete().where(settlement_parties.c.party == "setter"))
    projections.rebuild(game.book.store)
    assert read_models(engine) == live


def test_rebuild_equals_live_for_random_histories(engine: sa.Engine) -> None:
    """Any history, appended command by command (each step's events in one append),
    rebuilt in batches of any size, gives the same rows. With one fixed clock the
    appends are indistinguishable in the rows, which a rebuild must not need."""
    streams = itertools.count()

    @given(histories(), st.integers(1, 40), st.booleans())
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    def check(h: History, batch: int, frozen: bool) -> None:
        store = (
            EventStore(engine, clock=lambda: minute(0), signer=SIGNER)
            if frozen
            else EventStore(engine, signer=SIGNER)
        )
        try:
            stream = f"table:h{next(streams)}"
            for step in h.steps:
                with store.transaction() as conn:
                    rows = store.append(conn, stream, step.before.version, step.events, "t")
                    assert tableviews.apply(conn, stream, step.before, rows) == step.after
            check_round_invariants(engine, stream, h)
            live = read_models(engine)
            projections.rebuild(store, batch=batch)
            assert read_models(engine) == live
        finally:
            store.close()

    check()


def check_round_invariants(engine: sa.Engine, stream: str, h: History) -> None:
    """Rounds tile the stream from the first caster on, but for the events while no
    round is in play (the table seating after the dice passed to nobody), which belong
    to none; every round before the current one has ended, as the table's own tally
    says; every closed bet has one settlement."""
    with engine.connect() as conn:
        found = tableviews.rounds(conn, stream, limit=10**6)
        closed = tableviews.settlements(conn, stream=stream, limit=10**6)
    final = h.state
    closings = [e for e in h.events if isinstance(e, ev.BetSettled | ev.BetVoided)]
    assert bets(closed) == [e.bet_id for e in closings]
    ended = [r for r in found if r["result"] is not None]
    assert len(ended) == final.wins + final.losses + final.abandoned
    # Who won each: the caster of a round won, the setter of a round lost.
    won = [r["winner"] == r["caster"] for r in ended if r["winner"] not in (None, "setter")]
    assert all(won) and len(won) == final.wins
    assert [r["winner"] for r in ended].count("setter") == final.losses
    assert [r["round"] for r in ended] == list(range(1, len(ended) + 1))
    # Which events no round holds: exactly those with no round in play either side.
    states = list(itertools.accumulate(h.events, lambda s, e: hz.fold([e], s), initial=hz.INITIAL))
    outside = {
        e.version
        for e, before, after in zip(h.events, states[:-1], states[1:], strict=True)
        if not before.in_play and not after.in_play
    }
    held = {v for r in found for v in range(r["first_version"], r["last_version"] + 1)}
    first = found[0]["first_version"] if found else final.version + 1
    assert set(range(first, final.version + 1)) - held == {v for v in outside if v >= first}
    assert not held & outside
    for earlier, later in itertools.pairwise(found):
        assert later["round"] == earlier["round"] + 1
        assert later["first_version"] > earlier["last_version"]
    for s in closed:
        assert s["position"] in s["sources"] and s["sources"] == sorted(set(s["sources"]))


# -- the schema and the plans ----------------------------------------------------------------


def test_the_migrations_create_exactly_the_schema(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []


@pytest.mark.parametrize(
    "filters",
    [
        {"stream": STREAM},
        {"stream": STREAM, "round": 1},
        {"party": "player:ann"},
        {"bet_id": "b9", "stream": STREAM},
    ],
)
def test_listings_walk_an_index_in_position_order(
    game: Game, engine: sa.Engine, filters: dict[str, Any]
) -> None:
    # The statement `settlements` runs on the driver's cursor (below SQLAlchemy's
    # events, so not captured): the one `settlement_query` makes for these filters.
    statement, params = tableviews.settlement_query(after_position=p(9), **filters)
    with engine.connect() as conn:
        assert full_scan_or_sort(plan(conn, db.driver_sql(conn, statement), tuple(params))) == []


def test_rounds_and_a_round_s_events_are_index_ranges(game: Game, engine: sa.Engine) -> None:
    statements = capture(engine)
    with engine.connect() as conn:
        tableviews.rounds(conn, STREAM, after_round=1)
        tableviews.round_detail(conn, game.book.store, STREAM, 2)
        tableviews.round_detail(conn, game.book.store, STREAM, 2, p(27), limit=2)
        queries = list(statements)
        # rounds; the round, the versions of its disputes (two queries) and a page of
        # its events; again, with the version of the position the second page starts after.
        assert len(queries) == 10
        for statement, params in queries:
            assert full_scan_or_sort(plan(conn, statement, params)) == [], statement


@pytest.mark.parametrize(
    "times", [{"since": minute(22), "until": minute(28)}, {"since": minute(22)}]
)
def test_a_time_range_is_read_from_its_index(
    game: Game, engine: sa.Engine, times: dict[str, str]
) -> None:
    """On SQLite, times narrow by the recorded_at index and the rows in the range are
    then put in position order, so a page costs what the range holds, not what the
    table does. PostgreSQL chooses between that and the position order by its
    statistics (on a table this small, by position): never a full scan."""
    statement, params = tableviews.settlement_query(**times)
    with engine.connect() as conn:
        text = plan(conn, db.driver_sql(conn, statement), tuple(params))
    if engine.dialect.name == "sqlite":
        assert "USING INDEX ix_settlements_recorded_at (recorded_at>? AND recorded_at<?)" in text
    assert "SCAN settlements" not in text and "Seq Scan" not in text, text


def _forfeited_with_an_offer_open(store: EventStore) -> None:
    """cat, the caster, stakes 300 and bob lays 238 against him; bob offers a next-total
    bet nobody takes; cat cannot cover and forfeits, which voids the round's bets and
    passes the dice. The offer, not scoped to its round, stays open until ann's first
    throw (6+6) voids it as never accepted: in ann's round."""
    from ledger.service import Club

    club = Club(Book(store))
    for name, money in (("ann", 2000), ("bob", 2000), ("cat", 400)):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, money, "setter")
    club.account_command("setter", Deposited, 100_000, "setter")
    club.command(
        "t1", "croupier", lambda s, _: hz.open_table(hz.BUILTIN["hard-core"]), new_table=True
    )
    offer = ev.Proposition(ev.PropositionKind.NEXT_TOTAL, frozenset({2, 9, 10, 12}))
    CASTS = (("ann", 6), ("bob", 2), ("cat", 1))
    steps: list[Callable[[hz.TableState, Any], list[hz.Event]]] = [
        *(lambda s, _, n=n: hz.seat(s, n) for n in ("ann", "bob", "cat")),
        *(lambda s, _, n=n, d=d: hz.cast_for_caster(s, n, d) for n, d in CASTS),
        lambda s, _: hz.stake(s, 300),
        lambda s, _: hz.lay(s, "bob", 238),
        lambda s, _: hz.offer_side_bet(s, "bob", offer, True, 237, 142),
        lambda s, funds: hz.cover(s, funds(s.caster) if s.caster else 0, None),
        lambda s, _: hz.throw(s, 6, 6),
    ]  # fmt: skip
    for step in steps:
        club.command("t1", "croupier", step)


def _settlement_rounds(engine: sa.Engine) -> list[tuple[int, int, str | None]]:
    """(round, round of the span holding it, reason) of each settlement."""
    with engine.connect() as conn:
        spans = conn.execute(sa.select(rounds)).all()
        found = conn.execute(sa.select(settlements).order_by(settlements.c.position)).all()
    return [
        (
            row.round,
            next(s.round for s in spans if s.first_position <= row.position <= s.last_position),
            row.reason,
        )
        for row in found
    ]


def test_a_bet_decided_in_the_next_round_is_settled_in_that_round(store: EventStore) -> None:
    """Regression (found by the service's stateful model): a next-total offer that lived
    through a forfeit was recorded as settled in the round it was made in, while the
    rounds put the throw that voided it, and so the voiding, in the next round. A
    settlement is in the round of the event that closed it, as written, as rebuilt, and
    as migration 0011 moves the rows stored before it."""
    from alembic import command

    _forfeited_with_an_offer_open(store)
    expected = [(1, 1, "forfeit"), (1, 1, "forfeit"), (2, 2, "never-accepted")]
    assert _settlement_rounds(store.engine) == expected
    projections.rebuild(store, batch=1)
    assert _settlement_rounds(store.engine) == expected

    with db.serialised(store.engine, db.UPGRADE_LOCK) as conn:
        command.downgrade(db._alembic_config(conn), "0010")
    # As the rows were stored before: the voiding under the round the offer was made in.
    assert [r[0] for r in _settlement_rounds(store.engine)] == [1, 1, 1]
    db.upgrade(store.engine)
    assert _settlement_rounds(store.engine) == expected
