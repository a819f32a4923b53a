"""The club's books on the console, for the setter and the auditor: the exceptions
report, the authentication report and the log of significant events, for a period,
with the CSV of the page shown. What they read is GET /reports/*'s
(ledger.books.significant), with the API's own schema for the period; nothing here
writes. Each is held as a heavy read of the signed-in token (ledger.web.heavy), as
the API holds it.
"""

from __future__ import annotations

from typing import Any

from flask import Response, render_template, request

from ledger.books import significant as book
from ledger.commands import Role
from ledger.console.views import _signed_in, _url_values, blp
from ledger.store.log.check import snapshot
from ledger.web import club, heavy
from ledger.web.bookschemas import PeriodQuerySchema

READERS = (Role.SETTER, Role.AUDITOR)

BOOKS = {
    "exceptions": ("Exceptions: voids, corrections, adjustments", book.exceptions,
                   book.EXCEPTION_COLUMNS),
    "authentication": ("Authentication: tokens and sign-ins", book.authentication,
                       book.SIGNIFICANT_COLUMNS),
    "significant": ("Significant events", book.significant, book.SIGNIFICANT_COLUMNS),
}  # fmt: skip


def _page(name: str) -> tuple[book.Page, dict[str, Any]]:
    # Blank fields of the period form are left out, as the API leaves out what is not sent.
    asked = {k: v.strip() for k, v in request.args.items() if v.strip()}
    query = _url_values(PeriodQuerySchema(), asked)
    read = BOOKS[name][1]
    with club().store.engine.connect() as conn, conn.begin():
        snapshot(conn)
        page = read(conn, book.Period(query.get("since"), query.get("until")), query["after"])
    return page, asked


def _book_page(name: str) -> Any:
    """One of the club's books for the period asked (all of it if none), a page at a time."""
    who = _signed_in(*READERS)
    page, asked = _page(name)
    return render_template(
        "books.html",
        who=who,
        name=name,
        books={k: v[0] for k, v in BOOKS.items()},
        title=BOOKS[name][0],
        page=page,
        asked=asked,
    )


def _book_csv(name: str) -> Response:
    """The page of the book as CSV, as GET /reports/<name>.csv answers it."""
    _signed_in(*READERS)
    page, _ = _page(name)
    headers = {"Content-Disposition": f'attachment; filename="hazard-{name}.csv"'}
    return Response(book.as_csv(page.rows, BOOKS[name][2]), mimetype="text/csv", headers=headers)


def _routes(name: str) -> None:
    """A page and its CSV for the book `name`: `console.book_<name>`, `console.csv_<name>`."""

    def page() -> Any:
        return _book_page(name)

    def csv() -> Response:
        return _book_csv(name)

    blp.add_url_rule(f"/console/books/{name}", f"book_{name}", heavy.held(page))
    blp.add_url_rule(f"/console/books/{name}.csv", f"csv_{name}", heavy.held(csv))


for _name in BOOKS:
    _routes(_name)
