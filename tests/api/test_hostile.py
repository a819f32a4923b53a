"""Hostile input, kept beside the role matrix (tests/api/test_roles.py): every write in
its OPS (tests/api/rolekit.py), on the table it sets up, sent what a careless or
malicious client sends.

Each write is tried with: bodies nested 30,000 deep (arrays and objects); in each of
its integer fields a number of 5,000 digits, its negative, 2**63, -1, 0 where zero is
out of range, a fraction, a boolean and a string; a body over MAX_CONTENT_LENGTH; the
headers the service reads (Authorization, Idempotency-Key, If-Match, Content-Type) at
64 KiB; bodies as text/plain, application/xml, with no Content-Type, and as
`application/json; charset=latin-1` in bytes that are not UTF-8; names with unicode,
NUL, `..`, `/` and 300 characters, in its path and in its body; and every kind of
token (none, `Bearer` alone, malformed, revoked, another role's). Each must be a 4xx
problem with a stable `type`, and write no event. The same write, well formed, is then
still what the table takes (nothing the refusals did moved it), and its Idempotency-Key
replayed with the same body gets the first answer and writes nothing, with another body
the documented 422.

The reads take hostile query parameters: numbers of 5,000 digits, NUL in filters,
unknown parameters; and path numbers of 5,000 digits.

Most of it runs on SQLite (`sqlite_api`): what is refused is refused before a query is
made. A representative subset runs on both databases (`api`), for what reaches one.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from ledger.api import create_app
from ledger.api.bodies import MAX_DEPTH
from ledger.api.problems import PREFIX, TYPES
from ledger.commands import Role
from ledger.store.schema import tokens
from ledger.web.tokens import create, revoke
from tests.api.conftest import Api, Client
from tests.api.rolekit import OPS, Op, club, event_count, prepare

WRITES = [op for op in OPS if op.method != "get"]
READS = [op for op in OPS if op.method == "get"]
DEEP = 30_000
HUGE = "9" * 5_000
"""A number of 5,000 digits, as JSON writes it: past Python's 4,300 for int()."""
KNOWN_TYPES = {PREFIX + kind for kind in TYPES}
ZERO_ALLOWED = {"off", "limit"}
"""Integer fields whose range takes 0 (a void throw's dice off the table; a credit
limit): everywhere else 0 is out of range."""
NAME_FIELDS = {"player", "name", "id"}
"""Body fields that name a player or a table."""
HOSTILE_NAMES = ["ännä", "a\u0000b", "..", "a/b", "x" * 300, "\u202eevil", "a b", ""]
HOSTILE_TEXT = ["a\u0000b", "\ud800", "x\udfff", "x" * 501, "", 5, None, ["a"], {"a": "b"}]
"""For any string field, names or free text (a claim, a reason): text a database cannot
hold (NUL, a lone surrogate), too long, empty, or not a string."""
HOSTILE_NUMBERS = [
    HUGE,
    "-" + HUGE,
    str(2**63),
    str(-(2**63)),
    str(2**64),
    str(10**15 + 1),
    "-1",
    "1.5",
    "1e400",
    "1E2",
    "true",
    '"5"',
    "null",
    "[]",
    "{}",
]
"""Each as the text of a JSON value, put in place of an integer field's value."""
PLACEHOLDER = 424242


def _problem(response: Any, *statuses: int, what: Any = None) -> dict[str, Any]:
    """The answer, checked to be a 4xx problem document with a stable type."""
    problem = response.get_json(silent=True)
    assert 400 <= response.status_code < 500, (what, response.status_code, response.data[:300])
    if statuses:
        assert response.status_code in statuses, (response.status_code, problem)
    assert response.mimetype == "application/problem+json", response.mimetype
    assert isinstance(problem, dict), response.data[:300]
    assert problem["status"] == response.status_code
    kind = problem["type"]
    assert kind in KNOWN_TYPES or kind.startswith(PREFIX + "rule:"), kind
    return problem


def _send(
    client: Client, op: Op, path: str, data: Any = None, headers: dict[str, str] | None = None
) -> Any:
    method = getattr(client._client, op.method)
    all_headers = client._headers(headers)
    return method(path, data=data, headers=all_headers)


def _json(body: Any) -> bytes:
    return json.dumps(body).encode()


