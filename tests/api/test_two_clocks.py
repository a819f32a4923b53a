"""Two app servers on one database whose clocks are a minute apart, on SQLite and
PostgreSQL: the slow one's writes are held to the fast one's times, so that the log's
times rise with its positions, `as_of=` a time answers exactly the events recorded at or
before it, whichever server is asked, and `hazard export --since … --until …` holds
exactly the events recorded in its range."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger.api import create_app
from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import offline
from ledger.store import db
from ledger.store.eventstore import EventStore, Recorded
from tests.api.conftest import Api
from tests.ledger.clockkit import Wall, stamp
from tests.signing import SIGNER, VERIFIER

MINUTE = timedelta(minutes=1)


@dataclass
class Servers:
    url: str
    fast: Api
    slow: Api
    engine: sa.Engine

    def events(self) -> list[Recorded]:
        return EventStore(self.engine).read_all(0, limit=10_000)

    def holds(self) -> list[tuple[int, str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT position, clock, recorded_at FROM clock_holds"))
            return sorted((int(p), str(c), str(r)) for p, c, r in rows)


@pytest.fixture
def servers(database_url: str) -> Iterator[Servers]:
    engine = db.make_engine(database_url)
    db.upgrade(engine)
    wall = Wall()
    stores = [
        EventStore(engine, clock=wall.clock(MINUTE), signer=SIGNER),
        EventStore(engine, clock=wall.clock(), signer=SIGNER),
    ]
    fast, slow = (Api(create_app(book=Book(s), TESTING=True)) for s in stores)
    # One club, one setter: both servers take the token the first made (a role and name
    # has one live token, and a second would revoke the first's).
    slow.tokens = fast.tokens
    yield Servers(database_url, fast, slow, engine)
    for store in stores:
        store.close()
    engine.dispose()


AMOUNTS = [2**i for i in range(10)]
"""Ann's deposits: each balance is one set of them, so a balance says which were in."""


def _held_total(api: Api) -> float:
    text = api.client(None).get("/metrics").get_data(as_text=True)
    line = next((x for x in text.splitlines() if x.startswith("hazard_clock_held_total ")), None)
    return 0.0 if line is None else float(line.split()[1])


def _played(servers: Servers) -> dict[int, int]:
    """Ann made a player by the fast server, then her deposits, written by the two in
    turn: each deposit's position, by its amount."""
    servers.fast.client().ok("post", "/players", {"name": "ann"})
    at: dict[int, int] = {}
    for i, amount in enumerate(AMOUNTS):
        server = (servers.slow, servers.fast)[i % 2]
        answer = server.client().ok("post", "/players/ann/deposits", {"amount": amount})
        at[amount] = answer["receipt"]["positions"][0]
    return at


def test_the_slow_server_s_writes_are_held_to_the_fast_server_s_times(servers: Servers) -> None:
    before = _held_total(servers.slow)
    at = _played(servers)
    rows = servers.events()
    times = [r.recorded_at for r in rows]
    assert times == sorted(times), "recorded_at went back"
    by_position = {r.position: r for r in rows}
    holds = servers.holds()
    for amount in AMOUNTS[::2]:  # the slow server's
        position = at[amount]
        assert position in {p for p, _, _ in holds}
        assert by_position[position].recorded_at == by_position[position - 1].recorded_at
    for amount in AMOUNTS[1::2]:  # the fast server's, on its own clock
        assert at[amount] not in {p for p, _, _ in holds}
    assert all(datetime.fromisoformat(r) - datetime.fromisoformat(c) < MINUTE for _, c, r in holds)
    assert _held_total(servers.slow) - before == len(holds)


def _moments(rows: list[Recorded]) -> list[str]:
    """Every time the log holds, a microsecond before it, and half a minute either side
    (where the slow clock read, and between): the times a bisection could get wrong."""
    out = set()
    for r in rows:
        t = datetime.fromisoformat(r.recorded_at)
        out |= {r.recorded_at, stamp(t - timedelta(microseconds=1)), stamp(t + MINUTE / 2)}
        out.add(stamp(t - MINUTE / 2))
    return sorted(out)


def test_as_of_a_time_is_exact_whichever_server_is_asked(servers: Servers) -> None:
    at = _played(servers)
    rows = servers.events()
    for moment in _moments(rows):
        expected = max((r.position for r in rows if r.recorded_at <= moment), default=0)
        balance = sum(a for a, p in at.items() if p <= expected)
        for api in (servers.fast, servers.slow):
            answer = api.client("auditor", "audrey").ok(
                "get", f"/players/ann/balance?as_of={quote(moment)}"
            )
            assert answer["as_of"]["position"] == expected, moment
            assert answer["balance"] == balance, moment


def test_a_time_range_exports_exactly_the_events_recorded_in_it(servers: Servers) -> None:
    _played(servers)
    rows = servers.events()
    moments = _moments(rows)
    for since, until in [
        (moments[0], moments[-1]),
        *zip(moments[1::5], moments[4::5], strict=False),
    ]:
        result = CliRunner().invoke(
            main, ["export", "--since", since, "--until", until, "--database-url", servers.url]
        )
        assert result.exit_code == 0, result.output
        lines = result.stdout_bytes.splitlines(keepends=True)
        offline.verify(lines, key=VERIFIER)
        held = [r["position"] for r in map(json.loads, lines) if r["record"] == "event"]
        assert held == [r.position for r in rows if since <= r.recorded_at < until], (
            since,
            until,
        )
