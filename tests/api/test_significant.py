"""The log of significant events (`club:significant`) and the club's reports of what was
not play: tokens made and revoked with their rows, console sign-ins counted (a flood is
one event), the club's settings as the service starts, writes the lock refused, the
exceptions report (voids, corrections, adjustments) and the authentication report, on
both databases; who may read them; and the deep check of the tokens table."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from ledger.api import create_app
from ledger.books import significant as book
from ledger.books.book import Book
from ledger.commands import Role
from ledger.commands import significant as command
from ledger.house import House
from ledger.store import db
from ledger.store.db import BadSetting
from ledger.store.eventstore import EventStore
from ledger.store.schema import events, tokens
from ledger.store.significant_events import STREAM
from ledger.web.tokens import create, revoke
from tests.api.conftest import Api
from tests.api.disputekit import TABLE, open_dispute, resolve, two_rounds
from tests.signing import SIGNER


def _stream(api: Api) -> list[dict[str, Any]]:
    """The events of `club:significant`: type, actor and payload, in order."""
    e = events.c
    with api.book.store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(e.type, e.actor, e.payload).where(e.stream == STREAM).order_by(e.version)
        )
        return [{"type": t, "actor": a, **json.loads(p)} for t, a, p in rows]


def _tally(api: Api) -> command.Tally:
    found: command.Tally = api.app.extensions["hazard.significant"]
    return found


def _console_token(client: FlaskClient) -> str:
    page = client.get("/").get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


def _sign_in(client: FlaskClient, token: str) -> int:
    form = {"csrf_token": _console_token(client), "token": token}
    return client.post("/console/sign-in", data=form).status_code


# -- tokens ------------------------------------------------------------------------------------


def test_a_token_made_and_revoked_is_one_write_each_with_its_event(api: Api) -> None:
    store = api.book.store
    secret = create(store, Role.CROUPIER, "cecil", by="setter:cli")
    [row] = [r for r in store.engine.connect().execute(sa.select(tokens.c.id, tokens.c.name))
             if r.name == "cecil"]  # fmt: skip
    assert revoke(store, row.id, by="setter:cli")
    assert not revoke(store, row.id)  # already revoked: nothing more is recorded
    made = [e for e in _stream(api) if e["type"] in ("TokenCreated", "TokenRevoked")]
    assert made == [
        {"type": "TokenCreated", "actor": "setter:cli", "token": row.id, "role": "croupier",
         "name": "cecil"},
        {"type": "TokenRevoked", "actor": "setter:cli", "token": row.id, "role": "croupier",
         "name": "cecil"},
    ]  # fmt: skip
    with store.engine.connect() as conn:
        text = " ".join(p for (p,) in conn.execute(sa.select(events.c.payload)))
    assert secret not in text and secret.removeprefix("hz_") not in text
    report = api.client().ok("get", "/reports/authentication")["rows"]
    assert [(r["what"], r["subject"]) for r in report][-2:] == [
        ("token created", f"token {row.id} (croupier:cecil)"),
        ("token revoked", f"token {row.id} (croupier:cecil)"),
    ]
    assert report[-1]["before"] == "live" and report[-1]["after"] == "revoked"


def test_the_log_begins_with_the_tokens_the_table_held_before_it(api: Api) -> None:
    """Tokens made before this version (here, by the bare engine, as the old code did)
    are named by the stream's first event, so that the deep check accounts for them."""
    api.client()  # its token made on the bare engine: no event
    [old] = [t.id for t in api.book.store.engine.connect().execute(sa.select(tokens.c.id))]
    create(api.book.store, Role.AUDITOR, "audrey")
    first = _stream(api)[0]
    assert first["type"] == "TokensFound" and first["tokens"] == old and first["revoked"] == ""
    with api.book.store.engine.connect() as conn:
        assert list(book.token_differences(conn)) == []


def test_the_deep_check_names_a_token_row_no_event_accounts_for(api: Api) -> None:
    store = api.book.store
    create(store, Role.AUDITOR, "audrey")
    create(store, Role.AUDITOR, "aldo")
    with store.engine.begin() as conn:  # an insider, in the database
        [audrey] = conn.execute(sa.select(tokens.c.id).where(tokens.c.name == "audrey")).scalars()
        [aldo] = conn.execute(sa.select(tokens.c.id).where(tokens.c.name == "aldo")).scalars()
        conn.execute(
            tokens.insert().values(id="feedfacefeedface", tag="feedface", name="mallory",
                                   role="setter", token_hash="0" * 64,
                                   created_at="2026-11-27T09:00:00.000000Z")
        )  # fmt: skip
        conn.execute(
            tokens.update().where(tokens.c.id == audrey).values(revoked_at="2026-11-27T09:00:01Z")
        )
        conn.execute(tokens.delete().where(tokens.c.id == aldo))
    with store.engine.connect() as conn:
        found = list(book.token_differences(conn))
    # aldo's row deleted is not named: it can only refuse aldo (and a restored
    # database holds no tokens at all).
    assert sorted(found) == sorted(
        [
            f"token {audrey} (auditor:audrey) is revoked with no event revoking it",
            "token feedfacefeedface (setter:mallory) has no event that made it",
        ]
    )
    assert _made_at(api, aldo) > 0