def _integer_fields(body: Any, where: tuple[str | int, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to each integer in a body (not booleans)."""
    if isinstance(body, dict):
        return [p for k, v in body.items() for p in _integer_fields(v, (*where, k))]
    if isinstance(body, list):
        return [p for i, v in enumerate(body) for p in _integer_fields(v, (*where, i))]
    if isinstance(body, int) and not isinstance(body, bool):
        return [where]
    return []


def _name_fields(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    return [k for k, v in body.items() if k in NAME_FIELDS and isinstance(v, str)]


def _string_fields(body: Any, where: tuple[str | int, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to each string in a body."""
    if isinstance(body, dict):
        return [p for k, v in body.items() for p in _string_fields(v, (*where, k))]
    if isinstance(body, list):
        return [p for i, v in enumerate(body) for p in _string_fields(v, (*where, i))]
    return [where] if isinstance(body, str) else []


def _replace(body: Any, where: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(body))
    target = copy
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    return copy


def _hostile_bodies(op: Op, body: Any) -> list[tuple[str, bytes, str | None]]:
    """(what, bytes, Content-Type) for each hostile body this write gets."""
    cases: list[tuple[str, bytes, str | None]] = [
        ("arrays nested 30,000 deep", b"[" * DEEP + b"]" * DEEP, "application/json"),
        ("objects nested 30,000 deep", b'{"a":' * DEEP + b"1" + b"}" * DEEP, "application/json"),
        ("nested one past the limit", b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), None),
        ("a bare 5,000-digit number", b"9" * 5_000, "application/json"),
        ("a body over 64 KiB", _json({"pad": "x" * 70_000, **(body or {})}), None),
        ("not JSON", b"{'amount': 5}", None),
        ("NaN", b'{"amount": NaN}', None),
        ("text/plain", _json(body or {}), "text/plain"),
        ("application/xml", b"<amount>5</amount>", "application/xml"),
        ("no Content-Type", _json(body or {"x": 1}), ""),
        (
            "latin-1 bytes said to be latin-1",
            '{"player": "ännä"}'.encode("latin-1"),
            "application/json; charset=latin-1",
        ),
        ("invalid UTF-8", b'{"player": "\xff\xfe"}', "application/json"),
        ("an array, not an object", b"[1, 2, 3]", None),
        ("a string, not an object", b'"hello"', None),
        ("an unknown field", _json({**(body or {}), "surprise": 1}), None),
    ]
    if body is not None:
        for where in _integer_fields(body):
            field = where[-1] if isinstance(where[-1], str) else where[-2]
            text = json.dumps(_replace(body, where, PLACEHOLDER))
            values = [*HOSTILE_NUMBERS, *([] if field in ZERO_ALLOWED else ["0", "-0"])]
            for value in values:
                hostile = text.replace(str(PLACEHOLDER), value).encode()
                cases.append((f"{where}={value[:12]}", hostile, None))
        for name in _name_fields(body):
            for value in HOSTILE_NAMES:
                cases.append((f"{name}={value[:12]!r}", _json({**body, name: value}), None))
        for where in _string_fields(body):
            for text in HOSTILE_TEXT:
                hostile = _replace(body, where, text)
                cases.append((f"{where}={str(text)[:12]!r}", _json(hostile), None))
    return cases


def _hostile_paths(op: Op, context: dict[str, Any]) -> list[str]:
    """The write's path with each hostile name in each parameter, URL-encoded."""
    paths = []
    for value in HOSTILE_NAMES:
        if not value:
            continue
        encoded = quote(value, safe="")
        if "{t}" in op.path:
            paths.append(op.path.format(**{**context, "t": encoded}))
        if "/players/ann/" in op.path:
            paths.append(op.path.replace("/players/ann/", f"/players/{encoded}/"))
        if "{d}" in op.path:
            paths.append(op.path.format(**{**context, "d": encoded}))
    if "/rounds/1/" in op.path:
        for number in ("9" * 5_000, "0", "-1", str(2**63), "%EF%BC%91"):
            paths.append(op.path.format(**context).replace("/rounds/1/", f"/rounds/{number}/"))
    return paths


def _tokens(api: Api) -> list[tuple[str, dict[str, str]]]:
    """Every kind of token a write must refuse, as the headers that carry it."""
    engine = api.book.store.engine
    auditor = create(engine, Role.AUDITOR, "aud")
    return [
        ("missing", {}),
        ("Bearer alone", {"Authorization": "Bearer"}),
        ("Bearer and a space", {"Authorization": "Bearer "}),
        ("malformed", {"Authorization": "Bearer not-a-token"}),
        ("prefix only", {"Authorization": "Bearer hz_"}),
        ("unknown", {"Authorization": "Bearer hz_" + "A" * 43}),
        ("64 KiB", {"Authorization": "Bearer hz_" + "A" * 65_536}),
        ("NUL", {"Authorization": "Bearer hz_\u0000"}),
        ("Basic", {"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}),
        ("lower-case scheme", {"Authorization": "bearer " + auditor}),
        ("revoked", {"Authorization": f"Bearer {_revoked(api)}"}),
        ("wrong role", {"Authorization": f"Bearer {auditor}"}),
    ]


def _revoked(api: Api) -> str:
    engine = api.book.store.engine
    token = create(engine, Role.SETTER, "gone")
    with engine.connect() as conn:
        token_id = conn.execute(sa.select(tokens.c.id).where(tokens.c.name == "gone")).scalar_one()
    assert revoke(engine, token_id)
    return token


def _headers(content_type: str | None) -> dict[str, str]:
    if content_type == "":
        return {}
    return {"Content-Type": content_type or "application/json"}


def _try_hostile(api: Api, op: Op) -> int:
    """Send every hostile input to `op` on a fresh table; each must be a refusal that
    writes nothing. Then the well-formed write, and its key replayed. The number of
    inputs tried."""
    bank = club(api)
    context = prepare(bank, op.setup)
    body = op.body(context) if op.body else None
    path = op.path.format(**context)
    before = event_count(api)
    tried = 0
    anonymous = api.client(None)
    for what, data, content_type in _hostile_bodies(op, body):
        _problem(_send(bank, op, path, data, _headers(content_type)), what=what)
        tried += 1
        # The same input without a token: a 401 before the body is read.
        if tried % 7 == 0:
            _problem(_send(anonymous, op, path, data, _headers(content_type)), 401)
    assert event_count(api) == before
    good = _json(body) if body is not None else None
    for hostile in _hostile_paths(op, context):
        _problem(_send(bank, op, hostile, good, _headers(None)), what=hostile[:80])
        tried += 1
    for what, header in [
        ("Idempotency-Key", {"Idempotency-Key": "k" * 65_536}),
        ("Idempotency-Key NUL", {"Idempotency-Key": "a\u0000b"}),
        ("Idempotency-Key unicode", {"Idempotency-Key": "ключ"}),
        ("If-Match", {"If-Match": "9" * 65_536}),
        ("If-Match 5,000 digits", {"If-Match": "9" * 5_000}),
        ("If-Match negative", {"If-Match": "-1"}),
        ("If-Match stale", {"If-Match": "0"}),
        ("Content-Type", {"Content-Type": "text/" + "y" * 65_536}),
        ("Content-Type NUL", {"Content-Type": "application/json\u0000"}),
        ("Content-Encoding", {"Content-Encoding": "gzip" * 16_384}),
    ]:
        if what.startswith("If-Match") and "{t}" not in op.path:
            continue
        if what.startswith("Content-") and good is None:
            continue  # a body-less request's content headers describe nothing
        response = _send(bank, op, path, good, {**_headers(None), **header})
        _problem(response, what=what)
        tried += 1
    assert event_count(api) == before
    for what, header in _tokens(api):
        response = api.app.test_client().open(
            path, method=op.method.upper(), data=good, headers={**_headers(None), **header}
        )
        _problem(response, 401, 403, what=what)
        tried += 1
    assert event_count(api) == before
    # Nothing moved the table: the well-formed write is still what it takes; its key
    # replayed with the same body is the first answer, with another body a 422.
    first = _send(bank, op, path, good, {**_headers(None), "Idempotency-Key": "once"})
    assert first.status_code == op.expect, first.get_json()
    after = event_count(api)
    again = _send(bank, op, path, good, {**_headers(None), "Idempotency-Key": "once"})
    if op.expect < 300:
        assert again.status_code == first.status_code
        assert again.get_json() == first.get_json()
    else:
        _problem(again, op.expect)
    other = _json({**(body or {}), "surprise": 1}) if body is not None else b"{}"
    if body is not None:
        for where in _integer_fields(body)[-1:]:
            other = _json(_replace(body, where, _other(body, where)))
            break
        else:
            other = _json({k: (v + "x" if isinstance(v, str) else v) for k, v in body.items()})
    response = _send(bank, op, path, other, {**_headers(None), "Idempotency-Key": "once"})
    if op.expect < 300 and body:
        problem = _problem(response, 422)
        assert problem["type"] == PREFIX + "idempotency-key-reused", problem
    else:
        assert response.status_code < 500
    assert event_count(api) == after
    return tried + 3


def _other(body: Any, where: tuple[Any, ...]) -> int:
    target = body
    for step in where:
        target = target[step]
    return int(target) - 1 if target > 1 else int(target) + 1


@pytest.mark.parametrize("op", WRITES, ids=[op.name for op in WRITES])
def test_a_write_refuses_hostile_input_and_writes_nothing(sqlite_api: Api, op: Op) -> None:
    assert _try_hostile(sqlite_api, op) >= 40  # the suite cannot quietly shrink


def test_a_body_less_write_refuses_a_body_rather_than_ignoring_it(sqlite_api: Api) -> None:
    """Regression: close and pass took no body and read none, so a body 30,000 levels
    deep, or not JSON at all, closed the table (201) rather than being refused."""
    bank = club(sqlite_api)
    context = prepare(bank, "caster")
    path = f"/tables/{context['t']}/close"
    before = event_count(sqlite_api)
    for data, content_type, status, kind in [
        (b"[" * DEEP + b"]" * DEEP, "application/json", 400, "bad-request"),
        (b"not json", "application/json", 400, "bad-request"),
        (b"close it", "text/plain", 415, "unsupported-media-type"),
        (b'{"now": true}', "application/json", 422, "validation"),
        (b"[]", "application/json", 422, "validation"),
        (b"null", "application/json", 422, "validation"),
    ]:
        answer = bank.post(path, data=data, headers={"Content-Type": content_type})
        problem = _problem(answer, status, what=data[:20])
        assert problem["type"] == PREFIX + kind
    assert event_count(sqlite_api) == before
    # No body, or an empty object, is what it takes.
    assert (
        bank.post(path, data=b"{}", headers={"Content-Type": "application/json"}).status_code == 201
    )
    context = prepare(bank, "caster")
    assert bank.post(f"/tables/{context['t']}/close").status_code == 201


def _get_paths(anonymous: bool = False) -> list[tuple[str, list[str]]]:
    """Every GET operation of the contract outside the console and operators'
    endpoints (those open to callers without a token, when `anonymous`), as (path
    template, its query parameters)."""
    import pathlib

    import yaml

    spec = yaml.safe_load((pathlib.Path(__file__).parents[2] / "openapi.yaml").read_text())
    found = []
    for path, item in spec["paths"].items():
        get = item.get("get")
        if get is None or path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
            continue
        if anonymous and {} not in get.get("security", []):
            continue
        query = [p["name"] for p in get.get("parameters", []) if p.get("in") == "query"]
        found.append((path, query))
    return found


GETS = _get_paths()
PUBLIC_GETS = _get_paths(anonymous=True)
HOSTILE_QUERY = [HUGE, "-" + HUGE, str(2**63), "-1", "0", "a%00b", "%00", "..", "a/b", "x" * 300,
                 "%C3%A4nn%C3%A4", "%EF%BC%91", "%FF", "%ED%A0%80", "1.5", "true", "%E2%80%AE",
                 "%20", ""]  # fmt: skip
HOSTILE_PATH = [HUGE, "-1", str(2**63), "%00", "a%00b", "..", "%2e%2e", "a%2Fb", "x" * 300,
                "%C3%A4nn%C3%A4", "%EF%BC%91", "%ED%A0%80", "%FF"]  # fmt: skip
REACHING_A_QUERY = [str(2**63), "9" * 20, "a%00b", "%00", "%ED%A0%80", "x" * 300]
"""What a read tried on PostgreSQL too is sent: what passes a loose check and reaches
the database, which refuses a NUL and a number past 64 bits where SQLite does not."""


def _fill(path: str, context: dict[str, Any], **values: str) -> str:
    filled = {"table": context["t"], "name": "ann", "round": "1", "dispute_id": context["d"],
              "size": "1", "number": "1", **values}  # fmt: skip
    return path.format(**filled)


def _ask_hostile(
    api: Api,
    path: str,
    query: list[str],
    context: dict[str, Any],
    values: list[str] = HOSTILE_QUERY,
    path_values: list[str] = HOSTILE_PATH,
    role: str | None = "setter",
) -> int:
    """Send each hostile value in each query parameter of `path` (and an unknown one),
    and in each of its path parameters, with `role`'s token (None: none): a 4xx problem
    or an answer, never a 5xx, and never an event. The number of requests."""
    bank = api.client(role)
    before = event_count(api)
    tried = 0
    base = _fill(path, context)
    for name in [*query, "unknown", "after%00"]:
        for value in values:
            answer = bank.get(f"{base}?{name}={value}")
            what = (path, name, value[:12])
            assert answer.status_code < 500, (what, answer.data[:300])
            if answer.status_code >= 400:
                _problem(answer, what=what)
            tried += 1
        twice = bank.get(f"{base}?{name}=1&{name}=2")
        assert twice.status_code < 500, (path, name, twice.data[:300])
        tried += 1
    for parameter in ("table", "name", "round", "dispute_id", "size", "number"):
        if "{" + parameter + "}" not in path:
            continue
        for value in path_values:
            answer = bank.get(_fill(path, context, **{parameter: value}))
            _problem(answer, 400, 404, 422, what=(path, parameter, value[:12]))
            tried += 1
    assert event_count(api) == before
    return tried


@pytest.mark.parametrize(("path", "query"), GETS, ids=[path for path, _ in GETS])
def test_a_read_refuses_hostile_parameters_and_writes_nothing(
    sqlite_api: Api, path: str, query: list[str]
) -> None:
    bank = club(sqlite_api)
    context = prepare(bank, "disputed")
    assert _ask_hostile(sqlite_api, path, query, context) >= 40


@pytest.mark.parametrize(("path", "query"), PUBLIC_GETS, ids=[p for p, _ in PUBLIC_GETS])
def test_a_public_read_refuses_hostile_parameters_from_anyone(
    api: Api, path: str, query: list[str]
) -> None:
    """The log's reads open to callers without a token, sent hostile values by one."""
    assert {p for p, _ in PUBLIC_GETS} >= {"/log/key", "/log/cosigned", "/log/gossip"}
    bank = club(api)
    context = prepare(bank, "disputed")
    _ask_hostile(api, path, query, context, role=None)


def test_a_gossip_report_refuses_hostile_input_from_anyone_and_keeps_nothing(api: Api) -> None:
    """POST /log/gossip, which anyone may send: every hostile body, with no token and
    with the setter's, and every bad token with a good body, is a 4xx problem that
    keeps no report; then the good body, without a token, is kept once."""
    from ledger.store.schema import gossip

    bank = club(api)
    note = bank.ok("get", "/log/checkpoint")["checkpoint"]
    body = {"note": note, "reported_by": "treasurer"}

    def reports() -> int:
        with api.book.store.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(gossip)).scalar_one())

    # All of the writes' hostile bodies but a null reporter, which is no reporter.
    cases = [c for c in _hostile_bodies(WRITES[0], body) if c[0] != "('reported_by',)='None'"]
    bad_notes = (note + "x", note.replace("\n\n", "\n"), "\u2014 x y\n", note * 10)
    cases += [(f"note={n[:12]!r}", _json({"note": n}), None) for n in bad_notes]
    tried = 0
    for who in (api.client(None), bank):
        for what, data, content_type in cases:
            answer = who._client.post("/log/gossip", data=data,
                                      headers=who._headers(_headers(content_type)))  # fmt: skip
            _problem(answer, what=what)
            tried += 1
    for what, headers in _tokens(api):
        if what in ("missing", "wrong role"):
            continue  # anyone may report, a token or none
        headers = {**headers, "Content-Type": "application/json"}
        answer = bank._client.post("/log/gossip", data=_json(body), headers=headers)
        assert _problem(answer, 400, 401, 431, what=what)["status"] != 422
    assert reports() == 0 and tried > 60
    kept = api.client(None).post("/log/gossip", json=body)
    assert kept.status_code == 201 and reports() == 1


BOTH = ["deposit", "throw", "offer side bet", "open dispute", "resolve dispute"]
"""The writes tried on PostgreSQL too: money, play, a nested body, free text."""


@pytest.mark.parametrize("name", BOTH)
def test_a_write_refuses_hostile_input_on_each_database(api: Api, name: str) -> None:
    (op,) = [op for op in WRITES if op.name == name]
    _try_hostile(api, op)


@pytest.mark.parametrize(("path", "query"), GETS, ids=[path for path, _ in GETS])
def test_a_read_refuses_hostile_parameters_on_each_database(
    api: Api, path: str, query: list[str]
) -> None:
    bank = club(api)
    context = prepare(bank, "disputed")
    _ask_hostile(api, path, query, context, REACHING_A_QUERY, REACHING_A_QUERY)


# -- one caller against the others: what one player may hold open at a table --------------
#
# A player with money in one round once opened 100 disputes over it, and the table took
# no more, from anyone; another filled the table's 1,000 open bets with offers of 10, and
# no round could be bet. Each cap below is one player's, and leaves the others their room.


def _table_of_three(api: Api) -> Any:
    from tests.api.disputekit import seated

    return seated(api)  # t1, english: ann casts; bob and cat seated; deposits of 1000


def _nick_round(night: Any, layer: str = "bob") -> None:
    from tests.api.gamekit import bet_id

    laid = bet_id(night.do(layer, "lays", {"player": layer, "amount": 5}), "StakeLaid")
    night.do("ann", "covers", {"bets": [laid]})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 3, "die2": 4})


