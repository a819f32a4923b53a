"""The table's page: the croupier's tool for an evening, and everyone's live view of a
table (a player's and an auditor's, read-only but for the bets the API lets a player
place themselves).

The page is parts, each redrawn on its own (templates/_board.html, _controls.html,
_result.html, _bets.html, _rounds.html): a form is sent by htmx and its answer swaps in
every part again, out of band, and says what it did in the page's aria-live region, so
the page never reloads and keeps its place; without script the form posts and the page
comes back by a redirect. The page asks for its parts every second with the table's
version as ETag (`panel`; while it seats, with how many players the club has): 304 while
the table stands still, the parts when anything at
the table changed, wherever it was sent from, and what changed said in the page's
aria-live region (`_meanwhile`). What each part shows is read as the API
reads it: the table's state (GET /tables/{t}), its rounds and last throws from the read
models (ledger.books.queries); the controls are the engine's and the commands' own
answer to "may this person do this now" (ledger.console.phase).

The table's writes are ledger.console.tableforms', a dispute from a round's row
ledger.console.tabledisputes'; opening a table is here.
"""

from __future__ import annotations

from typing import Any

from flask import (
    Response,
    abort,
    current_app,
    get_flashed_messages,
    redirect,
    render_template,
    request,
    url_for,
)
from marshmallow import ValidationError

import engine as hz
from ledger.books import queries
from ledger.commands import NotPermitted, Role, require_role
from ledger.console import amounts, phase, tablewords
from ledger.console.views import _check_csrf, _int, _sent, _signed_in, _tables, blp
from ledger.house import House
from ledger.service import NotFound, table_stream
from ledger.store.eventstore import Refused
from ledger.web import club, tablewrites
from ledger.web.schemas import OpenTableSchema
from ledger.web.tokens import Holder
from ledger.web.views import state_view

STRIP = 20
"""Throws in the strip of the last throws."""
ROUNDS = 12
"""Rounds in the list of the evening's rounds, newest first."""
CHIPS = 4
"""Amounts offered beside each amount: the table's latest stakes, else multiples of
its minimum."""
CHANGES = 6
"""The most changes said at once when the page's poll brings a new version: the newest."""
PARTS_HEADER = "X-Table-Parts"
"""Says an answer is the table's parts, to be swapped in whatever its status (a refusal
is drawn beside its control): static/table.js."""


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
        # The club's players are read only where they are picked from: while the table
        # seats, or when asked for during play (a latecomer): the list is every player
        # account's, which grows with the club's books, not with the table.
        seatable = (
            [p["name"] for p in read.players() if p["name"] not in (hz.SETTER, *state.seats)]
            if allowed.seat and (state.phase is hz.Phase.SEATING or request.args.get("seating"))
            else None
        )
        numbers = [r["round"] for r in rounds]
        mine = read.rounds_with(stream, who.name, numbers) if who.role is Role.PLAYER else None
    assert state.rules is not None
    return {
        "who": who,
        "view": view,
        "etag": _etag(state, who),
        "rules": state.rules,
        "limits": state.limits,
        "allowed": allowed,
        "throws": recent.throws,
        "last": recent.throws[0] if recent.throws else None,
        "rounds": rounds,
        "disputable": _disputable(who, rounds, mine),
        "seatable": seatable,
        "chips": _chips(recent.stakes, state.limits),
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
    "lays/everyone": "everyone_lays",
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


def _disputable(who: Holder, rounds: list[dict[str, Any]], mine: set[int] | None) -> set[int]:
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
    return ended & mine


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
    etag = f'"{context["etag"]}"'
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


def _etag(state: hz.TableState, who: Holder) -> str:
    """What the page's parts show, as an ETag: the table's version; and, while the table
    seats and `who` may seat players, how many players the club has, as the list of
    those to seat grows without an event of the table's (a player the office creates)."""
    if state.phase is not hz.Phase.SEATING:
        return str(state.version)
    try:
        require_role(who, Role.CROUPIER)  # who seats players (the setter too)
    except NotPermitted:
        return str(state.version)
    with queries.reading(club().store) as read:
        return f"{state.version}-{read.players_opened()}"


@blp.route("/console/tables/<table>/panel", methods=["GET"])
def panel(table: str) -> Any:
    """The table's parts, for the page to poll: 304 while its ETag (its version, and
    while it seats its players to pick from: `_etag`) is the one the page shows."""
    who = _signed_in()
    state, _ = _state(table)
    etag = f'"{_etag(state, who)}"'
    shown = request.headers.get("If-None-Match", "")
    if shown == etag:
        return Response(status=304, headers={"ETag": etag, "Cache-Control": "no-store"})
    return _parts(table, who, said=_meanwhile(table, shown))


def _meanwhile(table: str, shown: str) -> str | None:
    """What changed since the version the page shows (its If-None-Match), said in its
    live region as the parts are swapped in: a change made elsewhere is heard, not
    only seen, and focus stays where it was. The newest CHANGES events are said."""
    version = shown.strip('"').split("-")[0]  # the table's version, of `_etag`'s
    if not (version.isascii() and version.isdigit() and len(version) < 19):
        return None  # no version, or none the page could have drawn: nothing to say
    stream = table_stream(table)
    with queries.reading(club().store) as read:
        changes = read.changes_since(stream, int(version), CHANGES)
        last = read.last_throws(stream, 1).throws
    return tablewords.meanwhile(changes, _house(), last[0] if last else None)


# -- opening a table --------------------------------------------------------------------


@blp.route("/console/tables", methods=["POST"])
def open_table() -> Any:
    """Open a table: its rule set, its limits and its dice. The API's own command as
    the person signed in (ledger.web.tablewrites.open_table, as POST /tables runs it),
    the form read by the API's own schemas (its key as an Idempotency-Key). An odds
    multiple other than the rule set's opens it with that rule set's rules and that
    multiple, as POST /tables takes a custom rule set (`rules`), named for both. Its
    limits are typed in the club's money ("5.00"), and sent in minor units."""
    who = _signed_in(Role.SETTER, Role.CROUPIER)
    _check_csrf()
    form = request.form
    try:
        # The limits are typed in the club's major units, as every amount on the pages.
        limits = {
            name: amounts.read(_house(), form, name)
            for name in ("min_stake", "max_stake", "max_exposure")
            if form.get(name, "").strip()
        }
        asked = {
            "id": form.get("id", "").strip(),
            "dice": form.get("dice") or "croupier",
            "limits": limits,
            **_rules(form.get("ruleset") or hz.DEFAULT, form.get("odds_multiple", "")),
        }
        body = OpenTableSchema().load(asked)
        tablewrites.open_table(who, body, _sent(who))
    except ValidationError as exc:
        return _home_refused(who, amounts.refusal(_house(), exc, OpenTableSchema()))
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
    tables, older = _tables()
    return render_template("home.html", who=who, tables=tables, older=older, error=message), 422