def test_the_api_s_deep_check_names_a_token_row_no_event_accounts_for(api: Api) -> None:
    bank = api.client()  # made on the bare engine before the log began: TokensFound names it
    create(api.book.store, Role.AUDITOR, "audrey")  # the log has begun
    assert bank.ok("get", "/audit/verify?deep=true")["tokens"] == []
    with api.book.store.engine.begin() as conn:  # an insider adds a setter's token
        conn.execute(
            tokens.insert().values(id="feedfacefeedface", tag="feedface", name="mallory",
                                   role="setter", token_hash="0" * 64,
                                   created_at="2026-11-27T09:00:00.000000Z")
        )  # fmt: skip
    found = bank.ok("get", "/audit/verify?deep=true")
    assert not found["ok"]
    assert found["tokens"] == ["token feedfacefeedface (setter:mallory) has no event that made it"]
    assert bank.ok("get", "/audit/verify")["tokens"] is None


def _made_at(api: Api, token_id: str) -> int:
    e = events.c
    with api.book.store.engine.connect() as conn:
        for position, payload in conn.execute(
            sa.select(e.position, e.payload).where(e.type == "TokenCreated")
        ):
            if json.loads(payload)["token"] == token_id:
                return int(position)
    raise AssertionError(token_id)


# -- sign-ins ---------------------------------------------------------------------------------


def test_a_flood_of_refused_sign_ins_is_one_event_with_its_count(api: Api) -> None:
    client = api.app.test_client()
    for n in range(60):
        assert _sign_in(client, f"hz_not-a-token-{n}") == 401
    assert [e for e in _stream(api) if e["type"] == "SignIns"] == []  # counted, not written
    _tally(api).flush()
    [flood] = [e for e in _stream(api) if e["type"] == "SignIns"]
    assert flood["outcome"] == "refused" and flood["count"] == 60
    assert flood["token"] is None and flood["actor"] == command.CONSOLE
    with api.book.store.engine.connect() as conn:
        text = " ".join(p for (p,) in conn.execute(sa.select(events.c.payload)))
    assert "hz_not-a-token" not in text  # never the secret typed
    [row] = [r for r in api.client().ok("get", "/reports/authentication")["rows"]
             if r["what"] == "sign-in refused"]  # fmt: skip
    assert row["count"] == 60 and row["first_at"] <= row["last_at"]


def test_a_revoked_token_refused_names_its_id_and_a_sign_in_and_out_are_recorded(api: Api) -> None:
    store = api.book.store
    gone = create(store, Role.CROUPIER, "cecil")
    [gone_id] = store.engine.connect().execute(
        sa.select(tokens.c.id).where(tokens.c.name == "cecil")
    ).scalars()  # fmt: skip
    revoke(store, gone_id)
    client = api.app.test_client()
    assert _sign_in(client, gone) == 401
    live = create(store, Role.AUDITOR, "audrey")
    assert _sign_in(client, live) == 302
    client.post("/console/sign-out", data={"csrf_token": _console_token(client)})
    _tally(api).flush()
    seen = {(e["outcome"], e["token"] is not None, e["count"]) for e in _stream(api)
            if e["type"] == "SignIns"}  # fmt: skip
    assert seen == {("refused", True, 1), ("signed in", True, 1), ("signed out", True, 1)}
    [refused] = [e for e in _stream(api) if e.get("outcome") == "refused"]
    assert (refused["token"], refused["role"], refused["name"]) == (gone_id, "croupier", "cecil")
    [signed] = [e for e in _stream(api) if e.get("outcome") == "signed in"]
    assert signed["actor"].startswith("auditor:audrey#")


# -- settings and the lock -----------------------------------------------------------------------


def test_the_club_settings_are_recorded_when_they_differ_from_the_last(api: Api) -> None:
    store = api.book.store
    settings = command.settings_of(House(), None, 5.0)
    assert command.record_settings(store, settings, "setter:serve") == len(settings)
    assert command.record_settings(store, settings, "setter:serve") == 0  # a restart
    changed = command.settings_of(House(zone="Europe/London"), None, 5.0)
    assert command.record_settings(store, changed, "setter:serve") == 1
    last = _stream(api)[-1]
    assert (last["type"], last["setting"], last["before"], last["after"]) == (
        "SettingChanged", "HAZARD_TIMEZONE", "UTC", "Europe/London"
    )  # fmt: skip
    rows = api.client().ok("get", "/reports/significant")["rows"]
    assert {"what": "setting changed", "subject": "HAZARD_TIMEZONE", "before": "UTC",
            "after": "Europe/London"}.items() <= rows[-1].items()  # fmt: skip