def _dispute(night: Any, who: Any, round: int) -> Any:
    client = night._client(who)
    return client.post(f"/tables/t1/rounds/{round}/disputes", json={"claim": "misread"})


def test_one_player_cannot_close_a_table_to_disputes(api: Api) -> None:
    from engine.disputes import MAX_DISPUTES_PER_CLAIMANT

    night = _table_of_three(api)
    for _ in range(MAX_DISPUTES_PER_CLAIMANT + 1):
        _nick_round(night)
    assert _dispute(night, "bob", 1).status_code == 201
    again = _dispute(night, "bob", 1)
    assert _problem(again, 422)["type"] == "urn:hazard:rule:already-disputed"
    for number in range(2, MAX_DISPUTES_PER_CLAIMANT + 1):
        assert _dispute(night, "bob", number).status_code == 201
    version = night.state()["version"]
    over = _dispute(night, "bob", MAX_DISPUTES_PER_CLAIMANT + 1)
    assert _problem(over, 422)["type"] == "urn:hazard:rule:too-many-own-disputes"
    assert night.state()["version"] == version  # nothing written
    # Everyone else disputes the round bob is still refused: ann (the caster, who had
    # money in it), the setter and the croupier.
    for who in ("ann", night.bank, night.croupier):
        assert _dispute(night, who, 1).status_code == 201


