"""The club's reports of what was not play: the exceptions report (voids, corrections,
adjustments), the authentication report (tokens, sign-ins) and the log of significant
events, each for a period, read from the events themselves.

None keeps a table of its own: the log of significant events is one small stream
(`club:significant`: a flood is one event with a count), and the exceptions are the
tables' own events, read by type. A period is [since, until) in the times the store
records (UTC); a page holds at most PAGE rows, and says where the next begins.

`token_differences` is the deep check's part: the tokens table against the token
events (a row no event made, a revocation no event recorded, an event with no row).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ledger.store import schema
from ledger.store import tokens as stored
from ledger.store.eventstore import decode_row
from ledger.store.schema import events
from ledger.store.significant_events import STREAM
from ledger.store.vocabulary import TABLE_PREFIX

PAGE = 500
"""The most rows a report's page holds; `next_after` reads on from where it stopped."""

EXCEPTIONS = ("ThrowVoided", "BetVoided", "DisputeResolved", "BetAdjusted")
"""The table events the exceptions report lists: every void, correction and adjustment."""

AUTHENTICATION = ("TokensFound", "TokenCreated", "TokenRevoked", "SignIns")

PLAYER_LIMITS = ("LimitSet", "BreakTaken")
"""A player's limits changed, or a break taken: events on the player's account stream
(ledger.store.limits_events), listed in the log of significant events with the limit
before (the last one set of its kind) and after."""


@dataclass(frozen=True, slots=True)
class Period:
    """[since, until), as stored times (`2026-11-27T09:00:00.000000Z`); None: open."""

    since: str | None = None
    until: str | None = None


@dataclass(slots=True)
class Page:
    """A report's rows, and the position to read on from (None: the last page)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    next_after: int | None = None


def _query(
    conn: sa.Connection,
    where: Sequence[sa.ColumnElement[bool] | sa.TextClause],
    period: Period,
    after: int,
    limit: int,
    by_version: bool = False,
) -> list[Any]:
    """A page of the events `where` picks in `period` after position `after`, in
    position order; `by_version` for one stream's, whose versions run in the same order
    along its own key (no sort of what it picks)."""
    e = events.c
    conditions = [*where, e.position > after]
    if period.since is not None:
        conditions.append(e.recorded_at >= period.since)
    if period.until is not None:
        conditions.append(e.recorded_at < period.until)
    query = (
        sa.select(e.position, e.stream, e.version, e.type, e.payload, e.actor, e.recorded_at)
        .where(*conditions)
        .order_by(e.version if by_version else e.position)
        .limit(limit + 1)
    )
    return list(conn.execute(query))


def _paged(found: list[Any], limit: int, rows: Iterable[dict[str, Any]]) -> Page:
    listed = list(rows)
    more = len(found) > limit
    return Page(listed, found[limit - 1].position if more else None)


def stream_events(conn: sa.Connection, types: Sequence[str] | None = None) -> list[Any]:
    """The events of `club:significant` (of `types` only, if given), in order."""
    e = events.c
    query = sa.select(e.position, e.type, e.schema_version, e.version, e.payload)
    query = query.where(e.stream == STREAM)
    if types is not None:
        query = query.where(e.type.in_(types))
    rows = conn.execute(query.order_by(e.version))
    return [decode_row(row) for row in rows]


# -- the exceptions report -------------------------------------------------------------------


def exceptions(conn: sa.Connection, period: Period, after: int = 0, limit: int = PAGE) -> Page:
    """Every void, correction and adjustment at the tables in `period`: what it was
    before and after, who did it, and why."""
    e = events.c
    where: list[sa.ColumnElement[bool] | sa.TextClause] = [
        sa.text(schema.EXCEPTIONS),
        e.stream.like(TABLE_PREFIX + "%"),
    ]
    found = _query(conn, where, period, after, limit)
    return _paged(found, limit, (_exception(conn, row) for row in found[:limit]))


def _exception(conn: sa.Connection, row: Any) -> dict[str, Any]:
    payload = json.loads(row.payload)
    base = {
        "position": row.position,
        "table": row.stream.removeprefix(TABLE_PREFIX),
        "recorded_at": row.recorded_at,
        "actor": row.actor,
        "moves": [
            {"source": t["source"], "target": t["target"], "amount": int(t["amount"])}
            for t in payload.get("transfers", ())
        ],
    }
    match row.type:
        case "ThrowVoided":
            stands = payload.get("standing")
            off = "both dice" if payload["off"] == 0 else f"die {payload['off']}"
            return base | {
                "kind": "throw voided",
                "subject": f"throw {row.version}",
                "before": "a throw that counts",
                "after": f"void: {off} off" + (f", {stands} stands" if stands else ""),
                "why": payload["reason"],
            }
        case "BetVoided":
            return base | {
                "kind": "bet voided",
                "subject": f"bet {payload['bet_id']}",
                "before": "stakes held for the bet",
                "after": "every stake returned",
                "why": payload["reason"],
            }
        case "DisputeResolved":
            return base | _resolution(conn, row.stream, payload)
        case _:  # BetAdjusted
            return base | {
                "kind": "bet adjusted",
                "subject": f"bet {payload['bet_id']} (dispute {payload['dispute_id']})",
                "before": "as paid when the round ended",
                "after": "reversed"
                if payload["adjustment"] == "reversal"
                else "made good to the corrected throw",
                "why": f"dispute {payload['dispute_id']}'s resolution ({payload['adjustment']})",
            }


def _resolution(conn: sa.Connection, stream: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A dispute's resolution: the dice the throw showed as recorded, and as ruled."""
    subject = f"dispute {payload['dispute_id']}, round {payload['round']}"
    if payload["resolution"] == "corrected":
        shown = _dice(conn, stream, payload["throw"])
        return {
            "kind": "throw corrected",
            "subject": subject + f", throw {payload['throw']}",
            "before": f"dice {shown}" if shown else "the throw as recorded",
            "after": f"dice {payload['die1']}+{payload['die2']}",
            "why": payload["reason"],
        }
    if payload["resolution"] == "voided":
        return {
            "kind": "round voided",
            "subject": subject,
            "before": "every bet of the round as paid",
            "after": "every bet of the round reversed",
            "why": payload["reason"],
        }
    return {
        "kind": "dispute upheld",
        "subject": subject,
        "before": "the round as recorded",
        "after": "unchanged",
        "why": payload["reason"],
    }