def test_writes_the_lock_refused_are_counted_into_one_event(api: Api) -> None:
    store = api.book.store
    assert store.refused is not None  # the app counts them
    for _ in range(25):
        store.refused()
    _tally(api).flush()
    [refused] = [e for e in _stream(api) if e["type"] == "WritesRefused"]
    assert refused["count"] == 25 and refused["actor"] == command.STORE


# -- the exceptions report -----------------------------------------------------------------------


def test_the_exceptions_report_lists_voids_corrections_and_adjustments(api: Api) -> None:
    night, v = two_rounds(api)
    night.croupier.ok("post", f"/tables/{TABLE}/main", {"main": 7})
    night.croupier.ok("post", f"/tables/{TABLE}/void-throws", {"reason": "cocked", "off": 0})
    opened = open_dispute(night, "cat", 2, {"claim": "the 8 was a 9", "dice": [4, 5]})
    body = {"resolution": "corrected", "reason": "the camera", "throw": v["eight"], "dice": [4, 5]}
    resolve(night, opened["dispute_id"], body)
    page = night.auditor.ok("get", "/reports/exceptions")
    kinds = [r["kind"] for r in page["rows"]]
    assert kinds[0] == "throw voided" and "throw corrected" in kinds and "bet adjusted" in kinds
    [corrected] = [r for r in page["rows"] if r["kind"] == "throw corrected"]
    assert corrected["before"] == "dice 4+4" and corrected["after"] == "dice 4+5"
    assert corrected["why"] == "the camera" and corrected["actor"] == api.actor()
    [voided] = [r for r in page["rows"] if r["kind"] == "throw voided"]
    assert voided["why"] == "cocked" and voided["after"] == "void: both dice off"
    adjusted = [r for r in page["rows"] if r["kind"] == "bet adjusted"]
    assert all(r["moves"] for r in adjusted)
    assert page["next_after"] is None
    csv_text = night.auditor.get("/reports/exceptions.csv").get_data(as_text=True)
    assert csv_text.splitlines()[0].startswith("position,recorded_at,table,kind")
    assert "the camera" in csv_text and len(csv_text.splitlines()) == len(page["rows"]) + 1
    # A period before any of it: nothing; paged one row at a time: each in turn.
    empty = night.auditor.ok("get", "/reports/exceptions?until=2000-01-01T00:00:00Z")
    assert empty == {"rows": [], "next_after": None}
    # The table's rule set and limits, as it opened, are in the log of significant events.
    rows = night.auditor.ok("get", "/reports/significant")["rows"]
    [opened] = [r for r in rows if r["what"] == "table opened"]
    assert opened["subject"] == f"table {TABLE}" and "rule set english" in opened["after"]
    assert opened["actor"] == api.actor("croupier", "cecil")


def test_the_exceptions_report_is_read_a_page_at_a_time(api: Api) -> None:
    night, _ = two_rounds(api)
    opened = open_dispute(night, night.croupier, 1, {"claim": "the dice left the table"})
    resolve(night, opened["dispute_id"], {"resolution": "voided", "reason": "a wild throw"})
    with api.book.store.engine.connect() as conn:
        whole = book.exceptions(conn, book.Period())
        first = book.exceptions(conn, book.Period(), 0, limit=1)
        rest = book.exceptions(conn, book.Period(), first.next_after or 0)
    assert len(whole.rows) == 3 and len(first.rows) == 1
    assert first.rows + rest.rows == whole.rows and rest.next_after is None


# -- who may read them, and bad input -----------------------------------------------------------


REPORTS = ("exceptions", "authentication", "significant")


def test_a_player_or_a_croupier_cannot_read_the_reports(api: Api) -> None:
    api.client().ok("post", "/players", {"name": "ann"})
    for who in (api.client("player", "ann"), api.client("croupier", "cecil")):
        for name in REPORTS:
            for path in (f"/reports/{name}", f"/reports/{name}.csv"):
                response = who.get(path)
                assert response.status_code == 403, (path, response.get_json())
    assert api.client(None).get("/reports/authentication").status_code == 401
    for name in REPORTS:
        assert api.client("auditor", "audrey").get(f"/reports/{name}").status_code == 200


