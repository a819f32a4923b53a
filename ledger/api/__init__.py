"""The REST API: an application factory, the one place the service is wired together.

create_app()                      # DATABASE_URL, or the embedded SQLite default
create_app(book=Book(...))        # tests: an explicit store
create_app(HEAVY_READS_AT_ONCE=4) # `hazard serve`: heavy reads a worker runs at once
create_app(HAZARD_POLICY=path)    # witnesses, as HAZARD_POLICY names them ("": none)

With a policy that names witnesses with a URL, the app starts pushing its checkpoints
to them in the background (ledger.pusher), in a thread of the process that made it:
make it after any fork (gunicorn's workers do, without --preload).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from flask import Flask, g, request
from flask_smorest import abort
from werkzeug.exceptions import HTTPException

from ledger import bootstrap, house
from ledger.api import problems
from ledger.api.contract import ContractApi, of, to_yaml
from ledger.books.book import Book
from ledger.commands import significant
from ledger.pusher import TIMEOUT_S, Outcome
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Witness
from ledger.web import anonymous, heavy
from ledger.web.numbers import AsciiIntConverter
from ledger.web.tokens import Holder, holder

API_SETTINGS = {
    "API_TITLE": "Hazard ledger",
    "API_VERSION": "1",
    "OPENAPI_VERSION": "3.0.3",
    "API_SPEC_OPTIONS": {
        "security": [{"bearer": []}],
        "info": {
            "description": "An event-sourced betting ledger for the game of Hazard.\n\n"
            "Every operation needs a bearer token (`hazard token create`) but the log's "
            "public reads (its key, checkpoints, cosignatures, consistency proofs, the "
            "hashes of an inclusion proof, the gossip), which anyone may make without one; "
            "a token's role (setter, croupier, auditor, player) decides what it may do. "
            "Errors are RFC 9457 problem details (application/problem+json) with a stable "
            "`type`: see the Problem schema. Writes take an optional Idempotency-Key; writes "
            "to a table an optional If-Match, the version GET /tables/{table} gives as ETag."
        },
    },
}


SYNCED_MOST = 2048


class _Hazard(Flask):
    """Flask, but that it asks once per function whether it is a coroutine: Flask asks
    `inspect` again for every hook and view of every request, about 3% of a settlement
    page's time (docs/performance.md, issue 27's "http")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._synced: dict[Callable[..., Any], Callable[..., Any]] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        synced = self._synced.get(func)
        if synced is None:
            synced = super().ensure_sync(func)
            # The app's hooks and views are a few hundred; a function made for one
            # request (after_this_request) is not kept past the bound.
            if len(self._synced) < SYNCED_MOST:
                self._synced[func] = synced
        return synced


