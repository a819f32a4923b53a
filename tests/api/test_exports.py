"""GET /export, on SQLite and PostgreSQL: each scope streamed as the file the format
page describes (its lines recomputed by tests/ledger/formatkit.py's check), named for
saving, to the roles that may have it; every bad request a problem, never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.store.log.heads import SEALS
from tests.api.conftest import Api, Client
from tests.api.readkit import play, problem
from tests.ledger.formatkit import check
from tests.signing import VERIFIER


def expected(api: Api, **scope: Any) -> bytes:
    prepared = jsonl.prepare(api.book.store.engine, scope_of(**scope), key=VERIFIER)
    return b"".join(prepared.chunks())


def exported(client: Client, query: str) -> Any:
    response = client.get(f"/export?{query}")
    assert response.status_code == 200, response.get_json()
    return response


def test_a_table_as_a_file(api: Api) -> None:
    bank = play(api)
    response = exported(bank, "table=t1")
    assert response.headers["Content-Type"] == "application/jsonl"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="hazard-table-t1.jsonl"'
    )
    assert response.data == expected(api, table="t1")
    read = check(response.data, api.book.store.read_all(0, limit=10_000))
    assert {e["stream"] for e in read.events} == {"table:t1", SEALS}
    # The one seal it holds is the one it is proven whole against: at its closing's size.
    sealed = [e["position"] for e in read.events if e["stream"] == SEALS]
    assert sealed == [read.closing["heads"]["end"]["position"]] == [read.closing["size"]]


def test_an_auditor_exports_any_scope(api: Api) -> None:
    play(api)
    auditor = api.client("auditor", "audrey")
    log = api.book.store.read_all(0, limit=10_000)
    middle = log[len(log) // 2].recorded_at
    scopes: list[tuple[str, dict[str, Any]]] = [
        ("all=true", {"everything": True}),
        ("player=bob", {"player": "bob"}),
        (f"since={middle}", {"since": middle}),
        (f"table=t2&until={middle}", {"table": "t2", "until": middle}),
    ]
    for query, scope in scopes:
        response = exported(auditor, query.replace("+", "%2B"))
        assert response.data == expected(api, **scope)
        check(response.data, log)


def test_a_player_exports_their_own_statement_only(api: Api) -> None:
    play(api)
    ann = api.client("player", "ann")
    response = exported(ann, "player=ann")
    assert response.headers["Content-Disposition"].endswith('"hazard-player-ann.jsonl"')
    assert response.data == expected(api, player="ann")
    for query in ("player=bob", "table=t1", "all=true", "since=2020-01-01T00:00:00Z"):
        problem(ann.get(f"/export?{query}"), 403)


def test_a_croupier_exports_nothing(api: Api) -> None:
    play(api)
    croupier = api.client("croupier", "dealer")
    for query in ("table=t1", "all=true", "player=dealer"):
        problem(croupier.get(f"/export?{query}"), 403)
    problem(api.client(None).get("/export?table=t1"), 401)


def test_no_such_table_or_player(api: Api) -> None:
    bank = play(api)
    assert "no table 't9'" in problem(bank.get("/export?table=t9"), 404)["detail"]
    assert "no player 'zed'" in problem(bank.get("/export?player=zed"), 404)["detail"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("table=t1&player=ann", "player"),
        ("all=true&since=2026-01-01T00:00:00Z", "since"),
        ("", "scope"),
        ("all=false", "scope"),
        ("since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"),
        ("since=yesterday", "since"),
        ("table=../x", "table"),
        ("table=t1&sheet=rounds", "sheet"),
        ("table=t1&decimals=2", "decimals"),
        ("table=t1&format=xml", "format"),
        ("table=t1&format=csv&sheet=statement", "sheet"),
        ("table=t1&colour=red", "colour"),
    ],
)
def test_bad_requests_name_the_parameter(sqlite_api: Api, query: str, field: str) -> None:
    body = problem(api_client(sqlite_api).get(f"/export?{query}"), 422)
    assert field in str(body["errors"]) if "errors" in body else field in body["detail"]


def api_client(api: Api) -> Client:
    play(api)
    return api.client()


HOSTILE = [
    "table=%00",
    "table=t1%0A",
    "player=" + "a" * 5000,
    "since=" + "9" * 5000,
    "since=0001-01-01T00:00:00%2B01:00",
    "until=9999-12-31T23:59:59-23:59",
    "since=2026-13-01T00:00:00Z",
    "all=maybe",
    "all=true&all=false",
    "table=t1&table=t2",
    "decimals=1e3&format=csv&table=t1",
    "decimals=%D9%A3&format=csv&table=t1",
    "format=csv&sheet=%F0%9F%8E%B2&table=t1",
    "format=csv&table=t1&since=0200-10-02T02:15:05.5956%2B03:33",
    "table=%F0%9F%8E%B2",
    "player=setter",
    "player=..",
    "since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z",
]


def test_a_hostile_query_never_500s(sqlite_api: Api) -> None:
    bank = api_client(sqlite_api)
    for query in HOSTILE:
        response = bank.get(f"/export?{query}")
        assert response.status_code < 500, (query, response.status_code, response.get_json())
        if response.status_code >= 400:
            problem(response, response.status_code)


def test_the_read_ends_with_the_response(sqlite_api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    bank = api_client(sqlite_api)
    closed: list[int] = []
    real = jsonl.Prepared.close

    def close(self: jsonl.Prepared) -> None:
        closed.append(1)
        real(self)

    monkeypatch.setattr(jsonl.Prepared, "close", close)
    monkeypatch.setattr(jsonl, "CHUNK", 100)
    pool = sqlite_api.book.store.engine.pool
    held = pool.checkedout()  # type: ignore[attr-defined]  # the store's idle writers
    response = bank.get("/export?all=true", buffered=False)
    assert next(response.response)  # the first bytes, then the client goes away
    response.close()
    assert closed
    assert pool.checkedout() == held  # type: ignore[attr-defined]


def test_csv(api: Api) -> None:
    from ledger.exports import sheets

    bank = play(api)
    ann = api.client("player", "ann")
    for client, query, scope, sheet, name in [
        (bank, "table=t1&format=csv&sheet=rounds", {"table": "t1"}, "rounds",
         "hazard-table-t1-rounds.csv"),
        (ann, "player=ann&format=csv", {"player": "ann"}, None, "hazard-player-ann-statement.csv"),
    ]:  # fmt: skip
        response = exported(client, query)
        assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
        assert response.headers["Content-Disposition"] == f'attachment; filename="{name}"'
        made = sheets.prepare(api.book.store.engine, scope_of(**scope), sheet)
        assert response.data == b"".join(made.chunks())
        assert response.data.startswith(b"\xef\xbb\xbf")


def test_csv_in_the_clubs_minor_units_and_zone(api: Api) -> None:
    """The club counts yen, in Tokyo: GET /export's sheets have no decimal places and
    their local times are Tokyo's, unless other decimals are asked for."""
    import csv
    import io

    from ledger.house import House

    play(api)
    api.app.extensions["hazard.house"] = House("JPY", 0, "Asia/Tokyo")
    ann = api.client("player", "ann")

    def lines(query: str) -> list[dict[str, str]]:
        text = exported(ann, query).data.decode("utf-8-sig")
        return list(csv.DictReader(io.StringIO(text, newline="")))

    club = lines("player=ann&format=csv")
    assert club and all(x["amount_decimal"] == x["amount"] for x in club)
    assert all(x["time_local"].endswith("+09:00") for x in club)
    asked = lines("player=ann&format=csv&decimals=2")
    assert [x["amount_decimal"] for x in asked] == [f"{int(x['amount']) / 100:.2f}" for x in asked]


