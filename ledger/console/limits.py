"""A player's limits and breaks in the console: the player's own page (/console/me/
limits) and the setter's for a player at their request (/console/office/players/
<name>/limits), one template, whose forms run ledger.commands.limits as the API's
routes do; and the reality check the player's page shows and refreshes at the club's
interval (HAZARD_REALITY_CHECK minutes): their time at the tables this evening and
their net.

Amounts are typed in the club's currency (ledger.house.House.parse); a refusal is said
beside the form that sent it, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from flask import (
    current_app,
    flash,
    get_flashed_messages,
    redirect,
    render_template,
    request,
    url_for,
)
from marshmallow import ValidationError

from ledger.books.limits import WORDS
from ledger.commands import Role
from ledger.commands import limits as commands
from ledger.console.views import _check_csrf, _sent, _signed_in, blp
from ledger.house import BadAmount, House
from ledger.service import Forbidden, NotFound
from ledger.store.eventstore import Refused
from ledger.store.limits_events import BREAK_KINDS, LIMIT_KINDS
from ledger.web import club
from ledger.web.tokens import Holder


def _house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


@blp.route("/console/me/limits", methods=["GET"])
def my_limits() -> Any:
    who = _signed_in(Role.PLAYER)
    return _page(who, who.name, {})


@blp.route("/console/office/players/<name>/limits", methods=["GET"])
def player_limits(name: str) -> Any:
    """The setter's page for a player's limits, set at the player's request."""
    who = _signed_in(Role.SETTER, Role.AUDITOR)
    return _page(who, name, {})


@blp.route("/console/me/reality", methods=["GET"])
def reality() -> Any:
    """The reality check alone: what the player's page swaps in at each interval."""
    who = _signed_in(Role.PLAYER)
    return render_template("_reality.html", reality=reality_of(who))


def reality_of(who: Holder) -> dict[str, Any]:
    """The signed-in player's reality check, for their page."""
    shown = commands.standing(club(), who, who.name)
    return {**shown["reality"], "every": shown["reality_check_minutes"], "break": shown["break"]}


@blp.route("/console/limits/<name>/<what>", methods=["POST"])
def change(name: str, what: str) -> Any:
    """A limit set or removed (`what` a kind of limit), or a break taken (`what`
    "break"), by the player or by the setter at their request."""
    who = _signed_in(Role.PLAYER, Role.SETTER)
    _check_csrf()
    if what not in (*LIMIT_KINDS, "break"):
        return _page(who, name, {"form": f"there is no form {what[:40]!r}"}, 404)
    try:
        key = _sent(who)["key"]
        if what == "break":
            kind = request.form.get("kind", "")
            if kind not in BREAK_KINDS:
                return _page(who, name, {what: "choose a time-out or a self-exclusion"}, 422)
            typed = request.form.get("length", "").strip()
            if not (typed.isascii() and typed.isdigit() and len(typed) <= 5):
                return _page(who, name, {what: "length: a whole number"}, 422)
            done = commands.take_break(club(), who, name, kind, int(typed), key)
            said = f"{name} is on a {kind} until {_house().when(done['until'])}."
        else:
            removed = request.form.get("remove") == "yes"
            if removed and request.form.get("amount"):
                return _page(who, name, {what: "a limit removed takes no amount"}, 422)
            limit = None if removed else _house().parse(request.form.get("amount", ""))
            done = commands.set_limit(club(), who, name, what, limit, key)
            said = _set_words(name, done, what)
    except BadAmount as exc:
        return _page(who, name, {what: f"amount: {exc}"}, 422)
    except ValidationError:  # a key of the wrong shape: what the API calls a bad header
        return _page(who, name, {what: "the form's key is not one: reload"}, 422)
    except (Forbidden, NotFound):
        raise  # another's limits, or no such player: the console's 403 or 404 page
    except Refused as exc:
        return _page(who, name, {what: str(exc)}, 422)
    flash(said)
    if who.role is Role.PLAYER:
        return redirect(url_for("console.my_limits"))
    return redirect(url_for("console.player_limits", name=name))


def _set_words(name: str, done: dict[str, Any], kind: str) -> str:
    words = WORDS[kind]
    to = "no limit" if done["limit"] is None else _house().money(done["limit"])
    at_once = done["effective_at"] == done["events"][0]["recorded_at"]
    when = "at once" if at_once else f"from {_house().when(done['effective_at'])}"
    return f"{name}'s limit on {words} is {to}, {when}."


def _page(who: Holder, name: str, errors: dict[str, str], status: int = 200) -> Any:
    shown = commands.standing(club(), who, name)
    html = render_template(
        "limits.html",
        who=who,
        name=name,
        shown=shown,
        kinds=LIMIT_KINDS,
        errors=errors,
        writable=who.role in (Role.PLAYER, Role.SETTER),
        said=" ".join(str(m) for m in get_flashed_messages()),
    )
    return html, status