def create_app(book: Book | None = None, **settings: Any) -> Flask:
    app = _Hazard("hazard")
    # Before any route is added: `<int:round>` takes ASCII digits only (numbers.py).
    app.url_map.converters["int"] = AsciiIntConverter
    app.config.update(API_SETTINGS)
    # No request needs more: a custom rule set is a few hundred bytes. Larger bodies
    # are refused (413) before anything parses them.
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    from ledger.api import docs, ops

    app.config.update(docs.SETTINGS)  # /docs and /openapi.json; read by Api(app) below
    app.config.update(settings)
    ops.register(app)  # first of the hooks: the request id exists before anything logs
    book = book if book is not None else bootstrap.open_book(app.config.get("DATABASE_URL"))
    # How people read money and time: the club's currency, minor units and zone; and
    # the club's settings the commands keep (a raised limit's cooling-off).
    app.extensions["hazard.house"] = house.from_settings(app.config)
    app.extensions["hazard.club"] = Club(book, app.extensions["hazard.house"])
    from ledger.api import metrics

    book.store.held = metrics.clock_held  # each append that held its clock back, counted
    # Sign-ins and the writes the lock refused, counted into the log of significant
    # events and written at most once a window, with a count or a write that comes after
    # it (ledger.commands.significant).
    window = significant.window_setting(
        app.config.get(significant.WINDOW_ENV) or os.environ.get(significant.WINDOW_ENV)
    )
    tally = app.extensions["hazard.significant"] = significant.Tally(book.store, window)
    book.store.refused, book.store.wrote = tally.refused_write, tally.wrote
    # What one worker runs at once of the reads that scan much of the log (ledger.web.heavy).
    app.extensions["hazard.heavy"] = heavy.HeavyReads(
        book.store.engine, app.config.get("HEAVY_READS_AT_ONCE", heavy.AT_ONCE)
    )
    # What one worker serves at once of the requests that come without a token.
    app.extensions["hazard.strangers"] = anonymous.Strangers(
        app.config.get("ANONYMOUS_AT_ONCE", anonymous.AT_ONCE)
    )
    _witnesses(app, book)
    api = ContractApi(app)  # Api, its errors documented as problems (ledger.api.contract)
    api.spec.components.security_scheme(
        "bearer",
        {
            "type": "http",
            "scheme": "bearer",
            "description": "A token from `hazard token create --role ROLE --name NAME`",
        },
    )
    from ledger.api import limits, players, tables

    api.register_blueprint(players.blp)
    api.register_blueprint(limits.blp)
    api.register_blueprint(tables.blp)
    from ledger.api import audit, exports, log, reads, replays

    api.register_blueprint(reads.blp)
    api.register_blueprint(replays.blp)
    api.register_blueprint(audit.blp)
    api.register_blueprint(log.blp)
    api.register_blueprint(exports.blp)
    from ledger.api import clubreports, disputes, reports

    api.register_blueprint(reports.blp)
    api.register_blueprint(disputes.blp)
    from ledger.api import evenings

    api.register_blueprint(evenings.blp)
    api.register_blueprint(clubreports.blp)
    problems.register(app)
    from ledger import console

    console.register(app)

    protected = {
        blp.name
        for blp in (
            players.blp,
            limits.blp,
            tables.blp,
            reads.blp,
            replays.blp,
            audit.blp,
            log.blp,
            exports.blp,
            reports.blp,
            disputes.blp,
            evenings.blp,
            clubreports.blp,
        )
    }

    app.extensions["hazard.protected"] = protected

    @app.before_request
    def _authenticate() -> None:
        """Every API operation needs a live token, checked before the request is
        parsed: a caller without one learns nothing about what they sent. The
        operators' endpoints and the docs need none, and never touch the tokens."""
        g.holder = None
        if request.blueprint not in protected:
            return
        sent = request.headers.get("Authorization")
        view = app.view_functions.get(request.endpoint or "")
        if sent is None and anonymous.is_open(view):
            return  # the log's public reads: anyone, without a token (ledger.web.anonymous)
        g.holder = bearer(book.store.engine, sent)
        if g.holder is None:
            abort(401, message="a valid bearer token is required")

    return app


def _witnesses(app: Flask, book: Book) -> None:
    """The club's policy, and its pusher started when it names witnesses to push to."""
    from ledger.api import metrics

    def observe(witness: Witness, outcome: Outcome) -> None:
        metrics.witnessed(witness.name, outcome.state.value, outcome.cosigned_size)

    policy, pusher = bootstrap.witnesses(
        book.store,
        app.config.get("HAZARD_POLICY"),
        app.config.get("HAZARD_WITNESS_INTERVAL"),
        observe,
        app.config.get("WITNESS_TIMEOUT", TIMEOUT_S),
    )
    app.extensions["hazard.policy"] = policy
    app.extensions["hazard.pusher"] = pusher
    if pusher is not None:
        pusher.start()


def generate() -> str:
    """openapi.yaml's text (ledger.api.contract). The contract does not depend on data:
    the app runs on an empty database in memory, which is never touched."""
    engine = db.make_engine("sqlite://")
    try:
        # A key of its own: nothing is signed, but the app will not start without one.
        signer = Signer.generate("openapi.hazard/ledger")
        store = EventStore(engine, signer=signer)
        return to_yaml(of(create_app(book=Book(store), HAZARD_POLICY="")))
    finally:
        engine.dispose()


def bearer(engine: Any, header: str | None) -> Holder | None:
    """The holder of the live token an Authorization header sends, or None."""
    if header is None or not header.startswith("Bearer "):
        return None
    return holder(engine, header.removeprefix("Bearer ").strip())


def may_send_body(app: Flask, method: str, path: str, authorization: str | None) -> bool:
    """Whether `app` reads the body of a request with this head: not when it refuses
    the request from its head alone, as it does one to no path it has, or one without a
    live token to an operation that needs one (`_authenticate`). `hazard serve`'s
    workers ask before they wait for a body that has not all come, and hand such a
    request to the app at once, to be answered without it (ledger.api.slowclients)."""
    try:
        endpoint, _ = app.url_map.bind("localhost").match(unquote(path), method)
    except HTTPException:  # no such path or method; a redirect
        return False
    if endpoint.rpartition(".")[0] not in app.extensions["hazard.protected"]:
        return True
    if authorization is None and anonymous.is_open(app.view_functions.get(endpoint)):
        return True
    engine = app.extensions["hazard.club"].store.engine
    return bearer(engine, authorization) is not None
