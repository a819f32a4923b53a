"""Errors under the console are pages for people, never a JSON problem.

The API answers every error as a problem (ledger.api.problems, application/problem+json),
and those handlers are the app's: a URL under /console/ that matches no page (a 404
from the router, before any blueprint is chosen), a method a page does not take (405),
a refusal raised by a command that the page did not catch, a busy database, an
unexpected fault (500). Rather than a second set of handlers that could drift from the
first, the console turns the problem the API's handlers made into its page
(refused.html): the same status, the same words, and the headers HTTP requires of it
(Retry-After on 429 and 503, Allow on 405). The API's own paths keep their problems.

A write sent by htmx gets only the announcement of its refusal, swapped in out of band
as an alert (role="alert": what the person did was not done), and the page stays as it
was (HX-Reswap: none).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, g, json, render_template, request, session

from ledger.web import club
from ledger.web.tokens import Holder, holder

PROBLEM_JSON = "application/problem+json"
"""The API's problems' media type (ledger.api.problems, which the console may not import)."""

TITLES = {
    400: "The request was not understood",
    401: "Not signed in",
    403: "Not yours to open",
    404: "Not found",
    405: "Not done that way",
    409: "Changed meanwhile",
    413: "Too large",
    422: "Refused",
    429: "Too many at once",
    500: "Something went wrong on our side",
    503: "Busy, or not ready",
}
"""A status, in words, as an error page's heading says it."""


def title(status: int) -> str:
    return TITLES.get(status, "Refused" if status < 500 else "Not served")


def is_console(path: str) -> bool:
    """Whether `path` is one of the console's (its pages, its static files) rather than
    the API's."""
    return path == "/" or path.startswith("/console/") or path == "/console"


def register(app: Flask) -> None:
    app.add_template_global(title, "refusal_title")
    app.after_request(_as_page)


def page(status: int, reason: str, headers: dict[str, str] | None = None) -> Response:
    """The console's answer to a refusal or a fault: refused.html, or to htmx the
    announcement alone, swapped in out of band (HX-Reswap: none), so that the page stays
    as it was and says why."""
    if request.headers.get("HX-Request") == "true":
        html = render_template("_announce.html", said=f"Refused: {reason}", oob=True, alert=True)
        answer = Response(html, status=status, mimetype="text/html")
        answer.headers["HX-Reswap"] = "none"
    else:
        html = render_template("refused.html", who=_who(status), status=status, reason=reason)
        answer = Response(html, status=status, mimetype="text/html")
    answer.headers.update(headers or {})
    return answer


def _as_page(response: Response) -> Response:
    if response.mimetype != PROBLEM_JSON or not is_console(request.path):
        return response
    try:
        problem: dict[str, Any] = json.loads(response.get_data())
    except ValueError:  # pragma: no cover - the API's handlers write JSON
        problem = {}
    status = response.status_code
    answer = page(status, str(problem.get("detail") or title(status)))
    # What HTTP asks of the status (Retry-After, Allow), as the problem carried it.
    for name, value in response.headers.items():
        if name.lower() not in ("content-type", "content-length"):
            answer.headers[name] = value
    return answer


def _who(status: int) -> Holder | None:
    """Who is signed in, for the page's ways on: as the console's pages found them, or,
    where none ran (a URL the router did not know), from the session, unless the fault
    is the server's (a 5xx: the database may be what failed)."""
    if request.blueprint == "console":  # its pages read the session (views._who)
        found: Holder | None = g.get("holder")
        return found
    token = session.get("token")
    if status >= 500 or not isinstance(token, str):
        return None
    return holder(club().store.engine, token)