def test_one_player_cannot_stop_the_betting(api: Api) -> None:
    from engine.betting import MAX_BETS_PER_PLAYER

    night = _table_of_three(api)
    offer = {
        "player": "cat",
        "proposition": {"kind": "next-total", "totals": [12]},
        "backs": True,
        "stake": 1,
        "asks": 1,
    }
    for _ in range(MAX_BETS_PER_PLAYER):
        night.do("cat", "side-bets", offer)
    detail = night.refused("cat", "side-bets", offer, rule="too-many-own-bets")
    assert f"holds {MAX_BETS_PER_PLAYER} open bets and offers" in detail
    # The caster's stake, a lay, its cover and the setter's offer all still go on.
    night.do("ann", "stakes", {"amount": 10})
    night.do("bob", "lays", {"player": "bob", "amount": 10})
    night.do("ann", "covers", {})
    night.do(night.bank, "side-bets", {**offer, "player": "setter"})
    assert len(night.open_bets()) == MAX_BETS_PER_PLAYER + 3


# -- every answer bounded by the size of what it is about -----------------------------------
#
# A throw that closed a round of 1,000 bets answered 414 KB, and a replay page of 500 steps
# 21.8 MB: each step carried every open bet. A write answers a page of its events, and
# a replay's step the bets its event touched, each with a count and where to read the rest.

