"""The console's evenings (ledger.console.evenings): the setter opens an evening and
cashes it up from forms, in the club's money; the setter and the auditor read the night
report with its charts, and its PDF; a refused form says its rule and writes nothing.
Through Flask's test client on SQLite and PostgreSQL, and in chromium for the night
report's screenshots at 1280 and 390 px (build/screenshots/, copied to
docs/screenshots/ for docs/setter.md)."""

from __future__ import annotations

import html
from typing import Any

from ledger.commands import Caller, Role, tables
from ledger.house import House
from ledger.service import Club
from ledger.web import nightpage
from tests import pdfkit
from tests.api.conftest import Api
from tests.console.conftest import SHOTS, Served, sign_in
from tests.console.officekit import console, form_of, writes
from tests.ledger.clubkit import CROUPIER, a_club
from tests.ledger.nightkit import closed_evening

ANN = Caller(Role.PLAYER, "ann")
SHOTS_PDF = SHOTS.parent / "night-report"


def _nick(club: Club) -> None:
    """ann stakes 1.00 against the setter and nicks it: the setter 1.00 down at t1."""
    tables.stake(club, "t1", ANN, 100)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 3, 4)


def _text(answer: Any) -> str:
    return html.unescape(answer.get_data(as_text=True))


def test_the_setter_opens_and_cashes_up_from_the_console(api: Api) -> None:
    club = a_club(api.book.store)
    setter = console(api, "setter", "bank")
    page = _text(setter.get("/console/evenings"))
    assert "Open an evening" in page and 'name="float:t1"' in page
    sent = {**form_of(page, "/console/evenings/open"), "float:t1": "50.00", "float-cage": "10"}
    assert setter.post("/console/evenings/open", data=sent).status_code == 302
    page = _text(setter.get("/console/evenings"))
    assert "Opened evening 1." in page and "Cash up evening 1" in page
    _nick(club)
    sent = {**form_of(page, "/console/evenings/cash-up"), "count:t1": "48.90", "count-cage": "10"}
    answer = setter.post("/console/evenings/cash-up", data=sent)
    assert answer.status_code == 302 and answer.location.endswith("/console/evenings/1")
    night = _text(setter.get("/console/evenings/1"))
    for said in ("Cashed up evening 1: -£0.10 against the books.", "£49.00", "-£0.10", "-£1.00"):
        assert said in night, said
    assert 'id="night-cash-chart-title"' in night and 'id="night-tables-chart-title"' in night
    auditor = console(api, "auditor", "audrey")
    assert "-£0.10" in _text(auditor.get("/console/evenings/1"))
    assert "Open an evening" not in _text(auditor.get("/console/evenings"))
    pdf = auditor.get("/console/evenings/1/report.pdf")
    assert pdf.status_code == 200 and pdf.mimetype == "application/pdf"
    assert "-£0.10" in " ".join(pdfkit.page_texts(pdf.data))


def test_a_refused_form_says_its_rule_and_writes_nothing(api: Api) -> None:
    a_club(api.book.store)
    tables.open_table(Club(api.book), "t2", CROUPIER)
    setter = console(api, "setter", "bank")
    page = _text(setter.get("/console/evenings"))
    before = writes(api)
    for typed, said in (
        ("abc", "Refused: table t1:"),
        ("-5", "Refused: table t1:"),
        ("9" * 5000, "Refused: table t1:"),
    ):
        sent = {**form_of(page, "/console/evenings/open"), "float:t1": typed}
        answer = setter.post("/console/evenings/open", data=sent)
        assert answer.status_code == 422 and said in _text(answer), typed[:10]
    sent = {**form_of(page, "/console/evenings/open"), "float:t1": "100000000000"}
    answer = setter.post("/console/evenings/open", data=sent)
    assert answer.status_code == 422 and "Refused (bad-count)" in _text(answer)
    assert writes(api) == before
    sent = {**form_of(page, "/console/evenings/open"), "float:t1": "5"}
    assert setter.post("/console/evenings/open", data=sent).status_code == 302
    page = _text(setter.get("/console/evenings"))
    before = writes(api)
    sent = {**form_of(page, "/console/evenings/cash-up"), "count:t1": "5", "count:t2": "1"}
    answer = setter.post("/console/evenings/cash-up", data={**sent, "count-cage": "0"})
    assert answer.status_code == 422
    assert "Refused (table-not-in-evening): table t2 is not in evening 1" in _text(answer)
    answer = setter.post("/console/evenings/open", data=form_of(page, "/console/evenings/cash-up"))
    assert answer.status_code == 409 and "Refused (evening-open)" in _text(answer)
    for role, name in (("player", "ann"), ("croupier", "cecil")):
        other = console(api, role, name)
        assert other.get("/console/evenings").status_code == 403
        assert other.get("/console/evenings/1").status_code == 403
        refused = other.post("/console/evenings/cash-up", data={**sent, "count-cage": "0"})
        assert refused.status_code in (400, 403)
    assert setter.get("/console/evenings/2").status_code == 404
    assert writes(api) == before


