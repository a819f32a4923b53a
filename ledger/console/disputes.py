"""A dispute's page in the back office, and the setter's resolution from it.

The page shows what GET /tables/{t}/disputes/{id} reads (ledger.audit.disputes.dispute):
the claim; the service's answer, the round derived again from its events; the what-if,
the round played again with the dice claimed; and the adjustments a correction to them
would post. Beside it, what voiding the round would post, decided as the resolution
decides it and written nowhere (ledger.commands.disputes.preview_resolution).

The setter upholds, voids or corrects with a reason. The form is read by the API's own
schema (ResolveDisputeSchema) and, like the office's money, is first answered with what
would be written, to confirm; confirmed, it runs the API's command
(ledger.commands.disputes.resolve_dispute) with the same values POST
/tables/{t}/disputes/{id}/resolution sends it, the form's key scoped to the token and
the table's version as If-Match: the events written are the API's, and a confirmation
sent twice writes once.
"""

from __future__ import annotations

import secrets
from typing import Any

from flask import abort, redirect, render_template, request, url_for
from marshmallow import ValidationError

from engine.errors import RuleBroken
from ledger.audit import disputes
from ledger.commands import Role, Sent
from ledger.commands.disputes import preview_resolution, resolve_dispute
from ledger.console import amounts
from ledger.console.office import house, keep, kept, where
from ledger.console.views import _check_csrf, _fields, _int, _sent, _signed_in, blp
from ledger.service import NotFound, StaleVersion
from ledger.store.eventstore import Refused
from ledger.web import club
from ledger.web.disputeschemas import ResolveDisputeSchema
from ledger.web.schemas import TableWriteHeadersSchema
from ledger.web.tokens import Holder

VERBS = {
    "upheld": "uphold the record",
    "voided": "void the round",
    "corrected": "correct the throw",
}


@blp.route("/console/office/disputes/<table>/<dispute_id>", methods=["GET"])
def dispute(table: str, dispute_id: str) -> Any:
    """A dispute waiting (or decided): the claim, the answer, the what-if, what each
    resolution would post; for the setter, the resolution's form."""
    who = _signed_in(Role.SETTER, Role.AUDITOR)
    step, said = kept(
        f"dispute:{table}/{dispute_id}"
    )  # the resolution's receipt, after its redirect
    return _page(who, table, dispute_id, step=step, said=said)


def _page(
    who: Holder,
    table: str,
    dispute_id: str,
    *,
    step: dict[str, Any] | None = None,
    form: dict[str, Any] | None = None,
    said: str = "",
    status: int = 200,
) -> Any:
    try:
        found = disputes.dispute(club(), table, dispute_id, amounts.money_words(house()))
    except NotFound as exc:
        abort(404, description=str(exc))
    version = club().state(table).version
    void: dict[str, Any] = {}
    if found["status"] == "open":
        try:
            void["posts"] = preview_resolution(club(), table, dispute_id, "voided", "a preview")
        except RuleBroken as exc:
            void["refused"] = f"{amounts.rule_words(house(), exc)} ({exc.code})"
    shown = {
        "who": who,
        "d": found,
        "version": version,
        "void": void,
        "step": step,
        "form": _defaults(found, form or {}),
    }
    if request.headers.get("HX-Request") == "true":
        html = render_template("_dispute.html", **shown)
        return html.strip() + render_template("_announce.html", said=said, oob=True), status
    return render_template("dispute.html", said=said, **shown), status


def _defaults(found: dict[str, Any], form: dict[str, Any]) -> dict[str, Any]:
    """The resolution form's values: as sent, else a correction to the claim's dice."""
    dice = found.get("dice") or [None, None]
    return {
        "resolution": form.get("resolution", ""),
        "reason": form.get("reason", ""),
        "throw": form.get("throw", found.get("throw") or ""),
        "die1": str(form.get("die1", dice[0] or "")),
        "die2": str(form.get("die2", dice[1] or "")),
    }