ANSWER_BOUND = 64 * 1024
"""Bytes: the most an answer about one write, or one step, may hold here."""


def _many_offers(night: Any, players: tuple[str, ...] = ("bob",)) -> int:
    """Each of `players` offers a player's cap of next-total bets (all untaken): the
    table's next throw voids them all. Their number."""
    from engine.betting import MAX_BETS_PER_PLAYER

    for player in players:
        offer = {
            "player": player,
            "proposition": {"kind": "next-total", "totals": [12]},
            "backs": True,
            "stake": 1,
            "asks": 1,
        }
        for _ in range(MAX_BETS_PER_PLAYER):
            night.do(player, "side-bets", offer)
    return MAX_BETS_PER_PLAYER * len(players)


def test_a_write_that_closes_many_bets_answers_a_page_of_its_events(api: Api) -> None:
    from ledger.service import WRITE_EVENTS

    night = _table_of_three(api)
    offers = _many_offers(night)
    night.do(night.croupier, "main", {"main": 7})
    response = night.croupier.post("/tables/t1/throws", json={"die1": 2, "die2": 4})
    assert response.status_code == 201
    assert len(response.data) < ANSWER_BOUND
    answer = response.get_json()
    positions = answer["receipt"]["positions"]
    assert answer["event_count"] == len(positions) == offers + 1  # the throw, every void
    assert [e["position"] for e in answer["events"]] == positions[:WRITE_EVENTS]
    # The rest: the table's replay from the last event shown, page by page.
    assert answer["next_events"] == f"/tables/t1/replay?after={positions[WRITE_EVENTS - 1]}"
    rest: list[int] = []
    link = answer["next_events"]
    while link is not None and len(rest) < len(positions) - WRITE_EVENTS:
        page = night.auditor.ok("get", link)
        rest += [step["position"] for step in page["steps"]]
        link = page["next_after"] and f"/tables/t1/replay?after={page['next_after']}"
    assert rest[: len(positions) - WRITE_EVENTS] == positions[WRITE_EVENTS:]
    assert (
        night.auditor.ok("get", "/settlements?table=t1&round=1&limit=500")["items"][offers - 1][
            "position"
        ]
        == positions[-1]
    )


