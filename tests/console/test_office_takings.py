"""The setter's exposure and takings per table, per evening and per player, as the back
office shows them (ledger.books.takings, ledger.console.office), in the club's currency
and on the club's calendar: an evening is the club's calendar day in its time zone
until the setter opens and closes evenings of their own.

The club is in London (BST, UTC+1, in July). Every figure is worked by hand:

- t1, ann casts: 1 Jul 19:00 UTC (20:00 BST) ann stakes 100 against the setter, calls 7
  and throws 3+4, a nick: the setter's 100 goes to ann (the setter -100). At 23:30 UTC,
  already 00:30 on 2 Jul in London, ann stakes 50, calls 7 and throws 1+1, out: the
  setter takes her 50 (+50).
- t2, bob casts: 2 Jul 20:00 UTC bob stakes 40, calls 7 and throws 1+1: the setter +40.
  Then bob stakes 30, and the setter's 30 is out against it: exposure 30 to bob, -30.

So 1 Jul: -100 (t1, ann). 2 Jul: t1 +50 (ann), t2 +40 - 30 = +10 (bob); +60 in all.
Over both: t1 -50, t2 +10; ann -50, bob +10. By UTC days the 23:30 round would fall on
1 Jul (-50 then), which is not the club's evening.
"""

from __future__ import annotations

import html
import re
from typing import Any

import sqlalchemy as sa

from ledger.books import takings
from ledger.house import House
from tests.api.conftest import Api
from tests.api.gamekit import Evening, bet_id
from tests.console.officekit import console

LONDON = House("GBP", 2, "Europe/London")


def _at(api: Api, moment: str) -> None:
    """Every write from now on recorded at `moment` (UTC), as the store's clock reads."""
    api.book.store.clock = lambda: moment


def _evenings(api: Api) -> None:
    api.app.extensions["hazard.house"] = LONDON
    _at(api, "2026-07-01T18:00:00.000000Z")
    night = Evening(api, "t1", deposits={"ann": 1000, "bob": 1000, "setter": 10_000})
    night.bank.ok("post", "/tables", {"id": "t1"})
    night.bank.ok("post", "/tables", {"id": "t2"})
    night.do(night.croupier, "seats", {"player": "ann"})
    night.do(night.croupier, "casts", {"player": "ann", "die": 1})
    _at(api, "2026-07-01T19:00:00.000000Z")
    night.do("ann", "stakes", {"amount": 100})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 3, "die2": 4})
    _at(api, "2026-07-01T23:30:00.000000Z")
    night.do("ann", "stakes", {"amount": 50})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 1, "die2": 1})
    _at(api, "2026-07-02T20:00:00.000000Z")
    night.table = "t2"
    night.do(night.croupier, "seats", {"player": "bob"})
    night.do(night.croupier, "casts", {"player": "bob", "die": 1})
    night.do("bob", "stakes", {"amount": 40})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 1, "die2": 1})
    night.do("bob", "stakes", {"amount": 30})


def test_the_latest_evenings_are_the_club_s_days_in_its_zone(api: Api) -> None:
    _evenings(api)
    with api.book.store.engine.connect() as conn:
        found = takings.latest(conn, LONDON.zone, 10)
        assert [e.key for e in found] == ["2026-07-01", "2026-07-02"]
        nets = [takings.nets(conn, e) for e in found]
        assert [e.key for e in takings.latest(conn, LONDON.zone, 1)] == ["2026-07-02"]
    assert nets[0] == {("t1", "ann"): -100}
    assert nets[1] == {("t1", "ann"): 50, ("t2", "bob"): 10}
    # By UTC days the 23:30 round falls on 1 Jul: the club's zone is what decides.
    with api.book.store.engine.connect() as conn:
        utc = takings.latest(conn, "UTC", 10)
        assert takings.nets(conn, utc[0]) == {("t1", "ann"): -50}


def test_exposure_per_table_and_player_is_the_setter_s_stake_out(api: Api) -> None:
    """Read from the escrows that hold money: what each table's state says the setter
    has at stake (engine TableState.exposure), by the player against it."""
    _evenings(api)
    club = api.app.extensions["hazard.club"]
    with api.book.store.engine.connect() as conn:
        exposed, open_bets = takings.exposure(conn)
    assert exposed == {("t2", "bob"): 30}
    assert open_bets == {"t2": 1}
    for table in ("t1", "t2"):
        held = sum(n for (t, _), n in exposed.items() if t == table)
        assert held == club.state(table).exposure()


