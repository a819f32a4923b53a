"""The table's writes from its page: each form is the API's own write
(ledger.web.tablewrites) as the person signed in, its body read by the API's schema for
it, its key and version as the API reads Idempotency-Key and If-Match. Sent by htmx, the
answer is the table's parts (ledger.console.table) and what the write did; a refusal
is drawn beside the control that sent it, with its status, and writes nothing. Sent
without script, the page comes back by a redirect. "Everyone lays" is the API's
`lays/everyone`: the single lay's command for each seated player but the caster, in one
write, all or none.

A stake far from the table's usual size is asked about first (`_confirmation`): the
first post writes nothing, and the question's "yes" sends the same form again, with its
key, saying the amount was meant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import abort, flash, make_response, redirect, request, url_for
from marshmallow import ValidationError

import engine as hz
from ledger.books import queries
from ledger.commands import NotPermitted, Role
from ledger.console import amounts, tablewords
from ledger.console.table import STRIP, _answer, _house, _htmx, _parts, _state
from ledger.console.views import _check_csrf, _fields, _int, _my_page, _sent, _signed_in, blp
from ledger.service import Forbidden, NotFound, StaleVersion, table_stream
from ledger.store.eventstore import Busy, Refused
from ledger.web import club, tablewrites
from ledger.web.schemas import TableWriteHeadersSchema
from ledger.web.tokens import Holder

FAR = 10
"""A stake under a tenth of the table's usual stake, or over ten times it, is asked
about before it is written."""
BUSY = "The database was busy with another write: nothing was written; send it again."


def _usual(table: str, state: hz.TableState) -> int | None:
    """The table's usual stake: the median of its recent stakes; with none yet, its
    minimum if one was set (None: nothing to compare with)."""
    with queries.reading(club().store) as read:
        usual = read.last_throws(table_stream(table), STRIP).usual
    if usual is None and state.limits.min_stake > 1:
        return state.limits.min_stake
    return usual


def _money(form: Any, field: str) -> int:
    """An amount typed in the club's major units ("12.50"), as the minor units the API's
    schema takes (ledger.console.amounts)."""
    return amounts.read(_house(), form, field)


def _tapped(dice: str) -> dict[str, Any]:
    """A throw tapped on the grid of the 36 throws: its button's value, die 1 then die 2
    ("4-3"), as the API's body gives them."""
    die1, dash, die2 = dice.partition("-")
    if not dash:
        raise ValidationError({"dice": ["Two dice, die 1 then die 2, as 4-3."]})
    return {"die1": _int(die1), "die2": _int(die2)}


FORMS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "seats": lambda f: {"player": f["player"]},
    "casts": lambda f: {"player": f["player"], "die": _int(f["die"])},
    "main": lambda f: {"main": _int(f["main"])},
    "throws": lambda f: (
        {"client_seed": f["client_seed"]}
        if "client_seed" in f
        else _tapped(f["dice"])
        if "dice" in f
        else {"die1": _int(f["die1"]), "die2": _int(f["die2"])}
    ),
    "void-throws": lambda f: {
        "reason": f["reason"],
        "off": _int(f["off"]),
        **({"standing": _int(f["standing"])} if f.get("standing") else {}),
    },
    "stakes": lambda f: {"amount": _money(f, "amount")},
    "lays": lambda f: {"player": f["player"], "amount": _money(f, "amount")},
    "lays/everyone": lambda f: {"amount": _money(f, "amount")},
    # One bet, or every bet the form names (the caster's "cover all"): the covers write
    # takes a list.
    "covers": lambda f: {"bets": f.getlist("bet") or [f["bet"]]},
    "refusals": lambda f: {"bet": f["bet"]},
    "odds": lambda f: {"player": f["player"], "on": f["on"], "amount": _money(f, "amount")},
    "side-bets": lambda f: {
        "player": f["player"],
        "proposition": {
            "kind": f["kind"],
            "totals": [_int(t) for t in f.get("totals", "").replace(",", " ").split()],
        },
        "backs": f.get("backs") == "yes",
        "stake": _money(f, "stake"),
        "asks": _money(f, "asks"),
        "to": f.get("to") or None,
    },
    "side-bets/accept": lambda f: {"player": f["player"], "bet": f["bet"]},
    "pass": lambda f: {},
    "close": lambda f: {},
}
"""What each control's form gives, as the body of its API command: its amounts typed in
the club's major units, as the office takes them, and sent in minor units."""

ANSWERED_ON = ("table", "me")
"""The pages a table's form is answered on, as its `from` says: the table's own, or the
player's (templates/me.html; a form without `from` is the player's page's)."""

AMOUNTS = {
    "stakes": "amount",
    "lays": "amount",
    "lays/everyone": "amount",
    "odds": "amount",
    "side-bets": "stake",
}
"""The writes that stake money, and the field that says how much."""


