"""The console's pages and forms. Reads come from the same queries as the API
(ledger.books.queries); every write is the same command the API runs
(ledger.commands, by way of ledger.web.tablewrites), as the signed-in token's holder,
so the console can do exactly what that token may, and writes no SQL of its own."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa
from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFError, generate_csrf, validate_csrf
from marshmallow import EXCLUDE, Schema, ValidationError
from werkzeug.exceptions import HTTPException
from wtforms.validators import ValidationError as CSRFInvalid

import engine as hz
from engine import serverdice
from ledger.books import disputeviews, projections, queries
from ledger.books.accounts import account_stream, owed, player_account
from ledger.commands import NotPermitted, Role, Sent
from ledger.service import NotFound, StaleVersion
from ledger.store.eventstore import Refused
from ledger.store.log import proofs, receipts
from ledger.store.log.policy import Log, Policy
from ledger.web import club, heavy, sent_by, tablewrites
from ledger.web.logschemas import InclusionQuerySchema
from ledger.web.numbers import QueryInteger
from ledger.web.schemas import OpenTableSchema, TableWriteHeadersSchema, WriteHeadersSchema
from ledger.web.tablewrites import WRITES
from ledger.web.tokens import Holder, holder
from ledger.web.views import state_view

blp = Blueprint(
    "console",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/console/static",
)

RUN = (Role.SETTER, Role.CROUPIER)


@blp.before_request
def _who() -> None:
    # No name, key or filter holds a NUL, and PostgreSQL refuses one in a query's
    # parameters (a 500 it was): a URL with one asks for nothing there is.
    if any("\x00" in str(value) for value in (request.view_args or {}).values()):
        abort(404)
    if any("\x00" in name + value for name, value in request.args.items(multi=True)):
        abort(400, description="a URL's parameters hold no NUL")
    token = session.get("token")
    g.holder = holder(club().store.engine, token) if isinstance(token, str) else None


@blp.app_context_processor
def _context() -> dict[str, Any]:
    return {"csrf_token": generate_csrf, "new_key": lambda: secrets.token_urlsafe(16)}


def _signed_in(*roles: Role) -> Holder:
    """The person signed in, who must hold one of `roles` (any, if none are named)."""
    who: Holder | None = g.get("holder")
    if who is None:
        abort(redirect(url_for("console.home")))
    assert who is not None
    if roles and who.role not in roles:
        abort(403, description=f"a {who.role.value} may not open this page")
    return who


def _url_values(schema: Schema, values: Any) -> dict[str, Any]:
    """`values` from a URL (a number in its path, its query's parameters), read by the
    API's own schema for them: what the API refuses with 422, the console refuses on
    its page (400), naming the value. Parameters the schema does not read are left."""
    try:
        loaded: dict[str, Any] = schema.load(values, unknown=EXCLUDE)
    except ValidationError as exc:
        abort(400, description=_fields(exc))
    return loaded


def _sent(who: Holder, schema: type[Schema] = WriteHeadersSchema) -> Sent:
    """How the form was sent, as a command takes it (ledger.commands.tables.Sent): its
    key, read as the API reads an Idempotency-Key header and scoped to the signed-in
    token as the API scopes one, and a table form's version, read as If-Match. By the
    same schema as the API's headers: ValidationError if either is not one (a key of
    30,000 characters or with a NUL was a 500 on PostgreSQL). A form that sends no key
    writes without one, as a request without the header does. Every form's key is read
    here, and only here."""
    sent = {"Idempotency-Key": request.form.get("key"), "If-Match": request.form.get("version")}
    taken = {field.data_key for field in schema().fields.values()}
    loaded = schema().load({k: v for k, v in sent.items() if v and k in taken})
    return sent_by(who, loaded)


def _check_csrf() -> None:
    try:
        validate_csrf(request.form.get("csrf_token"))
    except (CSRFError, CSRFInvalid) as exc:  # wtforms' ValidationError, as flask-wtf raises
        abort(400, description=f"the form's CSRF token is missing or stale ({exc}): reload")


@blp.errorhandler(404)
@blp.errorhandler(403)
@blp.errorhandler(400)
def _refused(exc: HTTPException) -> Response:
    from ledger.console import errors  # the page, or to htmx its announcement alone

    return errors.page(exc.code or 400, str(exc.description))


@blp.errorhandler(heavy.TooManyReads)
@blp.errorhandler(heavy.Overloaded)
def _heavy(exc: Exception) -> Response:
    """A heavy page refused as the API refuses a heavy read (429 for the token's own
    reads, 503 for the worker's), on the console's page, with when to try again."""
    from ledger.console import errors

    status = 429 if isinstance(exc, heavy.TooManyReads) else 503
    return errors.page(status, str(exc), {"Retry-After": heavy.RETRY_AFTER})


# -- signing in and out ---------------------------------------------------------------------


@blp.route("/", methods=["GET"])
def home() -> Any:
    who: Holder | None = g.get("holder")
    if who is None:
        return render_template("sign_in.html", error=None)
    return render_template("home.html", who=who, tables=_tables())


@blp.route("/console/sign-in", methods=["POST"])
def sign_in() -> Any:
    _check_csrf()
    token = request.form.get("token", "").strip()
    found = holder(club().store.engine, token) if token else None
    if found is None:
        return render_template("sign_in.html", error="That token is not a live token."), 401
    session.clear()
    session["token"] = token
    return redirect(url_for("console.home"))


@blp.route("/console/sign-out", methods=["POST"])
def sign_out() -> Any:
    _check_csrf()
    session.clear()
    return redirect(url_for("console.home"))


# -- the table, for the croupier -------------------------------------------------------------


def _tables() -> list[str]:
    with queries.reading(club().store) as read:
        return read.tables()


def _state(table: str) -> tuple[hz.TableState, dict[str, Any]]:
    try:
        state = club().state(table)
    except NotFound:
        abort(404, description=f"there is no table {table!r}")
    return state, state_view(table, state)


@blp.route("/console/tables", methods=["POST"])
def open_table() -> Any:
    """Open a table with a built-in rule set: the API's own command as the person signed
    in (ledger.web.tablewrites.open_table, as POST /tables runs it), the form read by
    the API's own schemas (its key as an Idempotency-Key)."""
    who = _signed_in(*RUN)
    _check_csrf()
    form = request.form
    try:
        body = OpenTableSchema().load(
            {
                "id": form.get("id", "").strip(),
                "ruleset": form.get("ruleset") or hz.DEFAULT,
                "dice": form.get("dice") or "croupier",
            }
        )
        tablewrites.open_table(who, body, _sent(who))
    except ValidationError as exc:
        return _table_page_error(None, "open", _fields(exc), 422)
    except (hz.HazardError, Refused) as exc:  # a rule set refused; the table exists
        return _table_page_error(None, "open", str(exc), 422)
    return redirect(url_for("console.table", table=body["id"]))


def _table_page_error(table: str | None, control: str, message: str, status: int) -> Any:
    who = _signed_in()
    if who.role is Role.PLAYER:  # a player's throw, sent from their own page
        return _my_page(who, {f"{table}/{control}": message}), status
    if table is None:
        who = _signed_in()
        return render_template("home.html", who=who, tables=_tables(), error=message), status
    state, view = _state(table)
    return (
        render_template(
            "table.html",
            who=_signed_in(),
            view=view,
            errors={control: message},
            rules=state.rules,
        ),
        status,
    )


@blp.route("/console/tables/<table>", methods=["GET"])
def table(table: str) -> Any:
    who = _signed_in(*RUN)
    state, view = _state(table)
    return render_template("table.html", who=who, view=view, errors={}, rules=state.rules)


@blp.route("/console/tables/<table>/panel", methods=["GET"])
def panel(table: str) -> Any:
    """The table's state alone, for the page to poll: 304 while its version (the ETag)
    is the one the page shows."""
    _signed_in(*RUN)
    state, view = _state(table)
    etag = f'"{state.version}"'
    if request.headers.get("If-None-Match") == etag:
        return Response(status=304, headers={"ETag": etag})
    html = render_template("_panel.html", view=view)
    return Response(html, headers={"ETag": etag, "Cache-Control": "no-cache"})


# What each control's form gives, as the body of its API command.
FORMS: dict[str, Callable[[Any], dict[str, Any]]] = {
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
    "covers": lambda f: {"bets": [f["bet"]]},
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


def _int(text: str | None) -> Any:
    """A whole number typed in a form, read as the API reads one in a URL (QueryInteger:
    ASCII digits and an optional minus); anything else goes to the schema as typed,
    which refuses it with the field's own message. (`--5` passed a check of this
    form's own, and int() raised: a 500.)"""
    try:
        return QueryInteger().deserialize((text or "").strip())
    except ValidationError:
        return text


@blp.route("/console/tables/<table>/do/<path:rule>", methods=["POST"])
def do(table: str, rule: str) -> Any:
    """Run one of the table's commands from its form. A refusal is shown beside the
    control that sent it, and nothing is written; a stale page (the table moved on
    since it was drawn) gets 409 and the table as it is now."""
    who = _signed_in(Role.SETTER, Role.CROUPIER, Role.PLAYER)
    _check_csrf()
    if rule not in FORMS or rule not in WRITES:
        abort(404)
    form = request.form
    try:
        body = FORMS[rule](form)
    except KeyError as exc:
        return _table_page_error(table, rule, f"the form is missing {exc.args[0]}", 422)
    try:
        # A version in other digits or 5,000 of them was a 500, as such a key was.
        sent = _sent(who, TableWriteHeadersSchema)
        schema = WRITES[rule].schema  # the body read as the API reads the same write's
        tablewrites.run(rule, table, who, schema().load(body) if schema else {}, sent)
    except StaleVersion as exc:
        message = f"The table has changed (it is at version {exc.current}): look again."
        if who.role is Role.PLAYER:
            return _my_page(who, {f"{table}/{rule}": message}), 409
        state, view = _state(table)
        return (
            render_template(
                "table.html", who=who, view=view, errors={rule: message}, rules=state.rules
            ),
            409,
        )
    except hz.RuleBroken as exc:
        return _table_page_error(table, rule, f"{exc.detail} (rule {exc.code})", 422)
    except ValidationError as exc:
        return _table_page_error(table, rule, _fields(exc), 422)
    except NotPermitted:
        abort(403, description=f"a {who.role.value} may not do this")
    except NotFound as exc:  # the table is there (the page drew it): a player is not
        return _table_page_error(table, rule, str(exc), 404)
    except Refused as exc:
        return _table_page_error(table, rule, str(exc), 422)
    if who.role is Role.PLAYER:
        return redirect(url_for("console.me"))
    return redirect(url_for("console.table", table=table))


def _fields(exc: ValidationError) -> str:
    messages = exc.normalized_messages()  # type: ignore[no-untyped-call]
    if isinstance(messages, dict):
        return "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                         for k, v in messages.items())  # fmt: skip
    return str(messages)


# -- the player ---------------------------------------------------------------------------


@blp.route("/console/me", methods=["GET"])
def me() -> Any:
    """A player's balance, statement and open bets, and their throw at a server-dice
    table where they hold the dice."""
    return _my_page(_signed_in(Role.PLAYER), {})


def _my_page(who: Holder, errors: dict[str, str]) -> str:
    account = player_account(who.name)
    with club().store.engine.connect() as conn:
        balance, limit = club().standing(conn, who.name)  # as GET /players/{p}/balance
        lines = projections.statement(conn, account, after_position=0, limit=200)
    states = {t: club().state(t) for t in _tables()}
    open_bets = [(t, b) for t, st in states.items() for b in st.open_bets if who.name in b.parties]
    # The server-dice tables where the player holds the dice: their throw is theirs to
    # send, with a seed their own browser makes and keeps (static/console.js).
    throws = [
        {
            "table": t,
            "version": st.version,
            "nonce": st.nonce,
            "commitment": st.commitment,
            "client_seed": st.client_seed,
        }
        for t, st in states.items()
        if st.dice == serverdice.SERVER and st.caster == who.name and st.commitment is not None
    ]
    with club().store.engine.connect() as conn:
        mine = disputeviews.listing(conn, claimant=who.name, limit=100)
        kept = _receipts(conn, (line["position"] for line in lines))
    return render_template(
        "me.html",
        who=who,
        balance=balance,
        credit_limit=limit,
        owed=owed(balance, limit),
        lines=lines,
        open_bets=open_bets,
        throws=throws,
        errors=errors,
        disputes=mine,
        receipts=kept,
        policy=_club_policy(),
    )


def _receipts(conn: sa.Connection, positions: Iterable[int]) -> list[dict[str, Any]]:
    """What the player's browser checks each receipt with (static/receipts.js): the
    event's bytes, to hash its leaf itself, and the checkpoint its write signed."""
    return [
        {
            "position": r.position,
            "frame": base64.b64encode(r.frame).decode(),
            "size": r.size,
            "note": r.note,
        }
        for r in receipts.written(conn, positions)
    ]


def _club_policy() -> Policy | None:
    """The club's policy, as the service was given it (HAZARD_POLICY); with none, the
    log's key alone, asking no witness; None when the ledger signs nothing. The page
    says it is the club's: a player who checks with it trusts the club to have named
    the right witnesses, and a careful one keeps a copy of their own (hazard watch)."""
    policy: Policy | None = current_app.extensions.get("hazard.policy")
    signer = club().store.signer
    if policy is None and signer is not None:
        policy = Policy((Log(signer.verifier),), {}, {}, "none")
    return policy


@blp.route("/console/me/receipts/<int:position>", methods=["GET"])
def receipt(position: int) -> Any:
    """The receipt of one of the player's own events: its leaf in the log's Merkle tree,
    the audit path to the newest signed checkpoint, and that checkpoint, as the API's
    GET /log/proofs/inclusion gives them, to keep and check later."""
    who = _signed_in(Role.PLAYER)
    # As GET /log/proofs/inclusion reads `position` (1 to 2**63 - 1): a larger one
    # overflowed the database's integer, a 500.
    asked = _url_values(InclusionQuerySchema(only=("position",)), {"position": position})
    position = asked["position"]
    account = player_account(who.name)
    with club().store.engine.connect() as conn:
        try:
            if not proofs.concerns(conn, position, account_stream(account), account, who.name):
                abort(403, description="a player has receipts of their own events only")
            found = proofs.inclusion(conn, position)
        except proofs.ProofRefused as exc:
            abort(404, description=str(exc))
        kept = _receipts(conn, [position])
    return render_template(
        "receipt.html",
        who=who,
        position=position,
        found=found,
        proof=[h.hex() for h in found.proof],
        receipts=kept,
        policy=_club_policy(),
    )
