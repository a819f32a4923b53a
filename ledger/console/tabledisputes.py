"""A mistake put right from the table: a round disputed from its row in the table
page's list of rounds, by the croupier, the setter or a player who had money in it. The
form is read by the API's own schema (OpenDisputeSchema: the claim, the throw entered
wrongly, the dice that should have been entered) and runs the API's own command
(ledger.commands.disputes.open_dispute), as POST /tables/{t}/rounds/{r}/disputes does;
the service's answer shows at once, and the setter decides the dispute in the office.
"""

from __future__ import annotations

from typing import Any

from flask import Response, abort, flash, redirect, render_template, request, url_for
from marshmallow import ValidationError

import engine as hz
from ledger.audit import disputes
from ledger.books import queries
from ledger.commands import Role
from ledger.commands import disputes as dispute_commands
from ledger.console import amounts
from ledger.console.table import PARTS_HEADER, _house, _htmx, _page, _parts
from ledger.console.views import _check_csrf, _fields, _int, _sent, _signed_in, blp
from ledger.service import NotFound, table_stream
from ledger.store.eventstore import Refused
from ledger.web import club
from ledger.web.disputeschemas import OpenDisputeSchema
from ledger.web.readschemas import SMALL
from ledger.web.tokens import Holder


def _round(number: int) -> int:
    if not 1 <= number <= SMALL:
        abort(404, description=f"there is no round {number}")
    return number


@blp.route("/console/tables/<table>/rounds/<int:round>/dispute", methods=["GET"])
def dispute_form(table: str, round: int) -> Any:
    """The form to dispute a round, with the round's throws to name the one mis-entered
    and the dice that should have been entered: beside the rounds list (htmx), or the
    page with it open."""
    who = _signed_in(Role.SETTER, Role.CROUPIER, Role.PLAYER)
    disputing = _disputing(table, _round(round))
    if _htmx():
        return render_template("_round_dispute.html", view={"table": table}, errors={}, **disputing)
    return _page(table, who, disputing=disputing)


def _disputing(table: str, number: int) -> dict[str, Any]:
    with queries.reading(club().store) as read:
        throws = read.round_throws(table_stream(table), number)
    if throws is None:
        abort(404, description=f"table {table!r} has no round {number}")
    return {"disputing": number, "round_throws": throws}


@blp.route("/console/tables/<table>/rounds/<int:round>/disputes", methods=["POST"])
def open_dispute(table: str, round: int) -> Any:
    """Open a dispute over a round, as POST /tables/{t}/rounds/{r}/disputes does: the
    same command (ledger.commands.disputes.open_dispute), the form read by the same
    schema (OpenDisputeSchema: the claim, the throw disputed, the dice that should have
    been entered), as the person signed in. The service answers at once."""
    who = _signed_in(Role.SETTER, Role.CROUPIER, Role.PLAYER)
    _check_csrf()
    number = _round(round)
    form = request.form
    body: dict[str, Any] = {"claim": form.get("claim", "").strip()}
    if form.get("throw"):
        body["throw"] = _int(form["throw"])
    if form.get("die1") or form.get("die2"):
        body["dice"] = [_int(form.get("die1")), _int(form.get("die2"))]
    claimant, role = dispute_commands.claimant(who)
    try:
        loaded = OpenDisputeSchema().load(body)
        dice = loaded["dice"]
        answer = dispute_commands.open_dispute(
            club(),
            table,
            who.actor,
            role,
            claimant,
            number,
            loaded["claim"],
            loaded["throw"],
            (dice[0], dice[1]) if dice is not None else None,
            key=_sent(who)["key"],
            request={"path": f"/tables/{table}/rounds/{number}/disputes", "body": loaded},
        )
    except ValidationError as exc:
        return _dispute_refused(table, who, number, _fields(exc), 422)
    except hz.RuleBroken as exc:
        said = amounts.rule_words(_house(), exc)
        return _dispute_refused(table, who, number, f"{said} (rule {exc.code})", 422)
    except NotFound as exc:
        return _dispute_refused(table, who, number, str(exc), 404)
    except Refused as exc:
        return _dispute_refused(table, who, number, str(exc), 422)
    # The command's answer is the API's, its words in minor units (and kept so for a
    # repeat of the key); the page reads it again, its words in the club's money.
    view = disputes.dispute(club(), table, answer["dispute_id"], amounts.money_words(_house()))
    answer = {**answer, "answer": view["answer"] or answer["answer"]}
    said = (
        f"Dispute {answer['dispute_id']} opened over round {number}: the setter decides it. "
        + ("The service finds the round as recorded." if answer["answer"]["matches"]
           else f"The service finds the record wrong: {answer['answer']['mismatch']}")
    )  # fmt: skip
    if _htmx():
        return _parts(table, who, said=said, opened={"round": number, **answer})
    flash(said)
    return redirect(url_for("console.table", table=table))


def _dispute_refused(table: str, who: Holder, number: int, message: str, status: int) -> Any:
    disputing = _disputing(table, number)
    if _htmx():
        html = render_template(
            "_round_dispute.html", view={"table": table}, errors={"dispute": message}, **disputing
        )
        announce = render_template("_announce.html", said=f"Refused: {message}", oob=True)
        return Response(html + announce, status=status, headers={PARTS_HEADER: "dispute"})
    return _page(table, who, status, errors={"dispute": message}, disputing=disputing)