@blp.route("/console/tables/<table>/do/<path:rule>", methods=["POST"])
def do(table: str, rule: str) -> Any:
    """Run one of the table's commands from its form. A refusal is shown beside the
    control that sent it, and nothing is written; a stale page (the table moved on
    since it was drawn) gets 409 and the table as it is now. A stake far from the
    table's usual size is asked about first, and written once confirmed."""
    who = _signed_in(Role.SETTER, Role.CROUPIER, Role.PLAYER)
    _check_csrf()
    write = tablewrites.table_write(rule)
    if rule not in FORMS or write is None:
        abort(404)
    form = request.form
    if form.get("from", "me") not in ANSWERED_ON:
        # The page a form is answered on is read (_from_my_page): a value that names
        # none is refused as any other field the view reads, not taken for one of them.
        message = f"the form names no page to answer on (from: {' or '.join(ANSWERED_ON)})"
        return _refused(table, who, rule, message, 422)
    try:
        body = FORMS[rule](form)
    except KeyError as exc:
        return _refused(table, who, rule, f"the form is missing {exc.args[0]}", 422)
    except ValidationError as exc:  # an amount the club cannot read exactly
        return _refused(table, who, rule, _fields(exc), 422)
    try:
        # A version in other digits or 5,000 of them was a 500, as such a key was.
        sent = _sent(who, TableWriteHeadersSchema)
        schema = write.schema  # the body read as the API reads the same write's
        loaded = schema().load(body) if schema else {}
        asked = _confirmation(table, rule, loaded)
        if asked is not None:
            return _answer(table, who, confirm=asked, said=asked["question"])
        answer = tablewrites.run(rule, table, who, loaded, sent)
    except StaleVersion as exc:
        message = f"The table has changed (it is at version {exc.current}): look again."
        return _refused(table, who, rule, message, 409)
    except hz.RuleBroken as exc:
        said = amounts.rule_words(_house(), exc)
        return _refused(table, who, rule, f"{said} (rule {exc.code})", 422)
    except ValidationError as exc:
        read_by = write.schema
        message = amounts.refusal(_house(), exc, read_by()) if read_by else _fields(exc)
        return _refused(table, who, rule, message, 422)
    except NotPermitted:
        abort(403, description=f"a {who.role.value} may not do this")
    except Forbidden as exc:
        return _refused(table, who, rule, str(exc), 403)
    except NotFound as exc:  # the table is there (the page drew it): a player is not
        return _refused(table, who, rule, str(exc), 404)
    except Refused as exc:  # an overdraft (of everyone's lays: whose), said in the club's money
        return _refused(table, who, rule, amounts.refused_words(_house(), exc), 422)
    except Busy:  # the lock another writer held: the same form may be sent again
        busy = make_response(_refused(table, who, rule, BUSY, 503))
        busy.headers["Retry-After"] = "1"
        return busy
    return _done(table, who, rule, answer)


def _from_my_page(who: Holder) -> bool:
    """A player's throw sent from their own page (templates/me.html, `from` "me", or
    none), answered there; any other form is answered on the table's page."""
    return who.role is Role.PLAYER and request.form.get("from", "me") == "me"


def _done(table: str, who: Holder, rule: str, answer: dict[str, Any]) -> Any:
    if _from_my_page(who):
        return redirect(url_for("console.me"))
    with queries.reading(club().store) as read:
        shown = read.last_throws(table_stream(table), 1).throws
    caster = _state(table)[0].caster
    said = tablewords.said(rule, answer, _house(), shown[0] if shown else None, caster)
    if _htmx():
        return _parts(table, who, said=said)
    flash(said)
    return redirect(url_for("console.table", table=table))


def _refused(table: str, who: Holder, rule: str, message: str, status: int) -> Any:
    """A refusal, beside the control that sent it; nothing was written."""
    if _from_my_page(who):
        return _my_page(who, {f"{table}/{rule}": message}), status
    return _answer(table, who, status, errors={rule: message}, said=f"Refused: {message}")


def _confirmation(table: str, rule: str, loaded: dict[str, Any]) -> dict[str, Any] | None:
    """The question to ask before writing a stake far from the table's usual size
    (under a FARth of it or over FAR times): None when there is none to ask, or the
    form says the person confirmed this very amount."""
    field = AMOUNTS.get(rule)
    if field is None:
        return None
    amount = loaded[field]
    if request.form.get("confirmed") == str(amount):
        return None
    state, _ = _state(table)
    usual = _usual(table, state)
    if usual is None or (usual <= amount * FAR and amount <= usual * FAR):
        return None
    house = _house()
    return {
        "rule": rule,
        "amount": amount,
        "usual": usual,
        "fields": [(k, v) for k, v in request.form.items(multi=True) if k != "csrf_token"],
        "question": (
            f"Is {house.money(amount)} ({house.words(amount)}) right? This table usually "
            f"plays {house.money(usual)}: confirm it, or change it."
        ),
    }
