"""The club's console: web pages for the croupier, the setter, the player and the
auditor, served by the same app as the API, on the same write path and the same roles.

Pages are rendered by the server (Jinja2). htmx (static/vendor, served from here) sends
a form and swaps in the parts of the page its write changed, so a write never reloads
the page; every form still works without script, as a plain POST and a redirect. A
little plain JavaScript stops a double click posting twice, keeps a table's view live
(static/table.js: htmx asks for its parts every second), and the player's page
checks her receipts in her own browser (static/receipts.js, with the log's proofs and
signatures in static/tlog.js), so that the check is not the server's word. Every asset
is served from this package: no CDN. A person signs in by pasting their API token once; it is
kept in Flask's signed session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS),
never in a URL or a page. Every form carries a CSRF token and an idempotency key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from flask import Flask, Request, Response, request
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface, SessionMixin

SECRET_ENV = "HAZARD_SECRET_KEY"


class _Sessions(SecureCookieSessionInterface):
    """The session cookie is Secure when the request came over HTTPS (directly, or as
    the proxy in front says with X-Forwarded-Proto, which ProxyFix trusts)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        req: Request = request
        return bool(req.is_secure) or bool(app.config.get("SESSION_COOKIE_SECURE"))

    # Flask opens a session for every request, the API's too, and its own interface
    # builds the signing serializer before it looks for a cookie, and reads every cookie
    # setting before it finds an untouched session has nothing to save: about 10 us of
    # each API request, which sends no cookie (docs/performance.md, issue 27's "http").
    # Both answer as Flask's do; they only look first.

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if app.secret_key and not request.cookies.get(self.get_cookie_name(app)):
            return self.session_class()
        return super().open_session(app, request)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if not session and not session.modified and not session.accessed:
            return
        super().save_session(app, session, response)


def register(app: Flask) -> None:
    from ledger.console import views

    app.session_interface = _Sessions()
    # The token is in this cookie: script on a page never reads it, and no other site's
    # page makes the browser send it.
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    app.config["SESSION_COOKIE_SAMESITE"] = "Strict"
    app.config["SESSION_COOKIE_NAME"] = "hazard_console"
    app.config["WTF_CSRF_TIME_LIMIT"] = None  # a form lives as long as the session
    # The back office's, the auditor's, the player's and the table's routes join the
    # blueprint before it is registered: a route added after that would never be served.
    from ledger.console import (
        audit,
        disputes,
        evenings,
        limits,
        office,
        periods,
        player,
        table,
        tabledisputes,
        tableforms,
    )

    del audit, disputes, evenings, limits, office, periods, player, table, tabledisputes
    del tableforms
    from ledger.console import clubbooks  # the club's books: exceptions, sign-ins, ...

    del clubbooks
    app.register_blueprint(views.blp)
    _filters(app)
    from ledger.console import errors

    errors.register(app)  # the API's problems, under the console, as pages
    # Every worker derives the same secret from the same signing key: a session signed
    # by one is read by the other, and survives a restart.
    if not app.secret_key:
        app.secret_key = secret_key(app)


def secret_key(app: Flask) -> str:
    """HAZARD_SECRET_KEY if set; else HMAC-SHA256 of the log's signing key (so it is as
    secret as that key and needs no file of its own); else, a store that cannot sign,
    a secret of this process alone."""
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    signer = app.extensions["hazard.club"].store.signer
    if signer is not None:
        return hmac.new(signer.seed, b"hazard console sessions", hashlib.sha256).hexdigest()
    return secrets.token_hex(32)


def _filters(app: Flask) -> None:
    """Money and time as the club writes them (ledger.house), for every template:
    `{{ amount|money }}`, `{{ net|signed }}`, `{{ amount|inwords }}`,
    `{{ event.recorded_at|when }}`."""
    from flask import current_app

    from ledger.house import House

    def house() -> House:
        found: House = current_app.extensions["hazard.house"]
        return found

    app.add_template_filter(lambda minor: house().money(minor), "money")
    app.add_template_filter(lambda minor: house().money(minor, signed=True), "signed")
    app.add_template_filter(lambda minor: house().words(minor), "inwords")
    app.add_template_filter(lambda at: house().when(at), "when")
    app.add_template_global(house, "house")