def test_a_replay_step_carries_the_bets_its_event_touched_not_every_open_bet(api: Api) -> None:
    night = _table_of_three(api)
    offers = _many_offers(night)
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 2, "die2": 4})
    response = night.auditor.get("/tables/t1/replay?limit=500")
    assert response.status_code == 200
    page = response.get_json()
    assert len(response.data) < ANSWER_BOUND * 8  # 500 steps, none of them every open bet
    last_offer = max(
        (s for s in page["steps"] if s["type"] == "SideBetOffered"), key=lambda s: s["version"]
    )
    state = last_offer["state"]
    assert state["open_bet_count"] == offers
    assert [b["id"] for b in state["open_bets"]] == [last_offer["payload"]["bet_id"]]
    # The other open bets of that moment: the table's state as of the step, a page at a time.
    assert state["next_after"] == 0
    as_of = night.auditor.ok("get", f"/tables/t1?as_of={last_offer['position']}&limit=500")
    assert len(as_of["open_bets"]) == as_of["open_bet_count"] == offers
    throw = next(s for s in page["steps"] if s["type"] == "DiceThrown" and s["version"] > 1)
    # The throw decided every offer: a page of its settlements, and how many there are.
    assert len(throw["settlements"]) <= 50 < throw["settlement_count"] == offers
    assert len(json.dumps(throw)) < ANSWER_BOUND


