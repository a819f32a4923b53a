"""The hostile cases of the API, sent to every console form: each is refused with a 4xx
page that says why (an element with role="alert"), and writes nothing (the events are
counted before and after), on SQLite and PostgreSQL.

The forms are found, not listed: every POST form on every page each role reaches
(tests/console/pagekit.py), at each stage of pagekit's evening (a form that shows
only in some phase of the table is found in it), once each (by the route it posts to,
its own values in the URL aside, and the fields a person fills in). Every POST route
of the console must have a form found. The cases, each sent as a plain POST (the page
without script) and as htmx sends it (`HX-Request: true`):

- the form without its CSRF token, or with another session's;
- a form that carries the table's version, sent with the version before it (the page
  was drawn before the table moved on);
- a form sent twice with one idempotency key writes once (and answers the same); a
  form whose write is confirmed first, its confirmation sent twice;
- a hostile value in any one field, the key and the version included: 30,000
  characters, a NUL, digits that are not ASCII, a negative number, a huge one.

tests/console/test_hostile.py holds the cases found one form at a time, each a bug once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.api.conftest import Api
from tests.console import pagekit
from tests.console.formkit import count

HOSTILE = {
    "30,000 characters": "7" * 30_000,
    "a NUL": "1\x00",
}
"""What no field takes."""
NUMBERS = {
    **HOSTILE,
    "digits that are not ASCII": "١٢",
    "superscript digits": "²",
    "a negative number": "-1",
    "a huge number": "9" * 5_000,
    "a huge negative number": "-" + "9" * 5_000,
}
"""What no field that holds a number takes (a name may be "-1", a claim in Welsh)."""
MONEY = {**NUMBERS, "a decimal place too many": "0.105", "a plus sign": "+1", "a float": "1e3"}
"""What no field that holds money takes: it is typed in the club's major units, as
House.parse reads it exactly."""
MONEY_FIELDS = {"amount", "stake", "asks", "min_stake", "max_stake", "max_exposure"}
KEYS = {**HOSTILE, "digits that are not ASCII": "١٢", "a huge number": "9" * 5_000}
"""What an idempotency key may not be (visible ASCII, 1 to 100 characters)."""
MODES = {"plain": {}, "htmx": {"HX-Request": "true"}}
ORDER = ("croupier", "player", "setter", "auditor", None)
"""Whose pages are searched first: a form the croupier and the setter share is sent as
the croupier, who runs the table."""


@dataclass
class Found:
    """A form, where it was found, and the signed-in browser that found it."""

    role: str | None
    client: FlaskClient
    page: str
    form: pagekit.Form
    key: tuple[Any, ...]

    def fresh(self) -> pagekit.Form | None:
        """The form as its page draws it now (new key, new version), if it still does."""
        page = self.client.get(self.page).get_data(as_text=True)
        again = [f for f in pagekit.forms(page) if form_key(self.client, f) == self.key]
        return again[0] if again else None


def form_key(client: FlaskClient, form: pagekit.Form) -> tuple[Any, ...]:
    """What makes a form one: the route it posts to, its URL's values but the ids (which
    table, player, dispute), and the fields a person fills in."""
    adapter = client.application.url_map.bind("localhost")
    endpoint, args = adapter.match(form.action.split("?")[0], method="POST")
    own = tuple(sorted((k, v) for k, v in args.items() if k not in ID_ARGS))
    return endpoint, own, tuple(sorted(form.visible))


ID_ARGS = {"table", "name", "dispute_id", "position", "round", "number"}


def every_form(api: Api) -> Iterator[tuple[str, list[Found]]]:
    """The evening's stages, each with the forms first found at it."""
    seen: set[tuple[Any, ...]] = set()
    routes = {rule.endpoint for rule in pagekit.routes(api.app, "POST")}
    posted: set[str] = set()
    for stage, played in pagekit.play(api):
        found = []
        for role in ORDER:
            client = pagekit.signed_in(api.app, pagekit.token(api, role) if role else None)
            early = stage != pagekit.STAGES[-1]
            for page in pagekit.pages(api.app, played.ids, client, early):
                for form in pagekit.forms(client.get(page.url).get_data(as_text=True)):
                    key = form_key(client, form)
                    posted.add(key[0])
                    if key not in seen:
                        seen.add(key)
                        found.append(Found(role, client, page.url, form, key))
        yield stage, found
    assert posted == routes, f"no page has a form for {sorted(routes - posted)}"


def refused(
    api: Api, found: Found, data: dict[str, str], mode: str, why: str, status: int = 0
) -> str | None:
    """Send `data` as `found`'s form: what is wrong, if it was not refused with a 4xx
    (`status`, if given) page that says why, writing nothing."""
    before = count(api)
    answer = found.client.post(found.form.action, data=data, headers=MODES[mode])
    written = count(api) - before
    text = answer.get_data(as_text=True)
    where = f"{found.form.label} ({found.form.action}, as {found.role or 'no one'}, {mode})"
    # A write changes the evening the rest of the sweep plays on: it ends the sweep.
    assert not written, f"{where}, {why}: answered {answer.status_code}, wrote {written} events"
    if not 400 <= answer.status_code < 500 or status not in (0, answer.status_code):
        return f"{where}, {why}: answered {answer.status_code}"
    if answer.mimetype != "text/html" or 'role="alert"' not in text:
        return f"{where}, {why}: answered {answer.status_code} without saying why on a page"
    return None


