"""The club's evenings over HTTP, on SQLite and PostgreSQL: the setter opens one and
cashes it up, the setter and the auditor read its night report (JSON and PDF); every
hostile request is refused with the rule it broke and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from ledger.store.schema import commands, events, postings
from tests import pdfkit
from tests.api.conftest import Api
from tests.ledger.nightkit import closed_evening


def _written(api: Api) -> tuple[int, ...]:
    with api.book.store.engine.connect() as conn:
        return tuple(
            conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (events, postings, commands)
        )


def _table(api: Api, name: str) -> None:
    api.client().ok("post", "/tables", {"id": name})


def test_the_setter_opens_and_cashes_up_an_evening(api: Api) -> None:
    _table(api, "t1")
    setter = api.client()
    opened = setter.ok("post", "/evenings", {"floats": {"t1": 5000}, "cage": 1000})
    assert opened["evening"] == 1 and [e["type"] for e in opened["events"]] == [
        "EveningOpened",
        "FloatCounted",
        "FloatCounted",
    ]
    assert opened["receipt"]["positions"]
    closed = setter.ok("post", "/evenings/cash-up", {"counts": {"t1": 5010}, "cage": 990})
    assert [
        (line["place"], line["expected"], line["difference"]) for line in closed["cash_up"]
    ] == [
        ("t1", 5000, 10),
        ("cage", 1000, -10),
    ]
    listed = api.client("auditor", "audrey").ok("get", "/evenings")["items"]
    assert [(e["evening"], e["open"], e["difference"]) for e in listed] == [(1, False, 0)]


def _problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    problem: dict[str, Any] = response.get_json()
    assert response.status_code == status, problem
    assert problem["type"] == f"urn:hazard:{kind}", problem
    return problem


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"floats": {"t1": -1}}, "validation"),
        ('{"floats": {"t1": ' + "9" * 5_000 + "}}", "bad-request"),
        ('{"floats": {}, "cage": ' + "9" * 5_000 + "}", "bad-request"),
        ('{"floats": {"t1": 5', "bad-request"),
        ({"floats": {"t1": 1e3}}, "validation"),
        ({"floats": {"t1": "100"}}, "validation"),
        ({"floats": {"t1": 10**12 + 1}}, "validation"),
        ({"floats": {"bad name!": 1}}, "validation"),
        ({"floats": {f"t{n}": 1 for n in range(501)}}, "validation"),
        ({"floats": [1, 2]}, "validation"),
        ({"floats": {}, "cage": True}, "validation"),
        ({"floats": {}, "extra": 1}, "validation"),
        ({"floats": {"nowhere": 1}}, "evening:no-such-table"),
    ],
)
def test_a_bad_opening_is_refused_by_its_rule_and_writes_nothing(
    api: Api, body: dict[str, Any] | str, kind: str
) -> None:
    """A body that is not a mapping is sent as it is: a 5,000-digit number, a cut file."""
    _table(api, "t1")
    before = _written(api)
    setter = api.client()
    if isinstance(body, str):
        sent = setter.post("/evenings", data=body, content_type="application/json")
    else:
        sent = setter.post("/evenings", json=body)
    _problem(sent, 400 if kind == "bad-request" else 422, kind)
    assert _written(api) == before


def test_the_rules_of_evenings_and_who_may_refuse_and_write_nothing(api: Api) -> None:
    _table(api, "t1")
    _table(api, "t2")
    setter = api.client()
    before = _written(api)
    problem = _problem(
        setter.post("/evenings/cash-up", json={"counts": {}, "cage": 0}),
        409,
        "evening:no-evening-open",
    )
    assert problem["rule"] == "no-evening-open" and "no evening is open" in problem["detail"]
    for role, name in (("player", "ann"), ("croupier", "cecil"), ("auditor", "audrey")):
        if role == "player":
            setter.ok("post", "/players", {"name": "ann"})
            before = _written(api)
        who = api.client(role, name)
        _problem(who.post("/evenings", json={"floats": {"t1": 1}}), 403, "forbidden")
    assert _written(api) == before
    setter.ok("post", "/evenings", {"floats": {"t1": 1}})
    before = _written(api)
    _problem(setter.post("/evenings", json={"floats": {}}), 409, "evening:evening-open")
    _problem(
        setter.post("/evenings/cash-up", json={"counts": {"t1": 1, "t2": 1}, "cage": 0}),
        422,
        "evening:table-not-in-evening",
    )
    _problem(
        setter.post("/evenings/cash-up", json={"counts": {}, "cage": 0}),
        422,
        "evening:place-not-counted",
    )
    _problem(setter.post("/evenings/cash-up", json={"counts": {"t1": 1}}), 422, "validation")
    _problem(
        api.client("player", "ann").post(
            "/evenings/cash-up", json={"counts": {"t1": 1}, "cage": 0}
        ),
        403,
        "forbidden",
    )
    assert _written(api) == before


def test_the_night_report_is_the_setter_s_and_the_auditor_s(api: Api) -> None:
    closed_evening(api.book.store)
    night = api.client("auditor", "audrey").ok("get", "/evenings/1")
    assert night["takings"]["total"] == -100 and night["difference"] == -10
    assert night["exposure"]["largest"] == 200 and night["checkpoint"]["size"] >= night["through"]
    api.client().post("/players", json={"name": "zed"})
    for role, name in (("player", "ann"), ("croupier", "cecil")):
        _problem(api.client(role, name).get("/evenings/1"), 403, "forbidden")
        _problem(api.client(role, name).get("/evenings"), 403, "forbidden")
    for number in ("2", "0", "9" * 40):
        _problem(api.client().get(f"/evenings/{number}"), 404, "not-found")


def test_the_night_report_as_a_pdf_over_http(api: Api) -> None:
    closed_evening(api.book.store)
    auditor = api.client("auditor", "audrey")
    night = auditor.ok("get", "/evenings/1")
    sent = auditor.get("/evenings/1.pdf")
    assert sent.status_code == 200, sent.get_data(as_text=True)
    assert sent.headers["Content-Type"] == "application/pdf"
    assert 'filename="night-1.pdf"' in sent.headers["Content-Disposition"]
    texts = pdfkit.page_texts(sent.get_data())
    assert 1 <= len(texts) <= 2
    printed = " ".join(texts)
    assert "-£0.10" in printed  # the cash-up's difference
    assert night["checkpoint"]["note"].splitlines()[2] in printed  # the covering root
    for image in pdfkit.page_images(sent.get_data(), 1.5):  # 20 px: 13 pt, inside the margins
        assert pdfkit.ink(image) > 0.01
        assert pdfkit.ink_at_edges(image, margin=20) == 0
    api.client().post("/players", json={"name": "zed"})
    _problem(api.client("player", "ann").get("/evenings/1.pdf"), 403, "forbidden")
    _problem(api.client().get("/evenings/2.pdf"), 404, "not-found")
