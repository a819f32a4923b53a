"""What the club's two web surfaces share: the REST API (ledger.api) and the console's
pages (ledger.console) read a request alike, and sit side by side on it.

Both are served by one app (ledger.api.create_app, the one place that wires them
together), under one token per caller, and both run the same commands
(ledger.commands) and reads (ledger.books, ledger.audit). What each needs of the web
besides is here, below both, so that neither imports the other:

  - who is asking (`tokens`: a bearer token's holder) and the club they ask of
    (`club`), with an idempotency key scoped to the asker (`scoped_key`, `sent_by`);
  - what they may send, checked the same way wherever it is typed (`schemas`,
    `readschemas`, `logschemas`, `disputeschemas`, `numbers`: an API body and a
    console form; a query and a page's URL): a value the API refuses with 422 the
    console refuses too;
  - the table's writes by name (`tablewrites`), each a command of ledger.commands with
    the schema of what it takes;
  - what they show (`views`: a table's state, a replay's step), the log's check a page
    at a time (`verify`) and an export as a download (`exports`);
  - the cap on the reads that scan much of the log (`heavy`), which a caller's API
    requests and console pages share.

The API's own (its routes, its problem details, its contract, `hazard serve`) stays in
ledger.api, the console's pages in ledger.console.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app

from ledger.commands import Sent
from ledger.service import Club
from ledger.web.tokens import Holder


def club() -> Club:
    """The club the app serves."""
    found: Club = current_app.extensions["hazard.club"]
    return found


def scoped_key(who: Holder, headers: Mapping[str, Any]) -> str | None:
    """The request's Idempotency-Key (a form's key), scoped to the token that sent it,
    so that two clients who happen to pick the same key never see each other's
    answers."""
    key = headers.get("idempotency_key")
    return None if key is None else f"{who.id}:{key}"


def sent_by(who: Holder, headers: Mapping[str, Any]) -> Sent:
    """How `who` sent a write, as a command takes it (ledger.commands.tables.Sent): the
    key scoped to them, and the version they saw. `headers` as WriteHeadersSchema or
    TableWriteHeadersSchema loads them, from an API request's headers or from a console
    form's fields (ledger.console.views._sent)."""
    return {"key": scoped_key(who, headers), "if_match": headers.get("if_match")}