def report(wrong: list[str | None]) -> str:
    problems = [w for w in wrong if w]
    return f"{len(problems)} forms not refused:\n" + "\n".join(problems)


def test_a_form_without_its_csrf_token_or_with_another_sessions_is_refused(api: Api) -> None:
    other = pagekit.csrf(api.app.test_client().get("/").get_data(as_text=True))
    wrong: list[str | None] = []
    for _, forms in every_form(api):
        for found in forms:
            data = pagekit.filled(found.form)
            for mode in MODES:
                without = {k: v for k, v in data.items() if k != "csrf_token"}
                wrong.append(refused(api, found, without, mode, "without its CSRF token"))
                stolen = {**data, "csrf_token": other}
                wrong.append(refused(api, found, stolen, mode, "with another session's token"))
    assert not any(wrong), report(wrong)


def test_a_form_drawn_before_the_table_moved_on_is_refused_as_stale(api: Api) -> None:
    """Filled in as a person would, so that the version is what is wrong: 409."""
    wrong: list[str | None] = []
    versioned = 0
    for _, forms in every_form(api):
        for found in forms:
            if "version" not in found.form.fields:
                continue
            versioned += 1
            for mode in MODES:
                form = found.fresh()
                assert form is not None, found.form.label
                data = pagekit.filled(form)
                data["version"] = str(int(data["version"]) - 1)
                stale = refused(api, found, data, mode, "drawn at the version before", 409)
                wrong.append(stale)
    assert versioned, "no form carries the table's version"
    assert not any(wrong), report(wrong)


def test_a_form_sent_twice_with_one_key_writes_once(api: Api) -> None:
    """Each form that carries a key, found at any stage of the evening and still drawn
    at its end, is sent filled in as a person would, and sent again as it was; the
    second writes nothing and answers as the first did. (At its end: a form that wrote
    would change the evening the later stages play.) A form the table's state refuses
    writes nothing either way; every route with a key must have written once."""
    forms = [found for _, stage in every_form(api) for found in stage]
    wrong: list[str] = []
    wrote: set[str] = set()
    keyed: set[str] = set()
    repeated: list[str] = []
    for found in forms:
        for mode in MODES:
            form = found.fresh()
            if form is None or "key" not in form.fields:
                continue  # gone with the state it was drawn for, or writes no event
            keyed.add(found.key[0])
            data = pagekit.filled(form)
            before = count(api)
            first = found.client.post(form.action, data=data, headers=MODES[mode])
            once = count(api)
            confirm = confirmation(form, first.get_data(as_text=True))
            if once == before and confirm is not None:  # the form asked first: confirm it
                data = confirm.data()
                first = found.client.post(form.action, data=data, headers=MODES[mode])
                once = count(api)
            again = found.client.post(form.action, data=data, headers=MODES[mode])
            where = f"{form.label} ({form.action}, {mode})"
            if count(api) != once:
                wrong.append(f"{where}: the repeat wrote {count(api) - once} events")
            if (first.status_code < 400) != (again.status_code < 400):
                wrong.append(f"{where}: answered {first.status_code}, then {again.status_code}")
            if once > before:
                wrote.add(found.key[0])
                repeated.append(f"{where}: {once - before} events")
    print("Written once and repeated:", *repeated, sep="\n  ")
    assert not wrong, "\n".join(wrong)
    assert keyed <= wrote, f"no form of {sorted(keyed - wrote)} wrote once to repeat"


def confirmation(form: pagekit.Form, answer: str) -> pagekit.Form | None:
    """The form an answer asks to confirm `form`'s write with (the office's money and a
    dispute's resolution, a far stake at the table), posting where `form` posts."""
    asked = [f for f in pagekit.forms(answer) if f.action == form.action]
    return next((f for f in asked if "confirmed" in f.fields), None)


@pytest.mark.parametrize("mode", list(MODES))
def test_a_hostile_value_in_any_field_of_any_form_is_refused(api: Api, mode: str) -> None:
    wrong: list[str | None] = []
    for _, forms in every_form(api):
        for found in forms:
            data = pagekit.filled(found.form)
            for field in [f for f in data if f != "csrf_token"]:
                values = (
                    KEYS
                    if field == "key"
                    else MONEY
                    if field in MONEY_FIELDS
                    else NUMBERS
                    if field in found.form.numbers
                    else HOSTILE
                )
                for what, value in values.items():
                    sent = {**data, field: value}
                    wrong.append(refused(api, found, sent, mode, f"{what} in {field}"))
    assert not any(wrong), report(wrong)