@pytest.mark.parametrize("query", ["player=ann", "all=true", "player=ann&format=csv"])
def test_a_slow_client_holds_nothing_while_others_write(
    api: Api, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A player reads their export a little at a time while the club goes on writing:
    between two pages the export holds no transaction, so SQLite's WAL checkpoints to
    nothing (PostgreSQL: no session idle in a transaction, no xmin held), and the file
    is the log as it stood when the export began."""
    from ledger.exports import sheets
    from tests.ledger.exportkit import held

    monkeypatch.setattr(jsonl, "BATCH", 5)
    monkeypatch.setattr(jsonl, "CHUNK", 200)
    monkeypatch.setattr(sheets, "BATCH", 2)
    monkeypatch.setattr(sheets, "CHUNK", 40)
    bank = play(api)
    ann = api.client("player", "ann")
    before = exported(ann if "ann" in query else bank, query).data
    response = (ann if "ann" in query else bank).get(f"/export?{query}", buffered=False)
    body = iter(response.response)
    got = [next(body)]
    for _ in range(40):
        bank.ok("post", "/players/ann/deposits", {"amount": 1})
    assert held(api.book.store.engine) == []
    got.extend(body)
    response.close()
    assert b"".join(got) == before
    assert exported(ann if "ann" in query else bank, query).data != before
