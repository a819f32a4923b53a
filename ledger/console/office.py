"""The setter's back office: players and balances, deposits, withdrawals and credit,
the tables with their exposure and takings (per table and per day, with a chart), and
the disputes waiting for a decision.

Every write is the API's own (Club.create_player, Club.account_command, as
ledger.api.players runs them), as the signed-in setter, with the form's idempotency key
read and scoped to the token as every console form's is (ledger.console.views._sent),
as the API reads and scopes an Idempotency-Key: a resubmitted form posts once. What
the office reads is ledger.books.queries'.
"""

from __future__ import annotations

from typing import Any

from flask import abort, redirect, render_template, request, url_for
from marshmallow import Schema, ValidationError

from ledger.audit import disputes
from ledger.books import disputeviews, queries
from ledger.commands import Role
from ledger.console import charts
from ledger.console.views import (
    _check_csrf,
    _fields,
    _int,
    _sent,
    _signed_in,
    _tables,
    blp,
)
from ledger.service import NotFound
from ledger.store.eventstore import Refused
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn
from ledger.web import club
from ledger.web.schemas import AmountSchema, CreditLimitSchema, PlayerSchema

DAYS = 14
"""How many of the latest days with takings the office shows."""

MONEY: dict[str, tuple[type[Deposited | Withdrawn | CreditLimitSet], type[Schema], str]] = {
    "deposit": (Deposited, AmountSchema, "amount"),
    "withdraw": (Withdrawn, AmountSchema, "amount"),
    "credit": (CreditLimitSet, CreditLimitSchema, "limit"),
}
"""Each money form: the event it records, the API's schema for its figure, the field."""


def _office(errors: dict[str, str] | None = None, status: int = 200) -> Any:
    who = _signed_in(Role.SETTER)
    with queries.reading(club().store) as read:
        people = read.players()
        taken = read.takings(DAYS)
        waiting = disputeviews.listing(read.conn, status="open", limit=200)
    tables = []
    for t in _tables():
        try:
            state = club().state(t)
        except NotFound:
            continue
        tables.append(
            {
                "table": t,
                "exposure": state.exposure(),
                "open_bets": len(state.bets),
                "net": sum(x["net"] for x in taken if x["table"] == t),
            }
        )
    by_day: dict[str, int] = {}
    for x in taken:
        by_day[x["day"]] = by_day.get(x["day"], 0) + x["net"]
    chart = charts.bars(
        [(day, net) for day, net in sorted(by_day.items())],
        title="The setter's takings per day",
    )
    return (
        render_template(
            "office.html",
            who=who,
            players=people,
            tables=tables,
            takings=taken,
            by_day=sorted(by_day.items()),
            chart=chart,
            disputes=waiting,
            errors=errors or {},
            form=request.form if request.method == "POST" else {},
        ),
        status,
    )


@blp.route("/console/office", methods=["GET"])
def office() -> Any:
    """The setter's back office."""
    return _office()


@blp.route("/console/office/players", methods=["POST"])
def create_player() -> Any:
    who = _signed_in(Role.SETTER)
    _check_csrf()
    try:
        body = PlayerSchema().load({"name": request.form.get("name", "").strip()})
        club().create_player(body["name"], who.actor, _sent(who)["key"])
    except ValidationError as exc:
        return _office({"create": _fields(exc)}, 422)
    except Refused as exc:  # AlreadyExists, InvalidName
        return _office({"create": str(exc)}, 409 if "already" in str(exc) else 422)
    return redirect(url_for("console.office"))


@blp.route("/console/office/players/<name>/<what>", methods=["POST"])
def money(name: str, what: str) -> Any:
    """A deposit, a withdrawal or a credit limit, from the player's row's form."""
    who = _signed_in(Role.SETTER)
    _check_csrf()
    if what not in MONEY:
        return _office({f"{what}:{name}": f"there is no form {what!r}"}, 404)
    kind, schema, field = MONEY[what]
    control = f"{what}:{name}"
    try:
        body = schema().load({field: _int(request.form.get(field, ""))})
        club().account_command(name, kind, body[field], who.actor, _sent(who)["key"])
    except ValidationError as exc:
        return _office({control: _fields(exc)}, 422)
    except NotFound as exc:
        return _office({control: str(exc)}, 404)
    except Refused as exc:  # an overdraft, credit in use, out of range
        return _office({control: str(exc)}, 422)
    return redirect(url_for("console.office"))


@blp.route("/console/office/disputes/<table>/<dispute_id>", methods=["GET"])
def dispute(table: str, dispute_id: str) -> Any:
    """A dispute waiting (or decided): its claim, its round, its adjustments, read as
    GET /tables/{t}/disputes/{id} reads it (an id that is not one names nothing)."""
    who = _signed_in(Role.SETTER, Role.AUDITOR)
    try:
        found = disputes.dispute(club(), table, dispute_id)
    except NotFound as exc:
        abort(404, description=str(exc))
    return render_template("dispute.html", who=who, d=found)
