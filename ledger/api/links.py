"""OpenAPI links: how an answer's values feed the next request, in openapi.yaml.

A link says "what this operation answered names something that operation takes": the
player a POST /players created is the {name} of its deposits, the table a POST /tables
opened is the {table} of its seats, a lay's bet id is what a cover or a refusal names.
A client can follow them; schemathesis's stateful phase does
(tests/api/test_stateful_contract.py), sending sequences that reach real players,
tables, bets, rounds and disputes rather than names nothing has.

`add(doc)` writes LINKS into the success response of each source operation. Targets are
named by operationRef (`#/paths/~1players~1{name}~1balance/get`): the operations have no
operationId. A link's `requestBody` holds the fields it fills in; the rest of the body is
the client's to choose (schemathesis merges them into a body it generates).
"""

from __future__ import annotations

from typing import Any

Link = tuple[str, str, dict[str, str], dict[str, Any] | None]
"""A link's name, its target ("POST /tables/{table}/seats"), its parameters
("path.table": expression) and the body fields it fills (or None)."""

# Runtime expressions (OpenAPI 3.0 §4.7.20.4).
PLAYER = "$response.body#/player"
"""A write to a player's account answers with the player's name."""
TABLE = "$response.body#/table"
"""A write to a table answers with the table's name."""
BET = "$response.body#/events/0/payload/bet_id"
"""A write that places a bet (a stake, a lay, a side bet) appends the bet's event first."""
POSITION = "$response.body#/receipt/positions/0"
"""Every write that appends an event has a receipt: the positions it appended."""

_A_MONTH = {"path.name": PLAYER, "query.month": "2026-11"}
"""A player's statement for a month (a constant: no answer names a period)."""
_PLAYER_READS: list[Link] = [
    ("balance", "GET /players/{name}/balance", {"path.name": PLAYER}, None),
    ("statement", "GET /players/{name}/statement", {"path.name": PLAYER}, None),
    ("recall", "GET /players/{name}/recall", {"path.name": PLAYER}, None),
    ("limits", "GET /players/{name}/limits", {"path.name": PLAYER}, None),
    ("month", "GET /players/{name}/period-statement", _A_MONTH, None),
    ("month-csv", "GET /players/{name}/period-statement.csv", _A_MONTH, None),
    ("month-pdf", "GET /players/{name}/period-statement.pdf", _A_MONTH, None),
]
_PROOFS: list[Link] = [
    ("inclusion", "GET /log/proofs/inclusion", {"query.position": POSITION}, None),
    ("checkpoint", "GET /log/checkpoints/{size}", {"path.size": POSITION}, None),
    ("consistency", "GET /log/proofs/consistency", {"query.from": POSITION}, None),
    ("tlog-proof", "GET /log/proofs/tlog-proof", {"query.position": POSITION}, None),
]
"""A write's receipt: the proof that its first event is in the log (as JSON, and as a
tlog-proof file), the checkpoint of the tree it ended (its size is the position), and
that today's log extends it."""
_STAKE_LIMIT = {"path.name": PLAYER, "path.kind": "stake"}
"""A player's limit on their largest stake (the kind a constant: no answer names one)."""
_ACCOUNT_WRITE: list[Link] = [
    *_PLAYER_READS,
    ("deposit", "POST /players/{name}/deposits", {"path.name": PLAYER}, None),
    ("withdraw", "POST /players/{name}/withdrawals", {"path.name": PLAYER}, None),
    ("credit-limit", "PUT /players/{name}/credit-limit", {"path.name": PLAYER}, None),
    ("stake-limit", "PUT /players/{name}/limits/{kind}", _STAKE_LIMIT, None),
    ("no-stake-limit", "DELETE /players/{name}/limits/{kind}", _STAKE_LIMIT, None),
    ("break", "POST /players/{name}/breaks", {"path.name": PLAYER}, None),
    ("seat", "POST /tables/{table}/seats", {}, {"player": PLAYER}),
    ("settlements", "GET /settlements", {"query.player": PLAYER}, None),
    *_PROOFS,
]
_TABLE_READS: list[Link] = [
    ("state", "GET /tables/{table}", {"path.table": TABLE}, None),
    ("rounds", "GET /tables/{table}/rounds", {"path.table": TABLE}, None),
    ("replay", "GET /tables/{table}/replay", {"path.table": TABLE}, None),
    ("recall", "GET /tables/{table}/recall", {"path.table": TABLE}, None),
    ("disputes", "GET /tables/{table}/disputes", {"path.table": TABLE}, None),
    ("settlements", "GET /settlements", {"query.table": TABLE}, None),
]


