"""The back office and the auditor's pages through Flask's test client: a browser signed
in with a token of a role, a page's forms' hidden fields, the events and writes made (to
show a refused form wrote none, and a confirmed one wrote once), a row's amount, and the
evening test_office_pages worked by hand."""

from __future__ import annotations

import html
import re

import sqlalchemy as sa
from flask.testing import FlaskClient

from ledger.commands import Role
from ledger.store.log.heads import SEALS
from ledger.store.schema import events
from tests.api.conftest import Api, token_for
from tests.api.gamekit import Evening, nick_then_out


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page[:500]
    return html.unescape(found.group(1))


def form_of(page: str, action: str) -> dict[str, str]:
    """The hidden fields (csrf_token, key) of the first form that posts to `action` (as
    its action, or a button's formaction)."""
    start = page.rindex("<form", 0, page.index(f'action="{action}"'))
    end = page.index("</form>", start)
    fields = dict(re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', page[start:end]))
    return {k: html.unescape(v) for k, v in fields.items()}


def console(api: Api, role: str, name: str) -> FlaskClient:
    """A browser signed in with a new token of `role` (one held before is revoked)."""
    token = token_for(api.book.store.engine, Role(role), name)
    client = api.app.test_client()
    page = client.get("/").get_data(as_text=True)
    answer = client.post("/console/sign-in", data={"csrf_token": csrf_of(page), "token": token})
    assert answer.status_code == 302, answer.get_data(as_text=True)
    return client


def events_of(api: Api) -> int:
    with api.book.store.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def writes(api: Api) -> tuple[int, int]:
    """The events the writes made, and how many writes there were: each ends with its
    seal, an event of the log's own stream."""
    sealed = sa.case((events.c.stream == SEALS, 1), else_=0)
    query = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(sealed), 0))
    with api.book.store.engine.connect() as conn:
        total, seals = conn.execute(query.select_from(events)).one()
    return int(total) - int(seals), int(seals)


def evening(api: Api) -> Evening:
    """The evening of test_office_pages' docstring: ann's nick, then her out, at t1."""
    return nick_then_out(api)


def cell(page: str, row_id: str, field: str) -> str:
    """The amount a row's cell shows, in minor units (its data-minor; the cell's text is
    the same in the club's money)."""
    start = page.index(f'id="{row_id}"')
    found = re.search(rf'data-field="{field}" data-minor="(-?\d+)">([^<]*)<', page[start:])
    assert found
    return found.group(1)


def confirmed(client: FlaskClient, action: str, page: str, amount: str) -> FlaskClient:
    """A money form sent from `page`, then its confirmation: the write."""
    review = client.post(action, data={**form_of(page, action), "amount": amount})
    assert review.status_code == 200, review.get_data(as_text=True)
    written = client.post(action, data=form_of(review.get_data(as_text=True), action))
    assert written.status_code == 302, written.get_data(as_text=True)
    return client