@blp.route("/console/office/disputes/<table>/<dispute_id>/resolution", methods=["POST"])
def resolve(table: str, dispute_id: str) -> Any:
    """The setter's resolution: first what it would post, to confirm; with
    `confirmed=yes`, POST /tables/{t}/disputes/{id}/resolution's command."""
    who = _signed_in(Role.SETTER)
    _check_csrf()
    form = request.form.to_dict()
    sent_body: dict[str, Any] = {
        "resolution": form.get("resolution", ""),
        "reason": form.get("reason", "").strip(),
    }
    # Only a correction names a throw and dice, but the form draws them for every
    # resolution (filled from the claim): what it sends is read by the schema all the
    # same, so that a value no throw or die could be is refused, not passed over.
    corrected = form.get("resolution") == "corrected"
    throw, die1, die2 = (form.get(name, "") for name in ("throw", "die1", "die2"))
    if corrected or throw.strip():
        sent_body["throw"] = _int(throw)
    if corrected or die1.strip() or die2.strip():
        sent_body["dice"] = [_int(die1), _int(die2)]
    try:
        body = ResolveDisputeSchema().load(sent_body)
        sent = _sent(who, TableWriteHeadersSchema)
    except ValidationError as exc:
        return _refused(who, table, dispute_id, form, _fields(exc), 422)
    if not corrected:
        body = {**body, "throw": None, "dice": None}
    dice = (body["dice"][0], body["dice"][1]) if body["dice"] else None
    values = (body["resolution"], body["reason"], body["throw"], dice)
    try:
        if form.get("confirmed") != "yes":
            _current(table, sent)
            posts = preview_resolution(club(), table, dispute_id, *values)
            step = _confirmation(body, posts, form)
            return _page(who, table, dispute_id, step=step, form=form, said=step["said"])
        answer = resolve_dispute(
            club(),
            table,
            who.actor,
            dispute_id,
            *values,
            key=sent["key"],
            if_match=sent["if_match"],
            # As the API's route fingerprints its request, so that a key is one write.
            request={"path": f"/tables/{table}/disputes/{dispute_id}/resolution", "body": body},
        )
    except StaleVersion as exc:
        message = (
            f"The table has moved on since this page was drawn (it is at version "
            f"{exc.current}): look again at what the resolution would post, then confirm."
        )
        return _refused(who, table, dispute_id, form, message, 409)
    except RuleBroken as exc:
        said = amounts.rule_words(house(), exc)
        return _refused(who, table, dispute_id, form, f"{said} (rule {exc.code})", 422)
    except NotFound as exc:
        abort(404, description=str(exc))
    except Refused as exc:  # the key used before for another resolution
        return _refused(who, table, dispute_id, form, str(exc), 422)
    verb = VERBS[body["resolution"]]
    resolved = f"Dispute {dispute_id} resolved: {body['resolution']}."
    said = f"{resolved} Receipt: {where(_positions(answer))}."
    step = {
        "kind": "receipt",
        "sentence": f"You chose to {verb}.",
        "positions": _positions(answer),
        "version": answer.get("version"),
        "checkpoint": (answer.get("receipt") or {}).get("checkpoint"),
    }
    if request.headers.get("HX-Request") == "true":
        return _page(who, table, dispute_id, step=step, said=said)
    keep(f"dispute:{table}/{dispute_id}", step, said)
    return redirect(url_for("console.dispute", table=table, dispute_id=dispute_id) + "#resolution")


def _current(table: str, sent: Sent) -> None:
    """StaleVersion if the form was drawn before the table moved on: what the setter
    reviews is what the page they decided on showed, and its confirmation would be
    refused as stale anyway."""
    current, drawn = club().state(table).version, sent.get("if_match")
    if drawn is not None and drawn != current:
        raise StaleVersion(drawn, current)


def _positions(answer: dict[str, Any]) -> list[int]:
    receipt = answer.get("receipt") or {}
    return list(receipt.get("positions") or [e["position"] for e in answer.get("events", [])])


def _confirmation(
    body: dict[str, Any], posts: list[dict[str, Any]], form: dict[str, Any]
) -> dict[str, Any]:
    """What the setter confirms: the resolution, its reason, and what it would post."""
    verb = VERBS[body["resolution"]]
    if body["resolution"] == "corrected":
        verb += f" at version {body['throw']} to {body['dice'][0]} + {body['dice'][1]}"
    moved = "nothing moves" if not posts else f"{len(posts)} adjustment(s) are posted"
    return {
        "kind": "confirm",
        "verb": verb,
        "posts": posts,
        "body": body,
        "key": form.get("key") or secrets.token_urlsafe(16),
        "version": form.get("version", ""),
        "said": f"Confirm: {verb}; {moved}.",
    }


def _refused(
    who: Holder, table: str, dispute_id: str, form: dict[str, Any], message: str, status: int
) -> Any:
    step = {"kind": "refused", "message": message}
    return _page(
        who, table, dispute_id, step=step, form=form, said=f"Refused: {message}", status=status
    )