def test_a_bad_period_is_refused_naming_it(api: Api) -> None:
    bank = api.client()
    bad = {
        "since=2026-11-27T10:00:00Z&until=2026-11-27T09:00:00Z": "until",
        "since=0001-01-01T00:00:00%2B01:00": "since",
        "until=yesterday": "until",
        f"after={'9' * 5000}": "after",
        "after=-1": "after",
    }
    for query, field in bad.items():
        response = bank.get(f"/reports/exceptions?{query}")
        assert response.status_code == 422, (query, response.get_json())
        assert field in json.dumps(response.get_json()), (query, response.get_json())


# -- the tally's window --------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_tally_writes_at_most_once_a_window_with_a_count_or_a_write(api: Api) -> None:
    clock = Clock()
    tally = command.Tally(api.book.store, window=10, clock=clock)
    api.book.store.refused, api.book.store.wrote = tally.refused_write, tally.wrote

    def written() -> list[int]:
        return [e["count"] for e in _stream(api) if e["type"] in ("SignIns", "WritesRefused")]

    for _ in range(5):
        tally.sign_in(command.REFUSED, command.CONSOLE, None)
    clock.now = 9.9
    tally.sign_in(command.REFUSED, command.CONSOLE, None)
    assert written() == []  # within the first window: counted only
    clock.now = 10.0
    tally.refused_write()
    assert written() == []  # a refused write never writes (it would wait for the lock)
    tally.sign_in(command.REFUSED, command.CONSOLE, None)  # the window is up: written
    assert sorted(written()) == [1, 7]
    tally.refused_write()
    clock.now = 25.0
    api.client().ok("post", "/players", {"name": "ann"})  # a write after the window
    assert sorted(written()) == [1, 1, 7]
    tally.sign_in(command.SIGNED_OUT, "setter:bank", None)
    assert sorted(written()) == [1, 1, 7]  # a new window began with that write
    tally.close()  # a clean stop writes what is left
    assert sorted(written()) == [1, 1, 1, 7]


def test_a_write_the_lock_refused_is_counted_and_written_with_the_next(database_url: str) -> None:
    """A real lock timeout (another writer holds the lock): the write is answered 503,
    counted, and written as WritesRefused with the first write after the window."""
    engine = db.make_engine(database_url, lock_timeout=0.3)
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    clock = Clock()
    app = create_app(book=Book(store), TESTING=True)
    tally = command.Tally(store, window=10, clock=clock)
    store.refused, store.wrote = tally.refused_write, tally.wrote
    auth = {"Authorization": f"Bearer {create(store, Role.SETTER, 'bank')}"}
    client = app.test_client()
    other = EventStore(db.make_engine(database_url), signer=SIGNER)
    try:
        with other.transaction():  # another writer holds the lock
            for name in ("ann", "bob"):
                answer = client.post("/players", json={"name": name}, headers=auth)
                assert answer.status_code == 503, answer.get_json()
        clock.now = 11.0
        assert client.post("/players", json={"name": "cat"}, headers=auth).status_code == 201
        with engine.connect() as conn:
            [refused] = [e for e in book.stream_events(conn) if type(e).__name__ == "WritesRefused"]
        assert refused.count == 2 and refused.first_at <= refused.last_at
    finally:
        other.close()
        other.engine.dispose()
        store.close()
        engine.dispose()


def test_a_window_that_cannot_be_used_is_refused_naming_it() -> None:
    assert command.window_setting(None) == command.WINDOW
    assert command.window_setting("2.5") == 2.5
    for typed in ("0", "-1", "abc", "3601", "nan", "1e400"):
        with pytest.raises(BadSetting, match="HAZARD_SIGNIFICANT_WINDOW"):
            command.window_setting(typed)


def test_a_player_s_limits_and_breaks_are_in_the_log_with_before_and_after(api: Api) -> None:
    api.client().ok("post", "/players", {"name": "ann"})
    ann = api.client("player", "ann")
    ann.ok("put", "/players/ann/limits/stake", {"limit": 500})
    ann.ok("put", "/players/ann/limits/stake", {"limit": 200})  # lower: binds at once
    ann.ok("post", "/players/ann/breaks", {"kind": "time-out", "length": 24})
    rows = api.client("auditor", "audrey").ok("get", "/reports/significant")["rows"]
    limits = [r for r in rows if r["what"] in ("limit set", "break taken")]
    assert [(r["what"], r["subject"], r["before"]) for r in limits] == [
        ("limit set", "player:ann: stake", "no limit"),
        ("limit set", "player:ann: stake", "500"),
        ("break taken", "player:ann", None),
    ]
    assert limits[1]["after"].startswith("200 from ") and limits[2]["after"].startswith(
        "time-out until "
    )
    assert all(r["actor"] == api.actor("player", "ann") for r in limits)
