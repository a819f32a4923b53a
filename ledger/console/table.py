"""The table's page: the croupier's tool for an evening, and everyone's live view of a
table (a player's and an auditor's, read-only but for the bets the API lets a player
place themselves).

The page is parts, each redrawn on its own (templates/_board.html, _controls.html,
_result.html, _bets.html, _rounds.html): a form is sent by htmx and its answer swaps in
every part again, out of band, and says what it did in the page's aria-live region, so
the page never reloads and keeps its place; without script the form posts and the page
comes back by a redirect. The page asks for its parts every second with the table's
version as ETag (`panel`): 304 while the table stands still, the parts when anything at
the table changed, wherever it was sent from. What each part shows is read as the API
reads it: the table's state (GET /tables/{t}), its rounds and last throws from the read
models (ledger.books.queries); the controls are the engine's and the commands' own
answer to "may this person do this now" (ledger.console.phase).

A write is the API's own (ledger.web.tablewrites, ledger.commands.disputes) as the
person signed in, read by the API's schemas. A stake far from the table's usual size
is asked about first (`_confirmation`): the first post writes nothing.
"""

from __future__ import annotations

from typing import Any

from flask import (
    Response,
    abort,
    current_app,
    flash,
    get_flashed_messages,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from marshmallow import ValidationError

import engine as hz
from ledger.api.disputeschemas import OpenDisputeSchema
from ledger.books import queries
from ledger.commands import NotPermitted, Role, require_role
from ledger.commands import disputes as dispute_commands
from ledger.console import phase, tablewords
from ledger.console.views import (
    _check_csrf,
    _fields,
    _int,
    _my_page,
    _sent,
    _signed_in,
    _tables,
    blp,
)
from ledger.house import House
from ledger.service import Forbidden, NotFound, StaleVersion, table_stream
from ledger.store.eventstore import Busy, Refused
from ledger.web import club, tablewrites
from ledger.web.readschemas import SMALL
from ledger.web.schemas import OpenTableSchema, TableWriteHeadersSchema
from ledger.web.tablewrites import WRITES
from ledger.web.tokens import Holder
from ledger.web.views import state_view

STRIP = 20
"""Throws in the strip of the last throws."""
ROUNDS = 12
"""Rounds in the list of the evening's rounds, newest first."""
CHIPS = 4
"""Amounts offered beside each amount: the table's latest stakes, else multiples of
its minimum."""
FAR = 10
"""A stake under a tenth of the table's usual stake, or over ten times it, is asked
about before it is written."""
MINE = 200
"""The rounds a player had money in that their dispute links are looked for among."""
BUSY = "The database was busy with another write: nothing was written; send it again."
PARTS_HEADER = "X-Table-Parts"
"""Says an answer is the table's parts, to be swapped in whatever its status (a refusal
is drawn beside its control): static/table.js."""


@blp.app_template_global("minor_unit")
def _minor_unit() -> str:
    """What the club calls its minor unit, for the amounts a form takes."""
    return tablewords.minor_unit(_house())


@blp.app_context_processor
def _rulesets() -> dict[str, Any]:
    """The built-in rule sets, which the form that opens a table offers."""
    return {"rulesets": hz.BUILTIN}


def _house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


def _state(table: str) -> tuple[hz.TableState, dict[str, Any]]:
    try:
        state = club().state(table)
    except NotFound:
        abort(404, description=f"there is no table {table!r}")
    return state, state_view(table, state)


def _htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


# -- reading the table ------------------------------------------------------------------


def _context(
    table: str,
    who: Holder,
    errors: dict[str, str] | None = None,
    confirm: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the table's parts show to `who`."""
    state, view = _state(table)
    stream = table_stream(table)
    allowed = phase.controls(state, who)
    with queries.reading(club().store) as read:
        recent = read.last_throws(stream, STRIP)
        rounds = read.latest_rounds(stream, ROUNDS)
        seatable = (
            [p["name"] for p in read.players() if p["name"] not in (hz.SETTER, *state.seats)]
            if allowed.seat
            else []
        )
        mine = read.rounds_of(who.name, MINE) if who.role is Role.PLAYER else None
    assert state.rules is not None
    return {
        "who": who,
        "view": view,
        "rules": state.rules,
        "limits": state.limits,
        "allowed": allowed,
        "throws": recent.throws,
        "last": recent.throws[0] if recent.throws else None,
        "rounds": rounds,
        "disputable": _disputable(who, stream, rounds, mine),
        "seatable": seatable,
        "chips": _chips(recent.stakes, state.limits),
        "unit": tablewords.minor_unit(_house()),
        "errors": errors or {},
        "stray": _stray(errors or {}, allowed),
        "confirm": confirm,
        "words": tablewords,
    }


DRAWN_BY = {
    "seats": "seat",
    "casts": "casts",
    "main": "main",
    "throws": "throw",
    "void-throws": "void",
    "stakes": "stake",
    "lays": "lays",
    "covers": "covers",
    "refusals": "covers",
    "odds": "odds",
    "side-bets": "offers",
    "side-bets/accept": "accepts",
    "pass": "pass_dice",
    "close": "close",
}
"""Which of the table's controls (phase.Controls) draws each write's form."""


def _stray(errors: dict[str, str], allowed: phase.Controls) -> dict[str, str]:
    """The refusals of forms the page no longer draws (sent from a page the table has
    moved on from, or forged): said at the head of the controls, as no control is
    there to say them beside."""
    return {
        rule: message
        for rule, message in errors.items()
        if rule != "dispute" and not getattr(allowed, DRAWN_BY.get(rule, ""), False)
    }


def _disputable(
    who: Holder, stream: str, rounds: list[dict[str, Any]], mine: set[tuple[str, int]] | None
) -> set[int]:
    """The rounds listed that `who` may open a dispute over from their row: those ended,
    and for a player those they had money in (POST .../disputes: the setter, a croupier,
    a player)."""
    try:
        require_role(who, Role.CROUPIER, Role.PLAYER)
    except NotPermitted:
        return set()
    ended = {r["round"] for r in rounds if r["result"] is not None}
    if mine is None:
        return ended
    return {n for n in ended if (stream, n) in mine}


def _chips(stakes: list[int], limits: hz.Limits) -> list[int]:
    """The amounts offered beside an amount: the table's latest distinct stakes, then
    1, 2, 5, 10, ... times its minimum stake (or one major unit, where the minimum is
    the engine's default of one minor unit), within its maximum."""
    found = list(dict.fromkeys(stakes))[:CHIPS]
    base = limits.min_stake if limits.min_stake > 1 else 10 ** _house().minor_units
    for times in (1, 2, 5, 10, 20, 50, 100):
        amount = base * times
        if len(found) >= CHIPS or (limits.max_stake is not None and amount > limits.max_stake):
            break
        if amount not in found:
            found.append(amount)
    return sorted(found)


def _usual(table: str, state: hz.TableState) -> int | None:
    """The table's usual stake: the median of its recent stakes; with none yet, its
    minimum if one was set (None: nothing to compare with)."""
    with queries.reading(club().store) as read:
        usual = read.last_throws(table_stream(table), STRIP).usual
    if usual is None and state.limits.min_stake > 1:
        return state.limits.min_stake
    return usual


def _page(table: str, who: Holder, status: int = 200, **shown: Any) -> Any:
    """The whole page, with what the last write said (a flashed message, after the
    redirect that follows a form posted without script)."""
    flashed: list[str] = get_flashed_messages()  # type: ignore[assignment]
    said = shown.pop("said", None) or " ".join(flashed)
    disputing = shown.pop("disputing", None)
    context = _context(table, who, **shown)
    if disputing is not None:
        context.update(disputing)
    return render_template("table.html", said=said, **context), status


def _parts(
    table: str,
    who: Holder,
    status: int = 200,
    said: str | None = None,
    opened: dict[str, Any] | None = None,
    **shown: Any,
) -> Response:
    """Every part of the page, each to be swapped in out of band (an htmx answer, and
    what the page's poll gets), and what the write did, if it did; `opened`, a dispute
    just opened, in place of the form that opened it."""
    context = _context(table, who, **shown)
    html = render_template("_parts.html", oob=True, said=said, opened=opened, **context)
    etag = f'"{context["view"]["version"]}"'
    headers = {PARTS_HEADER: "1", "ETag": etag, "Cache-Control": "no-store"}
    return Response(html, status=status, headers=headers)


def _answer(table: str, who: Holder, status: int = 200, **shown: Any) -> Any:
    """The table after a form: its parts to an htmx request, else the whole page."""
    if _htmx():
        return _parts(table, who, status, **shown)
    return _page(table, who, status, **shown)


@blp.route("/console/tables/<table>", methods=["GET"])
def table(table: str) -> Any:
    """The table, live: for the setter and a croupier with every control of the phase,
    for a player with the bets they may place themselves, for an auditor to watch."""
    return _page(table, _signed_in())


@blp.route("/console/tables/<table>/panel", methods=["GET"])
def panel(table: str) -> Any:
    """The table's parts, for the page to poll: 304 while its version (the ETag) is
    the one the page shows."""
    who = _signed_in()
    state, _ = _state(table)
    etag = f'"{state.version}"'
    if request.headers.get("If-None-Match") == etag:
        return Response(status=304, headers={"ETag": etag, "Cache-Control": "no-store"})
    return _parts(table, who)


# -- opening a table --------------------------------------------------------------------


@blp.route("/console/tables", methods=["POST"])
def open_table() -> Any:
    """Open a table: its rule set, its limits and its dice. The API's own command as
    the person signed in (ledger.web.tablewrites.open_table, as POST /tables runs it),
    the form read by the API's own schemas (its key as an Idempotency-Key). An odds
    multiple other than the rule set's opens it with that rule set's rules and that
    multiple, as POST /tables takes a custom rule set (`rules`), named for both."""
    who = _signed_in(Role.SETTER, Role.CROUPIER)
    _check_csrf()
    form = request.form
    limits = {
        name: _int(form[name])
        for name in ("min_stake", "max_stake", "max_exposure")
        if form.get(name, "").strip()
    }
    try:
        asked = {
            "id": form.get("id", "").strip(),
            "dice": form.get("dice") or "croupier",
            "limits": limits,
            **_rules(form.get("ruleset") or hz.DEFAULT, form.get("odds_multiple", "")),
        }
        body = OpenTableSchema().load(asked)
        tablewrites.open_table(who, body, _sent(who))
    except ValidationError as exc:
        return _home_refused(who, _fields(exc))
    except (hz.HazardError, Refused) as exc:  # a rule set or limits refused; the table exists
        return _home_refused(who, str(exc))
    return redirect(url_for("console.table", table=body["id"]))


def _rules(name: str, multiple: str) -> dict[str, Any]:
    """The built-in rule set `name`, or, with an odds multiple other than its own, its
    rules with that multiple (a custom rule set, named so: "english, odds 3x")."""
    chosen = hz.BUILTIN.get(name)
    given = _int(multiple) if multiple.strip() else None
    if chosen is None or given is None or given == chosen.odds_multiple:
        return {"ruleset": name}
    if not isinstance(given, int):
        raise ValidationError({"odds_multiple": ["Not a valid integer."]})
    rules = chosen.to_mapping()
    return {"rules": {**rules, "name": f"{name}, odds {given}x", "odds_multiple": given}}


def _home_refused(who: Holder, message: str) -> Any:
    return render_template("home.html", who=who, tables=_tables(), error=message), 422


# -- the table's writes -----------------------------------------------------------------


FORMS: dict[str, Any] = {
    "seats": lambda f: {"player": f["player"]},
    "casts": lambda f: {"player": f["player"], "die": _int(f["die"])},
    "main": lambda f: {"main": _int(f["main"])},
    "throws": lambda f: (
        {"client_seed": f["client_seed"]}
        if "client_seed" in f
        else {"die1": _int(f["die1"]), "die2": _int(f["die2"])}
    ),
    "void-throws": lambda f: {
        "reason": f["reason"],
        "off": _int(f["off"]),
        **({"standing": _int(f["standing"])} if f.get("standing") else {}),
    },
    "stakes": lambda f: {"amount": _int(f["amount"])},
    "lays": lambda f: {"player": f["player"], "amount": _int(f["amount"])},
    # One bet, or every bet the form names (the caster's "cover all"): the covers write
    # takes a list.
    "covers": lambda f: {"bets": f.getlist("bet") or [f["bet"]]},
    "refusals": lambda f: {"bet": f["bet"]},
    "odds": lambda f: {"player": f["player"], "on": f["on"], "amount": _int(f["amount"])},
    "side-bets": lambda f: {
        "player": f["player"],
        "proposition": {
            "kind": f["kind"],
            "totals": [_int(t) for t in f.get("totals", "").replace(",", " ").split()],
        },
        "backs": f.get("backs") == "yes",
        "stake": _int(f["stake"]),
        "asks": _int(f["asks"]),
        "to": f.get("to") or None,
    },
    "side-bets/accept": lambda f: {"player": f["player"], "bet": f["bet"]},
    "pass": lambda f: {},
    "close": lambda f: {},
}
"""What each control's form gives, as the body of its API command."""

AMOUNTS = {"stakes": "amount", "lays": "amount", "odds": "amount", "side-bets": "stake"}
"""The writes that stake money, and the field that says how much."""


@blp.route("/console/tables/<table>/do/<path:rule>", methods=["POST"])
def do(table: str, rule: str) -> Any:
    """Run one of the table's commands from its form. A refusal is shown beside the
    control that sent it, and nothing is written; a stale page (the table moved on
    since it was drawn) gets 409 and the table as it is now. A stake far from the
    table's usual size is asked about first, and written once confirmed."""
    who = _signed_in(Role.SETTER, Role.CROUPIER, Role.PLAYER)
    _check_csrf()
    if rule not in FORMS or rule not in WRITES:
        abort(404)
    form = request.form
    try:
        body = FORMS[rule](form)
    except KeyError as exc:
        return _refused(table, who, rule, f"the form is missing {exc.args[0]}", 422)
    try:
        # A version in other digits or 5,000 of them was a 500, as such a key was.
        sent = _sent(who, TableWriteHeadersSchema)
        schema = WRITES[rule].schema  # the body read as the API reads the same write's
        loaded = schema().load(body) if schema else {}
        asked = _confirmation(table, rule, loaded)
        if asked is not None:
            return _answer(table, who, confirm=asked, said=asked["question"])
        answer = tablewrites.run(rule, table, who, loaded, sent)
    except StaleVersion as exc:
        message = f"The table has changed (it is at version {exc.current}): look again."
        return _refused(table, who, rule, message, 409)
    except hz.RuleBroken as exc:
        return _refused(table, who, rule, f"{exc.detail} (rule {exc.code})", 422)
    except ValidationError as exc:
        return _refused(table, who, rule, _fields(exc), 422)
    except NotPermitted:
        abort(403, description=f"a {who.role.value} may not do this")
    except Forbidden as exc:
        return _refused(table, who, rule, str(exc), 403)
    except NotFound as exc:  # the table is there (the page drew it): a player is not
        return _refused(table, who, rule, str(exc), 404)
    except Refused as exc:
        return _refused(table, who, rule, str(exc), 422)
    except Busy:  # the lock another writer held: the same form may be sent again
        busy = make_response(_refused(table, who, rule, BUSY, 503))
        busy.headers["Retry-After"] = "1"
        return busy
    return _done(table, who, rule, answer)


def _from_my_page(who: Holder) -> bool:
    """A player's throw sent from their own page (templates/me.html), answered there."""
    return who.role is Role.PLAYER and request.form.get("from") != "table"


def _done(table: str, who: Holder, rule: str, answer: dict[str, Any]) -> Any:
    if _from_my_page(who):
        return redirect(url_for("console.me"))
    with queries.reading(club().store) as read:
        shown = read.last_throws(table_stream(table), 1).throws
    said = tablewords.said(rule, answer, _house(), shown[0] if shown else None)
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


# -- a mistake put right: a dispute from a round's row ----------------------------------


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
        return render_template("_dispute.html", view={"table": table}, errors={}, **disputing)
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
        return _dispute_refused(table, who, number, f"{exc.detail} (rule {exc.code})", 422)
    except NotFound as exc:
        return _dispute_refused(table, who, number, str(exc), 404)
    except Refused as exc:
        return _dispute_refused(table, who, number, str(exc), 422)
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
            "_dispute.html", view={"table": table}, errors={"dispute": message}, **disputing
        )
        announce = render_template("_announce.html", said=f"Refused: {message}", oob=True)
        return Response(html + announce, status=status, headers={PARTS_HEADER: "dispute"})
    return _page(table, who, status, errors={"dispute": message}, disputing=disputing)