# -- recall: a round of many throws, and each bet's net off an index ------------------------


def test_recall_lists_a_rounds_last_throws_and_counts_the_rest(api: Api) -> None:
    """A round of 300,000 throws answered 29.5 MB: recall lists the last RECALL_THROWS
    throws of a round, says how many it left out, and where to read them (the round's
    replay), as last-game-recall rules allow for games of many steps."""
    from ledger.audit.recall import RECALL_BETS, RECALL_THROWS

    night = _table_of_three(api)
    night.do("ann", "stakes", {"amount": 10})
    night.do(night.croupier, "main", {"main": 7})
    offer = {"player": "bob", "proposition": {"kind": "next-total", "totals": [12]}}
    offers = RECALL_BETS + 5  # untaken, voided by the next throw: bets of the round too
    for _ in range(offers):
        night.do("bob", "side-bets", {**offer, "backs": True, "stake": 1, "asks": 1})
    night.do(night.croupier, "throws", {"die1": 2, "die2": 4})  # the chance: 6
    many = RECALL_THROWS + 10
    for _ in range(many - 2):
        night.do(night.croupier, "throws", {"die1": 4, "die2": 4})  # 8: neither
    night.do(night.croupier, "throws", {"die1": 3, "die2": 3})  # the chance: ann wins
    rounds = night.players["ann"].ok("get", "/players/ann/recall")["rounds"]
    table = night.croupier.ok("get", "/tables/t1/recall")["rounds"]
    for recalled in (rounds[0], table[0]):
        throws = recalled["throws"]
        assert len(throws) == RECALL_THROWS
        assert (throws[-1]["die1"], throws[-1]["die2"]) == (3, 3)  # the last ones, in order
        assert [t["version"] for t in throws] == sorted(t["version"] for t in throws)
        assert recalled["throw_count"] == many
        assert recalled["earlier_throws"] == "/tables/t1/rounds/1/replay"
        assert {"account": "player:ann", "amount": 10} in recalled["won"]
    # The round's bets, likewise: the last RECALL_BETS, how many, and where the rest are.
    bets = table[0]["bets"]
    assert len(bets) == RECALL_BETS and table[0]["bet_count"] == offers + 1
    assert bets[-1]["kind"] == "caster" and bets[-1]["net"] == {"player:ann": 10, "setter": -10}
    assert table[0]["earlier_bets"] == "/settlements?table=t1&round=1"
    assert rounds[0]["bet_count"] == 1 and rounds[0]["earlier_bets"] is None  # ann's own
    # The throws left out are the round's replay's first ones.
    steps = night.auditor.ok("get", "/tables/t1/rounds/1/replay?limit=500")["steps"]
    thrown = [s["version"] for s in steps if s["type"] == "DiceThrown"]
    assert len(thrown) == many and thrown[-RECALL_THROWS:] == [t["version"] for t in throws]


def _plan(conn: Any, query: Any) -> str:
    """The database's plan for `query`, as text."""
    sql = str(query.compile(conn, compile_kwargs={"literal_binds": True}))
    if conn.dialect.name == "sqlite":
        return " ".join(str(r[-1]) for r in conn.execute(sa.text("EXPLAIN QUERY PLAN " + sql)))
    conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
    return " ".join(str(r[0]) for r in conn.execute(sa.text("EXPLAIN " + sql)))