def _table(name: str, target: str, body: dict[str, Any] | None = None) -> Link:
    """A link to another command at the same table."""
    return (name, f"POST /tables/{{table}}/{target}", {"path.table": TABLE}, body)


_TABLE_WRITE: list[Link] = [*_TABLE_READS, *_PROOFS]
"""What any write to a table leads to."""
_SAME_PLAYER = {"player": "$request.body#/player"}
"""The player the request named, who acts again."""
SIZE = "$response.body#/size"
"""A checkpoint's tree size."""
_DISPUTE = {"path.table": TABLE, "path.dispute_id": "$response.body#/dispute_id"}
"""The dispute a POST .../disputes opened."""
_DISPUTE_AGAIN = {"path.table": TABLE, "path.dispute_id": "$request.path.dispute_id"}
"""The dispute a resolution resolved."""


def _rounds(table: str, round_: str) -> list[Link]:
    """From an answer that names a round of a table."""
    where = {"path.table": table, "path.round": round_}
    return [
        ("round", "GET /tables/{table}/rounds/{round}", where, None),
        ("round-replay", "GET /tables/{table}/rounds/{round}/replay", where, None),
        ("dispute", "POST /tables/{table}/rounds/{round}/disputes", where, None),
    ]


def _disputes(table: str) -> list[Link]:
    """From a page of disputes: its first."""
    where = {"path.table": table, "path.dispute_id": "$response.body#/items/0/dispute_id"}
    return [
        ("dispute", "GET /tables/{table}/disputes/{dispute_id}", where, None),
        ("resolve", "POST /tables/{table}/disputes/{dispute_id}/resolution", where, None),
    ]


EVENING = "$response.body#/evening"
"""An evening's opening or cash-up answers with the evening's number."""
_EVENING_WRITE: list[Link] = [
    ("night-report", "GET /evenings/{number}", {"path.number": EVENING}, None),
    ("night-report-pdf", "GET /evenings/{number}.pdf", {"path.number": EVENING}, None),
    ("evenings", "GET /evenings", {}, None),
    *_PROOFS,
]


