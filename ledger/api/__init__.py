"""The REST API: an application factory, the one place the service is wired together.

    create_app()                      # DATABASE_URL, or the embedded SQLite default
    create_app(book=Book(...))        # tests: an explicit store
"""

from __future__ import annotations

from typing import Any

from flask import Flask, g, request
from flask_smorest import Api, abort

from ledger import bootstrap
from ledger.api import problems
from ledger.book import Book
from ledger.service import Club
from ledger.tokens import Holder, Role, holder

API_SETTINGS = {
    "API_TITLE": "Hazard ledger",
    "API_VERSION": "1",
    "OPENAPI_VERSION": "3.0.3",
    "API_SPEC_OPTIONS": {
        "security": [{"bearer": []}],
        "info": {"description": "An event-sourced betting ledger for the game of Hazard."},
    },
}


def create_app(book: Book | None = None, **settings: Any) -> Flask:
    app = Flask("hazard")
    app.config.update(API_SETTINGS)
    app.config.update(settings)
    book = book if book is not None else bootstrap.open_book(app.config.get("DATABASE_URL"))
    app.extensions["hazard.club"] = Club(book)
    api = Api(app)
    api.spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    from ledger.api import players, tables

    api.register_blueprint(players.blp)
    api.register_blueprint(tables.blp)
    problems.register(app)

    @app.before_request
    def _authenticate() -> None:
        g.holder = None
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            g.holder = holder(book.store.engine, header.removeprefix("Bearer ").strip())

    return app


def club() -> Club:
    from flask import current_app

    found: Club = current_app.extensions["hazard.club"]
    return found


def require(*roles: Role) -> Holder:
    """The caller, who must hold one of `roles` (the setter may do anything)."""
    who: Holder | None = g.get("holder")
    if who is None:
        abort(401, message="a bearer token is required")
    assert who is not None
    if who.role is not Role.SETTER and who.role not in roles:
        abort(403, message=f"a {who.role.value} may not do this")
    return who


def scoped_key(who: Holder, headers: dict[str, Any]) -> str | None:
    """The request's Idempotency-Key, scoped to the token that sent it, so that two
    clients who happen to pick the same key never see each other's answers."""
    key = headers.get("idempotency_key")
    return None if key is None else f"{who.id}:{key}"


def require_self(who: Holder, player: str) -> None:
    """A player acts only for themselves."""
    if who.role is Role.PLAYER and who.name != player:
        abort(403, message=f"a player acts for themselves only, not for {player!r}")