def _dice(conn: sa.Connection, stream: str, version: int | None) -> str | None:
    if version is None:
        return None
    e = events.c
    found = conn.execute(
        sa.select(e.payload).where(e.stream == stream, e.version == version)
    ).scalar()
    if found is None:
        return None
    shown = json.loads(found)
    if "die1" not in shown:
        return None
    return f"{shown['die1']}+{shown['die2']}"


# -- the authentication report and the log of significant events ---------------------------


def authentication(conn: sa.Connection, period: Period, after: int = 0, limit: int = PAGE) -> Page:
    """Tokens made and revoked, and console sign-ins and sign-outs (counted: a flood is
    one row with its count), in `period`."""
    e = events.c
    where = [e.stream == STREAM, e.type.in_(AUTHENTICATION)]
    found = _query(conn, where, period, after, limit, by_version=True)
    return _paged(found, limit, (_significant(conn, row) for row in found[:limit]))


def significant(conn: sa.Connection, period: Period, after: int = 0, limit: int = PAGE) -> Page:
    """The whole log of significant events in `period`: the club's stream, each table's
    rule set and limits as it opened (they are fixed for its life), and a player's
    limits changed (PLAYER_LIMITS, where the ledger has them).

    Three reads, each along an index of its own events (the stream's key, and the
    partial indexes of the tables' openings and of the players' limits, migrations
    0016 and 0018), a page of each at most, merged by position."""
    e = events.c
    found = sorted(
        (
            row
            for where, by_version in (
                ([e.stream == STREAM], True),
                ([e.type == "TableOpened"], False),
                ([sa.text(schema.PLAYER_LIMITS)], False),
            )
            for row in _query(conn, where, period, after, limit, by_version)
        ),
        key=lambda row: row.position,
    )[: limit + 1]
    return _paged(found, limit, (_significant(conn, row) for row in found[:limit]))


WHAT = {
    "TokensFound": "tokens found",
    "TokenCreated": "token created",
    "TokenRevoked": "token revoked",
    "SettingChanged": "setting changed",
    "WritesRefused": "writes refused",
    "TableOpened": "table opened",
    "LimitSet": "limit set",
    "BreakTaken": "break taken",
}
SIGN_INS = {"signed in": "sign-in", "refused": "sign-in refused", "signed out": "sign-out"}


def _significant(conn: sa.Connection, row: Any) -> dict[str, Any]:
    payload = json.loads(row.payload)
    what = WHAT.get(row.type, row.type)
    if row.type == "SignIns":
        what = SIGN_INS.get(payload["outcome"], what)
    out: dict[str, Any] = {
        "position": row.position,
        "recorded_at": row.recorded_at,
        "actor": row.actor,
        "what": what,
        "subject": None,
        "before": None,
        "after": None,
        "count": int(payload.get("count", 1)),
        "first_at": payload.get("first_at", row.recorded_at),
        "last_at": payload.get("last_at", row.recorded_at),
    }
    match row.type:
        case "TokenCreated" | "TokenRevoked" | "SignIns":
            token = payload.get("token")
            out["subject"] = (
                f"token {token} ({payload['role']}:{payload['name']})" if token else "no token"
            )
            if row.type == "TokenRevoked":
                out["before"], out["after"] = "live", "revoked"
        case "TokensFound":
            out["subject"] = "tokens made before this log began"
            out["after"] = f"tokens: {payload['tokens']}; of them revoked: {payload['revoked']}"
            out["count"] = len(payload["tokens"].split())
        case "SettingChanged":
            out["subject"] = payload["setting"]
            out["before"], out["after"] = payload["before"], payload["after"]
        case "WritesRefused":
            out["subject"] = "the lock timeout"
        case "TableOpened":
            out["subject"] = f"table {row.stream.removeprefix(TABLE_PREFIX)}"
            out["after"] = _table_rules(payload)
        case "LimitSet":
            out["subject"] = f"{payload['account']}: {payload['kind']}"
            out["before"] = _limit_before(conn, row, payload["kind"])
            out["after"] = f"{_limit(payload['limit'])} from {payload['effective_at']}"
        case "BreakTaken":
            out["subject"] = payload["account"]
            out["after"] = f"{payload['kind']} until {payload['until']}"
    return out


