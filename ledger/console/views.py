"""The console's pages and forms. Reads come from the same queries as the API
(ledger.books.queries); every write is the same command the API runs
(ledger.commands, by way of ledger.web.tablewrites), as the signed-in token's holder,
so the console can do exactly what that token may, and writes no SQL of its own."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable
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
from marshmallow import EXCLUDE, Schema, ValidationError, validate
from werkzeug.exceptions import HTTPException
from wtforms.validators import ValidationError as CSRFInvalid

from ledger.books import queries
from ledger.commands import Role, Sent, significant
from ledger.store.log import receipts
from ledger.store.log.policy import Log, Policy
from ledger.web import club, heavy, sent_by
from ledger.web.numbers import QueryInteger
from ledger.web.schemas import WriteHeadersSchema
from ledger.web.tokens import Holder, holder, named

blp = Blueprint(
    "console",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/console/static",
)


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
    # A page of the tables, newest first; `before`, an opening's position, the older.
    before = _url_values(OlderTablesSchema(), request.args).get("before")
    tables, older = _tables(before)
    return render_template("home.html", who=who, tables=tables, older=older)


@blp.route("/console/sign-in", methods=["POST"])
def sign_in() -> Any:
    _check_csrf()
    token = request.form.get("token", "").strip()
    found = holder(club().store.engine, token) if token else None
    tally: significant.Tally = current_app.extensions["hazard.significant"]
    if found is None:
        # Counted, never written one by one: a flood is one event with its count. The
        # token is named only when the secret was one (a revoked token's), by its id.
        tally.sign_in(significant.REFUSED, significant.CONSOLE, named(club().store.engine, token))
        return render_template("sign_in.html", error="That token is not a live token."), 401
    tally.sign_in(significant.SIGNED_IN, found.actor, (found.id, found.role.value, found.name))
    session.clear()
    session["token"] = token
    return redirect(url_for("console.home"))


@blp.route("/console/sign-out", methods=["POST"])
def sign_out() -> Any:
    _check_csrf()
    who: Holder | None = g.get("holder")
    if who is not None:
        tally: significant.Tally = current_app.extensions["hazard.significant"]
        tally.sign_in(significant.SIGNED_OUT, who.actor, (who.id, who.role.value, who.name))
    session.clear()
    return redirect(url_for("console.home"))


# -- the tables (their pages are ledger.console.table's) -----------------------------------


TABLES = 50
"""The tables a page lists (the home page's, and the audit pages' choice of one)."""


class OlderTablesSchema(Schema):
    """The home page's parameter: the tables opened before this position."""

    before = QueryInteger(validate=validate.Range(min=1))


def _tables(before: int | None = None) -> tuple[list[str], int | None]:
    """The newest `TABLES` tables opened before position `before` (None: the newest),
    and the `before` of the older ones (None: there are none)."""
    with queries.reading(club().store) as read:
        return read.tables(before, TABLES)


def _int(text: str | None) -> Any:
    """A whole number typed in a form, read as the API reads one in a URL (QueryInteger:
    ASCII digits and an optional minus); anything else goes to the schema as typed,
    which refuses it with the field's own message. (`--5` passed a check of this
    form's own, and int() raised: a 500.)"""
    try:
        return QueryInteger().deserialize((text or "").strip())
    except ValidationError:
        return text


def _fields(exc: ValidationError) -> str:
    messages = exc.normalized_messages()  # type: ignore[no-untyped-call]
    if isinstance(messages, dict):
        return "; ".join(f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}"
                         for k, v in messages.items())  # fmt: skip
    return str(messages)


# -- the player ---------------------------------------------------------------------------


def _my_page(who: Holder, errors: dict[str, str]) -> Any:
    """The player's own page (ledger.console.player), with `errors` beside the controls
    that sent them: found by its endpoint, as that module imports this one."""
    return current_app.view_functions["console.me"](errors)


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