def test_a_bets_net_in_recall_is_read_off_an_index(api: Api) -> None:
    """Each bet's net was a query on postings by position, which no index served: 145 ms
    a bet at 1.57M postings. It reads the bet's escrow's postings by account, which the
    (account, position, id) index serves."""
    from ledger.books.auditreads import net_query

    query = net_query("escrow:t1:b9", [12, 14, 15])
    with api.book.store.engine.connect() as conn:
        plan = _plan(conn, query)
    if api.book.store.engine.dialect.name == "sqlite":
        assert "USING INDEX ix_postings_account_position" in plan or (
            "USING COVERING INDEX ix_postings_account_position" in plan
        ), plan
        assert "SCAN postings" not in plan, plan
    else:
        assert "ix_postings_account_position" in plan and "Index Cond" in plan, plan
        assert "account" in plan.split("Index Cond", 1)[1], plan


# -- HTTP: media types, heavy reads (issue 22, items 7 and 10a) --------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/vnd.foo+json", "application/problem+json", "application/json-patch+json"],
)
def test_a_body_sent_as_another_json_type_is_a_415(sqlite_api: Api, content_type: str) -> None:
    """Regression: webargs takes any `application/*+json` as JSON, so a body sent as
    `application/vnd.foo+json` or `application/problem+json` made a player (201),
    although the contract says anything but `application/json` is a 415."""
    bank = sqlite_api.client()
    before = event_count(sqlite_api)
    answer = bank.post("/players", data=b'{"name": "ann"}', headers={"Content-Type": content_type})
    problem = _problem(answer, 415, what=content_type)
    assert problem["type"] == PREFIX + "unsupported-media-type"
    assert f"this request's Content-Type is {content_type}" in problem["detail"]
    assert event_count(sqlite_api) == before


def _statement_reader(api: Api) -> Client:
    """ann, with money moved so that her statement has lines, and her own token."""
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    for _ in range(3):
        bank.ok("post", "/players/ann/deposits", {"amount": 100})
    return api.client("player", "ann")


def _served(answer: Any) -> int:
    """The status of an answer read to its end and closed (a stream holds its read)."""
    with answer:
        answer.get_data()
    return int(answer.status_code)


def _refused(answer: Any, status: int, kind: str) -> None:
    problem = answer.get_json(silent=True)
    assert answer.status_code == status, (answer.status_code, answer.data[:300])
    assert answer.mimetype == "application/problem+json"
    assert problem["type"] == PREFIX + kind, problem
    assert answer.headers["Retry-After"].isdigit(), answer.headers


def test_one_token_runs_two_heavy_reads_at_once_on_every_server(api: Api) -> None:
    """Regression: sixteen exports of one player's own statement at once were all
    served, and pushed everyone's p50 to 3.6 s. A token's third heavy read (an export
    whose stream is still being read counts) is a 429 with Retry-After, here and on
    another server of the same database; another token's is served; and as one ends,
    the next is taken."""
    ann = _statement_reader(api)
    auditor = api.client("auditor", "audrey")
    held = [ann.get("/export?player=ann", buffered=False) for _ in range(2)]
    assert [r.status_code for r in held] == [200, 200]
    _refused(ann.get("/export?player=ann"), 429, "too-many-requests")
    _refused(ann.get("/players/ann/recall"), 429, "too-many-requests")
    assert ann.get("/players/ann/balance").status_code == 200  # a light read is not held
    assert _served(auditor.get("/export?player=ann")) == 200
    other = create_app(book=api.book, TESTING=True)  # a second server, the same database
    headers = {"Authorization": f"Bearer {ann.token}"}
    _refused(other.test_client().get("/export?player=ann", headers=headers), 429,
             "too-many-requests")  # fmt: skip
    held[0].close()  # the client went away
    assert _served(ann.get("/export?player=ann")) == 200
    assert _served(other.test_client().get("/players/ann/recall", headers=headers)) == 200
    held[1].close()


def test_a_worker_runs_so_many_heavy_reads_at_once_and_answers_the_rest(api: Api) -> None:
    """Beyond its heavy reads at once, a worker answers another 503 with Retry-After at
    once, whoever asks, and the light reads and the health endpoints go on."""
    _statement_reader(api)
    app = create_app(book=api.book, TESTING=True, HEAVY_READS_AT_ONCE=1)
    tokens = [create(api.book.store.engine, Role.AUDITOR, name) for name in ("au", "dit")]
    first, second = [Client(app.test_client(), token) for token in tokens]
    held = first.get("/export?player=ann", buffered=False)
    assert held.status_code == 200
    _refused(second.get("/export?player=ann"), 503, "overloaded")
    _refused(second.get("/tables/t1/replay"), 503, "overloaded")
    assert second.get("/players/ann/balance").status_code == 200
    assert app.test_client().get("/healthz").status_code == 200
    held.close()
    assert _served(second.get("/export?player=ann")) == 200