def _limit(amount: int | None) -> str:
    return "no limit" if amount is None else str(amount)


def _limit_before(conn: sa.Connection, row: Any, kind: str) -> str:
    """The limit of `kind` the account's last LimitSet before `row` set: what this one
    changes (no limit if none was ever set)."""
    e = events.c
    earlier = conn.execute(
        sa.select(e.payload)
        .where(e.stream == row.stream, e.version < row.version, e.type == "LimitSet")
        .order_by(e.version.desc())
    )
    for (payload,) in earlier:
        found = json.loads(payload)
        if found["kind"] == kind:
            return _limit(found["limit"])
    return "no limit"


def _table_rules(payload: dict[str, Any]) -> str:
    rules, limits = payload.get("rules", {}), payload.get("limits", {})
    name = rules.get("name", "custom") if isinstance(rules, dict) else "custom"
    bounds = ", ".join(f"{k} {v}" for k, v in sorted(limits.items()))
    return f"rule set {name}; limits: {bounds}"


# -- the deep check: the tokens table against the token events --------------------------------


def begun(conn: sa.Connection) -> bool:
    """Whether the log of significant events has begun: its stream has an event. It
    begins with the first token made or revoked, or the first start of `hazard serve`,
    under a ledger that keeps it; the tokens a table held before are its first event's
    (TokensFound)."""
    e = events.c
    first = conn.execute(sa.select(e.position).where(e.stream == STREAM).limit(1)).first()
    return first is not None


def token_differences(conn: sa.Connection) -> Iterator[str]:
    """What in the tokens table no token event accounts for: a row no TokenCreated made
    (nor the TokensFound that began the log), a row revoked with no TokenRevoked, a row
    live that a TokenRevoked revoked. An event whose row is gone is not one: a database
    restored from an export (`hazard import`) holds no tokens, whose rows no export
    carries, and a token lost can only refuse its holder, never let anyone in. Before
    the log has begun (`begun`), every row is older than it: nothing to hold them to."""
    if not begun(conn):
        return
    created: dict[str, int] = {}
    revoked: dict[str, int] = {}
    e = events.c
    rows = conn.execute(
        sa.select(e.position, e.type, e.payload)
        .where(e.stream == STREAM, e.type.in_(("TokensFound", "TokenCreated", "TokenRevoked")))
        .order_by(e.position)
    )
    for position, kind, text in rows:
        payload = json.loads(text)
        if kind == "TokensFound":
            created.update(dict.fromkeys(payload["tokens"].split(), position))
            revoked.update(dict.fromkeys(payload["revoked"].split(), position))
        elif kind == "TokenCreated":
            created[payload["token"]] = position
        else:
            revoked[payload["token"]] = position
    table = {row.id: row for row in stored.every(conn)}
    for token_id, row in table.items():
        if token_id not in created:
            yield f"token {token_id} ({row.role}:{row.name}) has no event that made it"
        if row.revoked_at is not None and token_id not in revoked:
            yield f"token {token_id} ({row.role}:{row.name}) is revoked with no event revoking it"
        if row.revoked_at is None and token_id in revoked:
            yield (
                f"token {token_id} ({row.role}:{row.name}) is live, but position "
                f"{revoked[token_id]} revoked it"
            )


# -- as CSV -------------------------------------------------------------------------------------

EXCEPTION_COLUMNS = (
    "position", "recorded_at", "table", "kind", "subject", "before", "after", "why", "actor",
    "moves",
)  # fmt: skip
SIGNIFICANT_COLUMNS = (
    "position", "recorded_at", "what", "subject", "before", "after", "count", "first_at",
    "last_at", "actor",
)  # fmt: skip


def as_csv(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """A report's rows as CSV (a header row, CRLF): amounts in integer minor units, times
    in UTC as recorded. A cell that a spreadsheet would run as a formula (=, +, -, @)
    is written with a quote before it: a reason typed by a croupier is not a formula."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        value = "; ".join(f"{m['source']} -> {m['target']} {m['amount']}" for m in value)
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