LINKS: dict[str, list[Link]] = {
    "POST /evenings": [*_EVENING_WRITE, ("cash-up", "POST /evenings/cash-up", {}, None)],
    "POST /evenings/cash-up": [*_EVENING_WRITE, ("open-next", "POST /evenings", {}, None)],
    "POST /players": _ACCOUNT_WRITE,
    "POST /players/{name}/deposits": _ACCOUNT_WRITE,
    "POST /players/{name}/withdrawals": _ACCOUNT_WRITE,
    "PUT /players/{name}/credit-limit": _ACCOUNT_WRITE,
    "POST /tables": [
        *_TABLE_WRITE,
        _table("seat", "seats"),
        _table("close", "close"),
        ("export", "GET /export", {"query.table": TABLE}, None),
        ("dice-report", "GET /reports/dice", {"query.table": TABLE}, None),
    ],
    "POST /tables/{table}/seats": [
        *_TABLE_WRITE,
        _table("seat", "seats"),
        _table("cast", "casts", _SAME_PLAYER),
        _table("leave", "leave", _SAME_PLAYER),
        ("balance", "GET /players/{name}/balance", {"path.name": "$request.body#/player"}, None),
    ],
    "POST /tables/{table}/casts": [
        *_TABLE_WRITE,
        _table("cast", "casts"),
        _table("stake", "stakes"),
        _table("main", "main"),
    ],
    "POST /tables/{table}/stakes": [
        *_TABLE_WRITE,
        _table("lay", "lays"),
        _table("everyone-lays", "lays/everyone"),
        _table("side-bet", "side-bets"),
        _table("main", "main"),
        ("bet-settlements", "GET /settlements", {"query.bet": BET}, None),
    ],
    "POST /tables/{table}/lays": [
        *_TABLE_WRITE,
        _table("lay", "lays"),
        _table("cover", "covers", {"bets": [BET]}),
        _table("refuse", "refusals", {"bet": BET}),
        _table("odds", "odds", _SAME_PLAYER),
    ],
    "POST /tables/{table}/lays/everyone": [
        *_TABLE_WRITE,
        _table("cover", "covers"),
        _table("main", "main"),
    ],
    "POST /tables/{table}/covers": [*_TABLE_WRITE, _table("main", "main")],
    "POST /tables/{table}/refusals": [*_TABLE_WRITE, _table("main", "main")],
    "POST /tables/{table}/side-bets": [
        *_TABLE_WRITE,
        _table("accept", "side-bets/accept", {"bet": BET}),
        _table("withdraw", "side-bets/withdraw", {"bet": BET, **_SAME_PLAYER}),
    ],
    "POST /tables/{table}/side-bets/accept": _TABLE_WRITE,
    "POST /tables/{table}/side-bets/withdraw": _TABLE_WRITE,
    "POST /tables/{table}/main": [*_TABLE_WRITE, _table("throw", "throws")],
    "POST /tables/{table}/odds": [*_TABLE_WRITE, _table("throw", "throws")],
    "POST /tables/{table}/throws": [
        *_TABLE_WRITE,
        _table("throw", "throws"),
        _table("void", "void-throws"),
        _table("odds", "odds"),
        _table("pass", "pass"),
        _table("stake", "stakes"),
    ],
    "POST /tables/{table}/void-throws": [*_TABLE_WRITE, _table("throw", "throws")],
    "POST /tables/{table}/pass": [*_TABLE_WRITE, _table("cast", "casts")],
    "POST /tables/{table}/leave": [*_TABLE_WRITE, _table("seat", "seats", _SAME_PLAYER)],
    "POST /tables/{table}/close": _TABLE_READS,
    "GET /tables/{table}": _rounds(TABLE, "$response.body#/round"),
    "GET /tables/{table}/rounds": _rounds("$request.path.table", "$response.body#/items/0/round"),
    "POST /tables/{table}/rounds/{round}/disputes": [
        *_TABLE_WRITE,
        ("dispute", "GET /tables/{table}/disputes/{dispute_id}", _DISPUTE, None),
        ("resolve", "POST /tables/{table}/disputes/{dispute_id}/resolution", _DISPUTE, None),
        ("open-disputes", "GET /disputes", {"query.status": "open"}, None),
    ],
    "POST /tables/{table}/disputes/{dispute_id}/resolution": [
        *_TABLE_WRITE,
        ("dispute", "GET /tables/{table}/disputes/{dispute_id}", _DISPUTE_AGAIN, None),
    ],
    "GET /tables/{table}/disputes": _disputes("$request.path.table"),
    "GET /disputes": _disputes("$response.body#/items/0/table"),
    "GET /log/checkpoint": [
        ("checkpoint", "GET /log/checkpoints/{size}", {"path.size": SIZE}, None),
        ("consistency", "GET /log/proofs/consistency", {"query.from": SIZE}, None),
        ("inclusion", "GET /log/proofs/inclusion", {"query.size": SIZE}, None),
        ("cosigned", "GET /log/cosigned", {"query.size": SIZE}, None),
        ("gossip", "POST /log/gossip", {}, {"note": "$response.body#/checkpoint"}),
    ],
    "GET /audit/head": [
        ("events", "GET /events", {"query.stream": "$response.body#/stream"}, None),
        (
            "inclusion",
            "GET /log/proofs/inclusion",
            {"query.position": "$response.body#/position"},
            None,
        ),
    ],
}


def reference(operation: str) -> str:
    """The operationRef of "METHOD /path": a JSON pointer into the document."""
    method, path = operation.split(" ")
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method.lower()


def add(doc: dict[str, Any]) -> None:
    """Write LINKS into `doc`, an OpenAPI document: each source operation's success
    response gets its links, in the order LINKS gives them."""
    for source, links in LINKS.items():
        method, path = source.split(" ")
        responses = doc["paths"][path][method.lower()]["responses"]
        [status] = [status for status in responses if status.startswith("2")]
        found = responses[status].setdefault("links", {})
        for name, target, parameters, body in links:
            tmethod, tpath = target.split(" ")
            assert tmethod.lower() in doc["paths"][tpath], f"{source} links to no {target}"
            link: dict[str, Any] = {"operationRef": reference(target)}
            if parameters:
                link["parameters"] = parameters
            if body is not None:
                link["requestBody"] = body
            assert name not in found, f"{source} has two links named {name}"
            found[name] = link
