"""Every console page and every console form, found rather than listed, for the checks
that hold for all of them (test_axe.py, test_widths.py, test_every_form.py).

The pages are the console blueprint's GET routes: each is asked for as each role, with
the ids its URL needs (a table, a round, a dispute, a receipt's position) made by a small
evening played first over the API (`play`), and those that answer a page (an HTML
document) are that role's pages. The forms are scraped from those pages: every
`<form method="post">`, with its fields as the page drew them. So a page or a form the
console gains is checked without a line here; a route whose URL names an id this module
does not make fails loudly (add it to `ids`), never quietly unchecked.

The evening, every figure worked by hand (English rules: 7 or 11 nicks a main of 7; 2,
3 or 12 throws out; else the chance is set). Deposits ann, bob, cat, dan 1000 each; the
setter 10,000.

| stage   | what is played                                                            |
|---------|---------------------------------------------------------------------------|
| opened  | t1 opened; no one seated                                                  |
| betting | ann, bob, cat, dan seated; ann casts first. Round 1: ann stakes 100, main |
|         | 7, 5+6 nicks (ann 1100). Round 2: ann stakes 50, main 7, 1+1 out (ann     |
|         | 1050). ann disputes round 1. Round 3: ann stakes 100, bob lays 50 (not    |
|         | yet covered), main 7, cat offers a side bet (caster wins, 20 asks 20).    |
|         | t2 (server dice) opened, ann seated, the caster, main 7: her throw to send.|
| chance  | ann covers bob's lay; 2+2 sets the chance 4: odds may be laid.            |
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.routing import Rule

from ledger.store.schema import events
from tests.api.conftest import Api
from tests.api.gamekit import Evening

BLUEPRINT = "console."
ROLES = ("setter", "croupier", "auditor", "player")
PEOPLE = {"setter": "boss", "croupier": "carla", "auditor": "abel", "player": "ann"}
"""Who signs in as each role to look at the pages (the evening's own tokens are others':
a name is one live token's within its role). The player is ann: she has money in every
round, a statement, receipts and a dispute."""

EXTRA_QUERIES = {
    "console.audit": ["after=0"],
    "console.verify": ["after=0"],
    "console.fairness_report": ["table=t1"],
}
"""Pages that draw more with a query than without (the verify page's report, a table's
dice report): each is checked both ways."""

ERROR_URLS = ["/console/tables/no-such-table", "/console/office"]
"""Pages that refuse: a table that does not exist (404), and the office, which only the
setter may open (403 for the others)."""


# -- the evening ------------------------------------------------------------------------


@dataclass
class Played:
    """The evening, and the ids the console's URLs need."""

    night: Evening
    ids: dict[str, Any] = field(default_factory=dict)


def play(api: Api) -> Iterator[tuple[str, Played]]:
    """Play the module docstring's evening, yielding after each stage its name and what
    was played so far; the ids grow as the evening makes them."""
    night = Evening(api, "t1", {"ann": 1000, "bob": 1000, "cat": 1000, "dan": 1000,
                                "setter": 10_000})  # fmt: skip
    played = Played(night)
    night.bank.ok("post", "/tables", {"id": "t1", "ruleset": "english"})
    played.ids.update(table="t1", name="ann", what="deposit", position=_first_line(api))
    yield "opened", played  # no evening open yet: the form that opens one

    night.bank.ok("post", "/evenings", {"floats": {"t1": 5000}, "cage": 1000})
    played.ids.update(evening=1)  # open from here on: its night report, its cash-up form

    for name in ("ann", "bob", "cat", "dan"):
        night.do(night.croupier, "seats", {"player": name})
    for name, die in (("ann", 1), ("bob", 2), ("cat", 3), ("dan", 4)):
        night.do(night.croupier, "casts", {"player": name, "die": die})
    for stake, dice in ((100, (5, 6)), (50, (1, 1))):
        night.do("ann", "stakes", {"amount": stake})
        night.do(night.croupier, "main", {"main": 7})
        night.do(night.croupier, "throws", {"die1": dice[0], "die2": dice[1]})
    assert night.balance("ann") == 1050, "round 1 paid ann 100, round 2 took 50"
    opened = night.players["ann"].ok(
        "post", "/tables/t1/rounds/1/disputes", {"claim": "the 5 was a 4", "dice": [4, 6]}
    )
    # Round 2 for the player's own dispute form (ann had 50 on it); round 1's is open.
    played.ids.update(round=1, number=2, dispute_id=opened["dispute_id"])
    night.do("ann", "stakes", {"amount": 100})
    night.do("bob", "lays", {"player": "bob", "amount": 50})
    night.do(night.croupier, "main", {"main": 7})
    side = {"player": "cat", "proposition": {"kind": "caster-wins"}, "backs": True,
            "stake": 20, "asks": 20}  # fmt: skip
    night.do("cat", "side-bets", side)
    night.bank.ok("post", "/tables", {"id": "t2", "ruleset": "english", "dice": "server"})
    night.croupier.ok("post", "/tables/t2/seats", {"player": "ann"})
    night.croupier.ok("post", "/tables/t2/casts", {"player": "ann", "die": 4})
    night.croupier.ok("post", "/tables/t2/main", {"main": 7})
    yield "betting", played

    [laid] = [b["id"] for b in night.open_bets() if b["kind"] == "laid"]
    night.do("ann", "covers", {"bets": [laid]})
    night.do(night.croupier, "throws", {"die1": 2, "die2": 2})
    assert night.state()["chance"] == 4
    yield "chance", played


STAGES = ("opened", "betting", "chance")


def played_to(api: Api, stage: str) -> Played:
    """The evening played up to and including `stage`."""
    for name, played in play(api):
        if name == stage:
            return played
    raise AssertionError(f"the evening has no stage {stage!r}")


def _first_line(api: Api) -> int:
    """The position of ann's first statement line (her deposit): a receipt of her own."""
    query = sa.select(sa.func.min(events.c.position)).where(events.c.stream == "account:player:ann")
    with api.book.store.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


# -- signing in -------------------------------------------------------------------------


def csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None, page[:300]
    return html.unescape(found.group(1))


def token(api: Api, role: str) -> str:
    """The token of `role`'s person (PEOPLE): the evening's own for the player, ann."""
    held = api.client(role, PEOPLE[role]).token
    assert held is not None
    return held


def signed_in(app: Flask, token: str | None) -> FlaskClient:
    """A test client signed in with `token` (or no one, with None)."""
    client = app.test_client()
    if token is not None:
        page = client.get("/").get_data(as_text=True)
        answer = client.post("/console/sign-in", data={"csrf_token": csrf(page), "token": token})
        assert answer.status_code == 302, answer.status_code
    return client


# -- the pages --------------------------------------------------------------------------


def routes(app: Flask, method: str) -> list[Rule]:
    """The console blueprint's routes that answer `method` (its static files aside)."""
    return [
        rule
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith(BLUEPRINT)
        and rule.endpoint != "console.static"
        and method in (rule.methods or ())
    ]


def url_of(rule: Rule, ids: dict[str, Any]) -> str:
    missing = sorted(set(rule.arguments) - set(ids))
    assert not missing, (
        f"{rule.rule} ({rule.endpoint}) needs {missing}: make one in tests/console/pagekit.py's "
        "evening and add it to its ids"
    )
    return str(rule.build({name: ids[name] for name in rule.arguments}, append_unknown=False)[1])


@dataclass(frozen=True)
class Page:
    endpoint: str
    url: str
    status: int


def is_document(answer: Any) -> bool:
    return bool(
        answer.mimetype == "text/html" and "<html" in answer.get_data(as_text=True)[:500].lower()
    )


def pages(app: Flask, ids: dict[str, Any], client: FlaskClient, early: bool = False) -> list[Page]:
    """The pages `client` reaches: every console GET route (and its EXTRA_QUERIES), and
    ERROR_URLS, whose answer is an HTML document. Fragments (a table's panel), JSON (the
    verify page's steps), downloads and redirects are not pages. One error page of each
    status is kept: they are one template. `early` in the evening, a page whose ids are
    not made yet (a dispute's before the first) is left for later."""
    found: list[Page] = []
    errors: set[int] = set()
    ready = [r for r in routes(app, "GET") if not early or set(r.arguments) <= set(ids)]
    urls = [(rule.endpoint, url_of(rule, ids)) for rule in ready]
    urls += [(e, f"{url}?{q}") for e, url in urls for q in EXTRA_QUERIES.get(e, [])]
    urls += [("error", url) for url in ERROR_URLS]
    for endpoint, url in urls:
        answer = client.get(url)
        if answer.status_code >= 500:
            raise AssertionError(f"{url} answered {answer.status_code}")
        if not is_document(answer) or 300 <= answer.status_code < 400:
            continue
        if endpoint == "error" and answer.status_code < 400:
            continue  # the setter's office: a page of its own, visited as its route
        if answer.status_code >= 400:
            if answer.status_code in errors:
                continue
            errors.add(answer.status_code)
            endpoint = f"error {answer.status_code}"
        found.append(Page(endpoint, url, answer.status_code))
    return found


EXPECTED = {
    "setter": {"console.home", "console.table", "console.office", "console.dispute",
               "console.audit", "console.verify", "console.replay", "console.fairness_report",
               "console.evenings", "console.night"},
    "croupier": {"console.home", "console.table"},
    "auditor": {"console.home", "console.audit", "console.verify", "console.replay",
                "console.fairness_report", "console.dispute", "console.evenings",
                "console.night"},
    "player": {"console.home", "console.me", "console.receipt"},
    None: {"console.home"},
}  # fmt: skip
"""The pages each role must at least reach (the issue's list): a role's enumeration that
misses one has lost a page, and the checks say so rather than pass on fewer."""


Reached = dict[str | None, tuple[str | None, list[Page]]]


def every_page(app: Flask, api: Api, ids: dict[str, Any]) -> Reached:
    """For each role (None: no one signed in), its token and its pages, each role's
    expected pages among them, and an error page for every role."""
    found: Reached = {}
    for role in (*ROLES, None):
        held = token(api, role) if role else None
        reached = pages(app, ids, signed_in(app, held))
        endpoints = {p.endpoint for p in reached}
        lost = EXPECTED[role] - endpoints
        assert not lost, f"{role or 'no one'} no longer reaches {sorted(lost)}"
        assert role is None or any(p.status >= 400 for p in reached), f"{role}: no error page"
        found[role] = (held, reached)
    return found


# -- the forms --------------------------------------------------------------------------


@dataclass
class Form:
    """A POST form as a page drew it: where it posts, its fields' values, the submit
    button's (name, value) if it names one, and the names of the fields a person fills
    in or picks (not the hidden ones). A submit button with a `formaction` is a form of
    its own: its form's fields, sent where the button says."""

    action: str
    label: str
    fields: dict[str, str]
    submit: tuple[str, str] | None = None
    visible: list[str] = field(default_factory=list)
    choices: dict[str, list[str]] = field(default_factory=dict)
    numbers: set[str] = field(default_factory=set)
    """The fields that hold a number: typed as one (inputmode, type), or drawn as one."""

    def data(self) -> dict[str, str]:
        sent = dict(self.fields)
        if self.submit is not None:
            sent[self.submit[0]] = self.submit[1]
        return sent


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._form: Form | None = None
        self._elsewhere: list[Form] = []
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("method", "get").lower() == "post":
            action = a.get("action") or a.get("hx-post") or ""
            self._form = Form(html.unescape(action), a.get("aria-label", action), {})
            return
        form = self._form
        if form is None:
            return
        name = a.get("name")
        kind = a.get("type", "text" if tag == "input" else "submit").lower()
        if name and (
            a.get("inputmode") in ("numeric", "decimal") or kind == "number"
            or a.get("value", "").isdigit()
        ):  # fmt: skip
            form.numbers.add(name)
        if tag == "input" and name:
            if kind in ("radio", "checkbox"):
                form.choices.setdefault(name, []).append(a.get("value", "on"))
                if name not in form.fields:  # the first choice, as a person's pick
                    form.fields[name] = a.get("value", "on")
                    form.visible.append(name)
            elif kind not in ("submit", "button"):
                form.fields[name] = a.get("value", "")
                if kind != "hidden":
                    form.visible.append(name)
        elif tag == "select" and name:
            self._select = name
            form.visible.append(name)
        elif tag == "option" and self._select is not None:
            form.choices.setdefault(self._select, []).append(a.get("value", "\0text"))
        elif tag == "textarea" and name:
            form.fields[name] = ""
            form.visible.append(name)
        elif tag == "button" and kind == "submit" and a.get("formaction"):
            # A button that sends its form elsewhere (the table's "Everyone lays"): a form
            # of its own, with the fields its form has when it ends.
            label = f"{form.label}: {a.get('id') or a['formaction']}"
            self._elsewhere.append(Form(html.unescape(a["formaction"]), label, {}))
        elif tag == "button" and kind == "submit" and name and form.submit is None:
            form.submit = (name, a.get("value", ""))

    def handle_data(self, data: str) -> None:
        # An option without a value sends its text.
        form, select = self._form, self._select
        if form is None or select is None:
            return
        options = form.choices.get(select, [])
        if options and options[-1] == "\0text":
            options[-1] = data.strip()
            if options[-1].isdigit():
                form.numbers.add(select)

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._form is not None and self._select is not None:
            options = self._form.choices.get(self._select, [])
            self._form.fields.setdefault(self._select, options[0] if options else "")
            self._select = None
        elif tag == "form" and self._form is not None:
            self.forms.append(self._form)
            for other in self._elsewhere:
                other.fields, other.visible = dict(self._form.fields), list(self._form.visible)
                other.choices, other.numbers = dict(self._form.choices), set(self._form.numbers)
                self.forms.append(other)
            self._form, self._elsewhere = None, []


def forms(page: str) -> list[Form]:
    parser = _Forms()
    parser.feed(page)
    return parser.forms


SAMPLES: dict[str, Callable[[Form], str]] = {
    "player": lambda f: "dan",
    "name": lambda f: "eve",
    "id": lambda f: "t9",
    "amount": lambda f: "0.10",
    "limit": lambda f: "100",
    "stake": lambda f: "0.10",
    "asks": lambda f: "0.10",
    "token": lambda f: "hz_not_a_token",
    "client_seed": lambda f: "5eed" * 8,
    "claim": lambda f: "the 5 was a 4",
    "reason": lambda f: "the croupier entered the throw wrongly",
    "count": lambda f: "50.00",  # a table's cash at the cash-up (`count:TABLE`)
    "count-cage": lambda f: "10.00",
}
"""What a person would type into an empty field of that name (or, for a field named
`what:TABLE`, of `what`), so that a form sent whole is one that could be written."""


def filled(form: Form) -> dict[str, str]:
    """The form as a person would send it: its values as drawn, an empty field given a
    sample (SAMPLES)."""
    data = form.data()
    for name in form.visible:
        sample = SAMPLES.get(name) or SAMPLES.get(name.split(":", 1)[0])
        if not data.get(name) and sample is not None:
            data[name] = sample(form)
    return data
