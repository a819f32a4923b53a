"""The read side over HTTP: settlements, rounds and statements of a small game played
through the API, their filters and pages, and who may read what."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from tests.api.conftest import Api
from tests.api.readkit import play, problem, walk


def bets(items: list[dict[str, Any]]) -> list[str]:
    return [f"{s['table']}/{s['bet_id']}" for s in items]


# -- settlements --------------------------------------------------------------------


def test_settlements_of_a_game_with_every_filter(api: Api) -> None:
    bank = play(api)
    every = bank.ok("get", "/settlements")
    assert every["next_after"] is None
    items = every["items"]
    assert bets(items) == ["t1/b7", "t1/b8", "t1/b14", "t1/b15", "t1/b19", "t1/b25", "t2/b7"]
    assert [s["position"] for s in items] == sorted(s["position"] for s in items)
    first = items[0]
    assert first["round"] == 1 and first["kind"] == "caster" and first["outcome"] == "settled"
    assert first["winner"] == "ann" and first["reason"] is None
    assert first["transfers"] == [{"source": "escrow:t1:b7", "target": "player:ann", "amount": 200}]
    assert first["position"] in first["sources"] and len(first["sources"]) >= 2
    refused = items[5]
    assert refused["outcome"] == "voided" and refused["winner"] is None and refused["reason"]
    assert refused["transfers"] == [
        {"source": "escrow:t1:b25", "target": "player:bob", "amount": 10}
    ]

    def only(**query: Any) -> list[str]:
        return bets(bank.ok("get", "/settlements", query_string=query)["items"])

    assert only(table="t2") == ["t2/b7"]
    assert only(table="t1", round=2) == ["t1/b14", "t1/b15", "t1/b19"]
    assert only(bet="b7") == ["t1/b7", "t2/b7"]  # bet ids are a table's own
    assert only(table="t2", bet="b7") == ["t2/b7"]
    # A lay refused had one party, its layer: the caster never took its other side.
    assert only(player="ann") == ["t1/b7", "t1/b8", "t1/b14", "t1/b15"]
    assert only(player="bob") == ["t1/b8", "t1/b15", "t1/b19", "t1/b25", "t2/b7"]
    assert only(player="setter") == ["t1/b7", "t1/b14", "t1/b19", "t2/b7"]
    assert only(player="cat") == []
    assert only(player="bob", table="t1", round=2) == ["t1/b15", "t1/b19"]

    # Times: since inclusive, until exclusive, in any zone, normalised to the stored form.
    at = items[2]["recorded_at"]  # t1's round 2 settles in one append
    assert only(since=at) == ["t1/b14", "t1/b15", "t1/b19", "t1/b25", "t2/b7"]
    assert only(until=at) == ["t1/b7", "t1/b8"]
    assert only(since=at, until=items[5]["recorded_at"]) == ["t1/b14", "t1/b15", "t1/b19"]
    moment = datetime.fromisoformat(at).astimezone(timezone(timedelta(hours=1)))
    assert only(since=moment.isoformat()) == only(since=at)
    assert only(since=at.replace("Z", "+00:00"), player="ann") == ["t1/b14", "t1/b15"]


def test_settlements_page_without_gaps_or_repeats(api: Api) -> None:
    bank = play(api)
    every = bank.ok("get", "/settlements")["items"]
    for limit in (1, 2, 3, 7, 500):
        assert walk(bank, "/settlements", limit) == every
    ann = bank.ok("get", "/settlements", query_string={"player": "ann"})["items"]
    assert walk(bank, "/settlements", 2, player="ann") == ann
    assert len(every) == 7
    page = bank.ok("get", "/settlements", query_string={"limit": 7})
    assert page == {"items": every, "next_after": None}  # full, and the last
    after = bank.ok("get", "/settlements", query_string={"after": every[-1]["position"]})
    assert after == {"items": [], "next_after": None}


BAD_QUERIES = [
    ({"limit": 0}, "limit"),
    ({"limit": 501}, "limit"),
    ({"limit": "x"}, "limit"),
    ({"after": -1}, "after"),
    ({"after": 2**63}, "after"),
    ({"round": 1}, "round"),
    ({"table": "t1", "round": 0}, "round"),
    ({"table": "t 1"}, "table"),
    ({"table": "t\x001"}, "table"),
    ({"player": "a" * 101}, "player"),
    ({"bet": "b" * 40}, "bet"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-11-21T01:18:22"}, "since"),  # no zone: which time?
    ({"until": "0001-01-01T00:00:00+01:00"}, "until"),
    ({"since": "2026-11-21T02:00:00Z", "until": "2026-11-21T01:00:00Z"}, "until"),
    ({"plyer": "ann"}, "plyer"),
]


def test_a_bad_settlement_query_names_the_field(api: Api) -> None:
    bank = api.client()  # one app for every case: each is a request, not a setup
    for query, field in BAD_QUERIES:
        body = problem(bank.get("/settlements", query_string=query), 422)
        assert body["type"] == "urn:hazard:validation", query
        assert field in body["errors"] and body["detail"].startswith(field), (query, body)


def test_settlements_of_what_is_not_there(api: Api) -> None:
    bank = play(api)
    assert "no table" in problem(bank.get("/settlements?table=t9"), 404)["detail"]
    assert "no player" in problem(bank.get("/settlements?player=zed"), 404)["detail"]
    assert bank.ok("get", "/settlements?bet=b999") == {"items": [], "next_after": None}


def test_who_sees_which_settlements(api: Api) -> None:
    bank = play(api)
    every = bank.ok("get", "/settlements")["items"]
    for role in ("croupier", "auditor"):
        assert api.client(role, "someone").ok("get", "/settlements")["items"] == every
    ann = api.client("player", "ann")
    mine = bank.ok("get", "/settlements?player=ann")["items"]
    assert ann.ok("get", "/settlements")["items"] == mine  # forced to her own
    assert ann.ok("get", "/settlements?player=ann")["items"] == mine
    assert ann.ok("get", "/settlements?table=t1&round=2")["items"] == [
        s for s in mine if s["table"] == "t1" and s["round"] == 2
    ]
    problem(ann.get("/settlements?player=bob"), 403)
    problem(ann.get("/settlements?player=setter"), 403)
    problem(api.client(None).get("/settlements"), 401)


# -- rounds -------------------------------------------------------------------------


def test_a_tables_rounds_and_one_round_in_full(api: Api) -> None:
    bank = play(api)
    rounds = bank.ok("get", "/tables/t1/rounds")
    assert rounds["next_after"] is None
    one, two, three = rounds["items"]
    assert [r["round"] for r in (one, two, three)] == [1, 2, 3]
    assert all(r["table"] == "t1" and r["caster"] == "ann" for r in (one, two, three))
    assert (one["main"], one["chance"], one["result"]) == (7, None, "nick")
    assert (two["main"], two["chance"]) == (6, 4) and two["result"] is not None
    assert three["result"] is None and three["ended_at"] is None  # still open
    assert [r["winner"] for r in (one, two, three)] == ["ann", "ann", None]  # the caster
    assert one["last_position"] < two["first_position"]
    assert walk(bank, "/tables/t1/rounds", 1) == rounds["items"]
    assert walk(bank, "/tables/t1/rounds", 3) == rounds["items"]
    assert [r["round"] for r in bank.ok("get", "/tables/t2/rounds")["items"]] == [1]

    detail = bank.ok("get", "/tables/t1/rounds/2")
    assert {k: detail[k] for k in two} == two
    types = [e["type"] for e in detail["events"]]
    assert types.count("DiceThrown") == 3 and "OddsLaid" in types
    versions = [e["version"] for e in detail["events"]]
    assert versions == list(range(two["first_version"], two["last_version"] + 1))
    # Its settlements, which may be as many as its bets, are a listing of their own.
    assert "settlements" not in detail
    settled = bank.ok("get", "/settlements", query_string={"table": "t1", "round": 2})
    assert bets(settled["items"]) == ["t1/b14", "t1/b15", "t1/b19"]
    throw = next(e for e in detail["events"] if e["type"] == "DiceThrown")
    assert throw["payload"] == {"die1": 2, "die2": 2}


def test_a_round_of_more_events_than_a_page_comes_back_in_pages(api: Api) -> None:
    bank = play(api)
    # Round 3 (open: a lay refused) runs on: a main, and a dozen cocked throws.
    bank.ok("post", "/tables/t1/main", {"main": 7})
    for _ in range(12):
        bank.ok("post", "/tables/t1/void-throws", {"reason": "cocked", "off": 0})
    three = bank.ok("get", "/tables/t1/rounds", query_string={"after": 2})["items"][0]
    stored = [
        e
        for e in walk(bank, "/events", 500, stream="table:t1")
        if three["first_version"] <= e["version"] <= three["last_version"]
    ]
    assert len(stored) > 12
    for limit in (1, 4, 5, 500):
        pages, after = [], 0
        while after is not None:
            page = bank.ok(
                "get", "/tables/t1/rounds/3", query_string={"after": after, "limit": limit}
            )
            assert {k: page[k] for k in three} == three
            assert len(page["events"]) <= limit
            pages.append(page["events"])
            after = page["next_after"]
        assert all(len(events) == limit for events in pages[:-1])
        events = [e for events in pages for e in events]
        assert [(e["position"], e["version"], e["type"], e["payload"]) for e in events] == [
            (e["position"], e["version"], e["type"], e["payload"]) for e in stored
        ], limit
    assert len(bank.ok("get", "/tables/t1/rounds/3")["events"]) == len(stored)  # 50 a page
    assert "limit" in problem(bank.get("/tables/t1/rounds/3?limit=501"), 422)["errors"]
    assert "page" in problem(bank.get("/tables/t1/rounds/3?page=2"), 422)["errors"]


def test_rounds_of_what_is_not_there(api: Api) -> None:
    bank = play(api)
    assert "no table" in problem(bank.get("/tables/t9/rounds"), 404)["detail"]
    assert "no table" in problem(bank.get("/tables/t9/rounds/1"), 404)["detail"]
    assert "no round 4" in problem(bank.get("/tables/t1/rounds/4"), 404)["detail"]
    problem(bank.get("/tables/t1/rounds/0"), 404)
    problem(bank.get(f"/tables/t1/rounds/{2**70}"), 404)
    problem(bank.get("/tables/t1/rounds/-1"), 404)
    assert "limit" in problem(bank.get("/tables/t1/rounds?limit=0"), 422)["errors"]
    assert "limit" in problem(bank.get("/tables/t1/rounds/1?limit=0"), 422)["errors"]
    assert "after" in problem(bank.get(f"/tables/t1/rounds?after={2**31}"), 422)["errors"]


def test_a_round_the_setter_wins_names_the_setter(api: Api) -> None:
    bank = play(api)
    bank.ok("post", "/tables/t2/main", {"main": 7})
    bank.ok("post", "/tables/t2/throws", {"die1": 6, "die2": 6})  # twelve to seven: out
    [_, two] = bank.ok("get", "/tables/t2/rounds")["items"]
    assert (two["caster"], two["result"], two["winner"]) == ("bob", "out", "setter")
    assert bank.ok("get", "/tables/t2/rounds/2")["winner"] == "setter"


def test_closing_an_emptied_table_lists_no_round_never_played(api: Api) -> None:
    """Both casters left, so the dice went to nobody: round 3 never had a caster, and
    closing the table then abandons nothing (QA, issue 9)."""
    bank = api.client()
    for name in ("p1", "p2"):
        bank.ok("post", "/players", {"name": name})
    bank.ok("post", "/tables", {"id": "ab4", "ruleset": "english"})
    for name in ("p1", "p2"):
        bank.ok("post", "/tables/ab4/seats", {"player": name})
    bank.ok("post", "/tables/ab4/casts", {"player": "p1", "die": 1})
    bank.ok("post", "/tables/ab4/casts", {"player": "p2", "die": 3})
    bank.ok("post", "/tables/ab4/leave", {"player": "p1"})
    bank.ok("post", "/tables/ab4/leave", {"player": "p2"})
    state = bank.ok("get", "/tables/ab4")
    assert (state["phase"], state["round"], state["caster"]) == ("seating", 3, None)
    closed = bank.ok("post", "/tables/ab4/close", None)
    assert [e["type"] for e in closed["events"]] == ["TableClosed"]
    assert bank.ok("get", "/tables/ab4")["round"] == 3
    rounds = bank.ok("get", "/tables/ab4/rounds")["items"]
    assert [(r["round"], r["result"], r["caster"]) for r in rounds] == [
        (1, "abandoned", "p1"),
        (2, "abandoned", "p2"),
    ]
    problem(bank.get("/tables/ab4/rounds/3"), 404)


def test_everyone_with_a_token_reads_rounds(api: Api) -> None:
    bank = play(api)
    rounds = bank.ok("get", "/tables/t1/rounds")
    detail = bank.ok("get", "/tables/t1/rounds/1")
    for role, name in (("croupier", "cy"), ("auditor", "al"), ("player", "cat")):
        reader = api.client(role, name)
        assert reader.ok("get", "/tables/t1/rounds") == rounds
        assert reader.ok("get", "/tables/t1/rounds/1") == detail
    # A table is public (docs/api.md): cat, who bet nothing, sees round 1's settlements
    # at the table, while /settlements gathers only her own, which are none.
    assert any(e["type"] == "BetSettled" and e["transfers"] for e in detail["events"])
    assert api.client("player", "cat").ok("get", "/settlements")["items"] == []
    problem(api.client(None).get("/tables/t1/rounds"), 401)
    problem(api.client(None).get("/tables/t1/rounds/1"), 401)


# -- a table's open bets -------------------------------------------------------------


def test_a_tables_open_bets_come_in_pages(api: Api) -> None:
    bank = play(api)
    offer = {"player": "bob", "proposition": {"kind": "caster-wins"}, "backs": True}
    for _ in range(14):
        bank.ok("post", "/tables/t1/side-bets", {**offer, "stake": 1, "asks": 1})
    everything = [b.id for b in api.app.extensions["hazard.club"].state("t1").open_bets]
    assert len(everything) == 14
    state = bank.ok("get", "/tables/t1")
    assert [b["id"] for b in state["open_bets"]] == everything  # 50 a page
    assert state["next_after"] is None
    for limit in (1, 5, 13):
        ids, after = [], 0
        while after is not None:
            page = bank.ok("get", "/tables/t1", query_string={"after": after, "limit": limit})
            assert len(page["open_bets"]) <= limit
            assert {k: v for k, v in page.items() if k not in ("open_bets", "next_after")} == {
                k: v for k, v in state.items() if k not in ("open_bets", "next_after")
            }
            ids += [b["id"] for b in page["open_bets"]]
            after = page["next_after"]
        assert ids == everything, limit
    assert "limit" in problem(bank.get("/tables/t1?limit=501"), 422)["errors"]


# -- statements ---------------------------------------------------------------------


def test_a_statement_adds_up_to_the_balance(api: Api) -> None:
    bank = play(api)
    for name in ("ann", "bob", "cat", "setter"):
        statement = bank.ok("get", f"/players/{name}/statement", query_string={"limit": 500})
        assert statement["player"] == name and statement["next_after"] is None
        lines = statement["items"]
        balance = bank.ok("get", f"/players/{name}/balance")["balance"]
        assert sum(line["amount"] for line in lines) == balance
        account = "setter" if name == "setter" else f"player:{name}"
        assert statement["account"] == account
        assert all(line["account"] == account for line in lines)
        assert [line["position"] for line in lines] == sorted(line["position"] for line in lines)
        assert all(line["event"]["position"] == line["position"] for line in lines)
    ann = bank.ok("get", "/players/ann/statement")["items"]
    deposit = ann[0]
    assert (deposit["amount"], deposit["counterparty"]) == (1000, "cash")
    assert deposit["event"]["type"] == "Deposited"
    assert deposit["event"]["stream"] == "account:player:ann"
    assert deposit["event"]["payload"]["amount"] == 1000
    assert deposit["event"]["actor"] == api.actor()
    stake = ann[1]
    assert (stake["amount"], stake["counterparty"]) == (-100, "escrow:t1:b7")
    assert stake["event"]["type"] == "CasterStaked" and stake["event"]["stream"] == "table:t1"
    won = next(line for line in ann if line["event"]["type"] == "BetSettled")
    assert (won["amount"], won["counterparty"]) == (200, "escrow:t1:b7")
    cat = bank.ok("get", "/players/cat/statement")["items"]
    assert [line["event"]["type"] for line in cat] == ["Deposited"]


def test_a_statement_pages_without_gaps_or_repeats(api: Api) -> None:
    bank = play(api)
    for name in ("ann", "setter"):
        every = bank.ok("get", f"/players/{name}/statement", query_string={"limit": 500})
        for limit in (1, 2, 5):
            lines = walk(bank, f"/players/{name}/statement", limit)
            assert lines == every["items"]
            assert len({line["posting"] for line in lines}) == len(lines)


def test_a_statement_page_keeps_an_events_postings_together(api: Api) -> None:
    import sqlalchemy as sa

    from ledger.store.schema import postings

    bank = play(api)
    first = bank.ok("get", "/players/cat/statement")["items"][0]["position"]
    # Two more postings to cat at the event of her deposit: one event, three postings.
    with api.book.store.engine.begin() as conn:
        conn.execute(
            sa.insert(postings),
            [
                {
                    "position": first,
                    "account": "player:cat",
                    "amount": a,
                    "counterparty": "x",
                    "balance": 1000 + running,  # after her deposit of 1000
                }
                for a, running in ((5, 5), (-5, 0))
            ],
        )
    page = bank.ok("get", "/players/cat/statement?limit=1")
    assert [line["amount"] for line in page["items"]] == [1000, 5, -5]
    assert page["next_after"] is None  # cat has no other event
    rest = bank.ok("get", f"/players/cat/statement?limit=1&after={first}")
    assert rest == {"player": "cat", "account": "player:cat", "items": [], "next_after": None}


def test_who_reads_which_statement(api: Api) -> None:
    bank = play(api)
    mine = bank.ok("get", "/players/ann/statement")
    assert api.client("player", "ann").ok("get", "/players/ann/statement") == mine
    assert api.client("auditor", "al").ok("get", "/players/ann/statement") == mine
    assert api.client("auditor", "al").ok("get", "/players/setter/statement")["items"]
    problem(api.client("player", "ann").get("/players/bob/statement"), 403)
    problem(api.client("player", "ann").get("/players/setter/statement"), 403)
    problem(api.client("croupier", "cy").get("/players/ann/statement"), 403)
    problem(api.client(None).get("/players/ann/statement"), 401)
    assert "no player" in problem(bank.get("/players/zed/statement"), 404)["detail"]
    assert "limit" in problem(bank.get("/players/ann/statement?limit=501"), 422)["errors"]
    assert "page" in problem(bank.get("/players/ann/statement?page=2"), 422)["errors"]


def test_names_that_cannot_exist_are_not_found(api: Api) -> None:
    # Never sent to the database: PostgreSQL refuses a NUL in a parameter.
    bank = api.client()
    for path in ("/tables/%00/rounds", "/tables/%00/rounds/1", "/players/%00/statement"):
        problem(bank.get(path), 404)
    assert "table" in problem(bank.get("/settlements?table=%00"), 422)["errors"]
    assert "player" in problem(bank.get("/settlements?player=%00"), 422)["errors"]