def test_the_office_shows_takings_per_evening_table_and_player(api: Api) -> None:
    _evenings(api)
    setter = console(api, "setter", "bank")
    page = setter.get("/console/office").get_data(as_text=True)
    evenings = _rows(page, "per-evening")
    assert evenings == [["Wed 1 Jul 2026", "-£1.00"], ["Thu 2 Jul 2026", "+£0.60"]]
    # By table and player: the newest evening, Thursday (ann's 50 lost at 00:30 London).
    assert "Per table: Thu 2 Jul 2026" in page
    tables = _rows(page, "per-table")
    assert tables == [["t1", "0", "£0.00", "+£0.50"], ["t2", "1", "£0.30", "+£0.10"]]
    players = _rows(page, "per-player")
    assert players == [["ann", "£0.00", "+£0.50"], ["bob", "£0.30", "+£0.10"]]
    # The per-evening chart: a bar each, and a scale in pounds.
    chart = page[page.index('id="evenings-chart-title"') :]
    chart = chart[: chart.index("</svg>")]
    assert chart.count('class="bar') == 2
    assert re.findall(r'class="tick[^"]*"[^>]*>([^<]+)<', chart)[:1] == ["-£1.00"]
    assert "+£0.60" in page and "GBP" in page
    # Each evening listed is a link to it by table and player: Wednesday's.
    wednesday = _link(page, "Wed 1 Jul 2026")
    assert "evening=2026-07-01" in wednesday
    page = setter.get(wednesday).get_data(as_text=True)
    assert "Per table: Wed 1 Jul 2026" in page
    assert _rows(page, "per-table") == [
        ["t1", "0", "£0.00", "-£1.00"],
        ["t2", "1", "£0.30", "£0.00"],
    ]
    # Both evenings together, as one link asks.
    together = setter.get(_link(page, "The 2 evenings listed together")).get_data(as_text=True)
    assert _rows(together, "per-table") == [
        ["t1", "0", "£0.00", "-£0.50"],
        ["t2", "1", "£0.30", "+£0.10"],
    ]
    assert _rows(together, "per-player") == [["ann", "£0.00", "-£0.50"], ["bob", "£0.30", "+£0.10"]]


def test_the_office_lists_evenings_a_page_at_a_time(api: Api) -> None:
    """The evenings listed are a page of the latest (a week's, unless asked), and the
    older go on a page after; what is drawn does not grow with the log."""
    _evenings(api)
    setter = console(api, "setter", "bank")
    one = setter.get("/console/office?evenings=1").get_data(as_text=True)
    assert _rows(one, "per-evening") == [["Thu 2 Jul 2026", "+£0.60"]]
    assert "The latest evenings" not in one
    older = setter.get(_link(one, "Older evenings")).get_data(as_text=True)
    assert _rows(older, "per-evening") == [["Wed 1 Jul 2026", "-£1.00"]]
    assert "Per table: Wed 1 Jul 2026" in older
    assert "Older evenings" not in older  # the first evening there is
    latest = setter.get(_link(older, "The latest evenings")).get_data(as_text=True)
    assert _rows(latest, "per-evening") == [["Thu 2 Jul 2026", "+£0.60"]]
    for bad in ("2026-02-30", "yesterday", "2026-7-1"):
        for name in ("before", "evening"):
            answer = setter.get(f"/console/office?{name}={bad}")
            assert answer.status_code == 400, (name, bad, answer.status_code)
            assert name in answer.get_data(as_text=True)


def _link(page: str, text: str) -> str:
    """The address of the link whose text is `text`."""
    found = re.search(r'<a href="([^"]+)"[^>]*>' + re.escape(text) + "</a>", page)
    assert found, text
    return html.unescape(found.group(1))


def test_the_office_refuses_a_count_of_evenings_it_cannot_show(api: Api) -> None:
    setter = console(api, "setter", "bank")
    for bad in ("0", "-1", "x", "9" * 50, "367"):
        answer = setter.get(f"/console/office?evenings={bad}")
        assert answer.status_code == 400, (bad, answer.status_code)
        assert "evenings" in answer.get_data(as_text=True)


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The cells of each body row of the table with id `table_id`, as text."""
    start = page.index(f'id="{table_id}"')
    body = page[page.index("<tbody", start) : page.index("</tbody>", start)]
    cells = r"<t[hd][^>]*>(.*?)</t[hd]>"
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(cells, row, re.S)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def _the_setters_offer_to_ann(api: Api) -> tuple[Evening, str]:
    """ann, the caster at t1 with a main of 7, and the setter's offer to her alone of 20
    against her 50 that the next throw is 8: the evening, and the offer's bet."""
    night = Evening(api, "t1", deposits={"ann": 1000, "setter": 10_000})
    night.bank.ok("post", "/tables", {"id": "t1"})
    night.do(night.croupier, "seats", {"player": "ann"})
    night.do(night.croupier, "casts", {"player": "ann", "die": 1})
    night.do(night.croupier, "main", {"main": 7})
    offer = {
        "player": "setter",
        "proposition": {"kind": "next-total", "totals": [8]},
        "backs": True,
        "stake": 20,
        "asks": 50,
        "to": "ann",
    }
    side = bet_id(night.do(night.bank, "side-bets", offer), "SideBetOffered")
    return night, side