def test_the_night_report_at_a_desk_and_on_a_phone(served: Served, browser: Any) -> None:
    """The screenshots docs/setter.md shows, and no sideways scroll at 390 px."""
    club = a_club(served.book.store)
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        tab = context.new_page()
        tab.set_default_timeout(10_000)
        try:
            sign_in(tab, served.url, served.token("setter", "bank"))
            if width == 1280:
                tab.goto(served.url + "/console/evenings")
                tab.get_by_label("Table t1").fill("50.00")
                tab.get_by_label("The cage").fill("10.00")
                tab.get_by_role("button", name="Open the evening").click()
                tab.get_by_text("Opened evening 1.").wait_for()
                _nick(club)
                tab.goto(served.url + "/console/evenings")
                tab.get_by_label("Table t1 (float £50.00)").fill("48.90")
                tab.get_by_label("The cage (float £10.00)").fill("10.00")
                tab.get_by_role("button", name="Record the cash-up and close the evening").click()
                tab.get_by_role("heading", name="Night report: evening 1").wait_for()
            else:
                tab.goto(served.url + "/console/evenings/1")
            assert tab.evaluate("document.documentElement.scrollWidth") <= width
            assert tab.get_by_role("table", name="The cash-up: -£0.10 in all").is_visible()
            SHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(SHOTS / f"setter-night-report-{width}.png"), full_page=True)
        finally:
            context.close()


def test_the_night_report_prints_on_one_or_two_pages_with_its_checkpoint(api: Api) -> None:
    """The PDF rendered to PNG (build/night-report/, to look at): one or two pages, the
    report's words and figures in the club's money, the covering checkpoint's signed
    note, and nothing off the paper."""
    closed_evening(api.book.store)
    answer = console(api, "setter", "bank").get("/console/evenings/1/report.pdf")
    assert answer.status_code == 200 and answer.mimetype == "application/pdf"
    pdf = answer.data
    night = api.client().ok("get", "/evenings/1")
    texts = pdfkit.page_texts(pdf)
    assert 1 <= len(texts) <= 2
    text = " ".join(texts)
    for said in (
        "Night report: evening 1",
        "Total -£1.00",  # the setter's takings
        "£49.00",  # t1's expected: its float, £50.00, less the £1.00 it lost
        "£48.90",  # counted
        "-£0.10",  # the difference
        "£2.00",  # the largest exposure
        "1 voided",  # the dispute's resolution
    ):
        assert said in text, said
    assert f"size {night['checkpoint']['size']}" in text
    for line in night["checkpoint"]["note"].splitlines():
        assert line.strip()[:40] in text, line  # the signed note, printed whole
    SHOTS_PDF.mkdir(parents=True, exist_ok=True)
    where = api.book.store.engine.dialect.name  # each database's own files (pytest -n)
    pages = pdfkit.save_pngs(pdf, SHOTS_PDF, f"night-{where}")
    for image, path in zip(pdfkit.page_images(pdf, 1.5), pages, strict=True):
        assert path.exists()
        assert pdfkit.ink(image) > 0.01
        assert pdfkit.ink_at_edges(image, margin=20) == 0


def test_a_busy_evening_still_prints_on_two_pages(api: Api) -> None:
    """Sixty tables and two hundred players with takings: the paper lists the largest
    and sums the others in a line; the screen and the API list every one."""
    closed_evening(api.book.store)
    night = api.client().ok("get", "/evenings/1")
    night["takings"]["tables"] = [{"table": f"t{n}", "net": n * 100} for n in range(60)]
    night["takings"]["players"] = [{"player": f"p{n}", "net": -n} for n in range(200)]
    [play] = night["play"]["tables"]
    night["play"]["tables"] = [{**play, "table": f"t{n}", "rounds": n} for n in range(60)]
    cage = night["cash_up"][-1]
    night["cash_up"] = [
        {"place": f"t{n}", "table": f"t{n}", "float": 5000, "counted": 5000 - n,
         "expected": 5000, "difference": -n}
        for n in range(60)
    ] + [cage]  # fmt: skip
    pdf = nightpage.pdf(night, House())
    texts = pdfkit.page_texts(pdf)
    assert 1 <= len(texts) <= 2
    text = " ".join(texts)
    assert "51 others" in text and "191 others" in text and "t59" in text and "p199" in text
    assert "52 others" in text and "-£13.26" in text  # the cash-up's t0..t51, their -1,326
    SHOTS_PDF.mkdir(parents=True, exist_ok=True)
    pdfkit.save_pngs(pdf, SHOTS_PDF, f"busy-night-{api.book.store.engine.dialect.name}")
    for image in pdfkit.page_images(pdf, 1.5):
        assert pdfkit.ink_at_edges(image, margin=20) == 0