def test_a_side_bet_the_setter_offered_is_the_taker_s(api: Api) -> None:
    """The setter offers ann 20 against her 50 that the next throw is 8, and she takes it
    later (her stake goes in at another event than the setter's); 4+4 is thrown: the
    setter wins her 50. Its takings, +50, are against ann."""
    api.app.extensions["hazard.house"] = LONDON
    night, side = _the_setters_offer_to_ann(api)
    with api.book.store.engine.connect() as conn:
        [evening] = takings.latest(conn, LONDON.zone, 5)
        assert takings.nets(conn, evening) == {("t1", None): -20}  # no taker yet
        assert takings.exposure(conn)[0] == {("t1", None): 20}
    night.do("ann", "side-bets/accept", {"player": "ann", "bet": side})
    night.do(night.croupier, "throws", {"die1": 4, "die2": 4})
    with api.book.store.engine.connect() as conn:
        [evening] = takings.latest(conn, LONDON.zone, 5)
        assert takings.nets(conn, evening) == {("t1", "ann"): 50}
        assert takings.exposure(conn)[0] == {}


def test_an_evening_s_takings_are_one_read_along_the_setter_s_postings(api: Api) -> None:
    """The evening's postings of the setter's by its (account, position) key, each
    escrow's taker by one probe of the escrow's: no scan of the postings or the events,
    one statement however many bets the evening had."""
    from tests.ledger.plankit import capture, full_scan_or_sort, plan

    _evenings(api)
    engine = api.book.store.engine
    with engine.connect() as conn:
        [evening] = takings.latest(conn, LONDON.zone, 1)
    ran = capture(engine)
    with engine.connect() as conn:
        nets = takings.nets(conn, evening)
        asked = list(ran)
        found = [plan(conn, statement, params) for statement, params in asked]
    assert nets == {("t1", "ann"): 50, ("t2", "bob"): 10}
    read = [p for (statement, _), p in zip(asked, found, strict=True) if "postings" in statement]
    assert len(read) == 1, found  # and a seek of the newest position: is it closed?
    scans = [line for p in found for line in full_scan_or_sort(p)]
    assert all("B-TREE FOR GROUP BY" in line for line in scans), found
    assert "SCAN postings" not in read[0], found


def test_a_closed_evening_is_kept_and_read_by_a_probe(api: Api) -> None:
    """1 Jul is closed once 2 Jul has events: asked again, its bounds and takings are
    the ones worked out before, each checked by one probe of the event its span ends at,
    and the same as a fresh engine on the same database works out."""
    from tests.ledger.plankit import capture

    _evenings(api)
    engine = api.book.store.engine

    def fortnight(conn: Any) -> list[tuple[str, dict[Any, int]]]:
        return [(e.key, takings.nets(conn, e)) for e in takings.latest(conn, LONDON.zone, 14)]

    with engine.connect() as conn:
        first = fortnight(conn)
    assert first == [
        ("2026-07-01", {("t1", "ann"): -100}),
        ("2026-07-02", {("t1", "ann"): 50, ("t2", "bob"): 10}),
    ]
    ran = capture(engine)
    with engine.connect() as conn:
        assert fortnight(conn) == first
    kept = [s for s, _ in ran if "sum(postings.amount)" in s]
    assert len(kept) == 1, ran  # 2 Jul's, still open, alone worked out again
    fresh = sa.create_engine(engine.url)
    try:
        with fresh.connect() as conn:
            assert fortnight(conn) == first
    finally:
        fresh.dispose()


def test_an_offer_taken_the_next_evening_is_the_taker_s_on_both(api: Api) -> None:
    """The setter's offer of 20 on 1 Jul, waiting for a taker when 1 Jul is first
    shown (so not kept), taken by ann on 2 Jul: 1 Jul's -20 is then against ann."""
    api.app.extensions["hazard.house"] = LONDON
    _at(api, "2026-07-01T19:00:00.000000Z")
    night, side = _the_setters_offer_to_ann(api)
    _at(api, "2026-07-02T19:00:00.000000Z")
    night.bank.ok("post", "/tables", {"id": "t9"})  # 1 Jul is closed
    engine = api.book.store.engine
    with engine.connect() as conn:
        [evening] = takings.latest(conn, LONDON.zone, 14)
        assert takings.nets(conn, evening) == {("t1", None): -20}
    night.do("ann", "side-bets/accept", {"player": "ann", "bet": side})
    with engine.connect() as conn:
        # The setter's money moved on 1 Jul alone: ann's stake went in on 2 Jul.
        [day1] = takings.latest(conn, LONDON.zone, 14)
        assert day1 == evening and takings.nets(conn, day1) == {("t1", "ann"): -20}
