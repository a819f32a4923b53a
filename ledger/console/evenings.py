"""The console's evenings, for the setter and the auditor: the list of evenings, the
setter's forms to open one (a float per table and at the cage) and to cash it up (the
cash counted at each of its places), and each evening's night report, on screen with
its charts and as a PDF (ledger.web.nightpage). The forms call the same commands as
the API (ledger.commands.evenings); a refusal is said on the page, naming its rule, and
writes nothing. The cash-up form shows the floats, not what the books expect: the count
is blind, so the difference is what was found."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, redirect, render_template, request, url_for
from marshmallow import ValidationError

from ledger.books import cashup, nightreport
from ledger.commands import Role
from ledger.commands import evenings as evening_commands
from ledger.commands.evenings import EveningRefused
from ledger.console.office import house, keep, kept
from ledger.console.views import _check_csrf, _fields, _sent, _signed_in, _tables, blp
from ledger.house import BadAmount
from ledger.store.eventstore import Refused
from ledger.store.idempotency import IdempotencyConflict
from ledger.web import club, nightpage
from ledger.web.tokens import Holder

READERS = (Role.SETTER, Role.AUDITOR)
PAGE = "evenings"


@blp.route("/console/evenings", methods=["GET"])
def evenings() -> Any:
    """Every evening, and the setter's form: open one, or cash up the one open."""
    who = _signed_in(*READERS)
    _, said = kept(PAGE)
    return _page(who, said=said)


def _page(who: Holder, *, said: str = "", error: str = "", status: int = 200) -> Any:
    open_now = cashup.to_count(club().store)
    tables, _ = _tables() if open_now is None else ([], None)
    return (
        render_template(
            "evenings.html",
            who=who,
            said=said,
            error=error,
            listed=nightreport.listing(club().store)[::-1],
            open_now=open_now[0] if open_now else None,
            places=open_now[1] if open_now else [],
            tables=sorted(tables),
            form=request.form if request.method == "POST" else {},
        ),
        status,
    )


def _amounts(prefix: str) -> tuple[dict[str, int], int]:
    """The form's amounts, typed in the club's money: per table (`PREFIX:table`, a blank
    one left out) and at the cage (`PREFIX-cage`, blank: 0)."""
    tables = {}
    for field, typed in request.form.items():
        if field.startswith(prefix + ":") and typed.strip():
            table = field.split(":", 1)[1]
            try:
                tables[table] = house().parse(typed)
            except BadAmount as exc:
                raise BadAmount(f"table {table}: {exc}") from None
    typed = request.form.get(prefix + "-cage", "").strip()
    try:
        cage = house().parse(typed) if typed else 0
    except BadAmount as exc:
        raise BadAmount(f"the cage: {exc}") from None
    return tables, cage


def _write(action: str) -> Any:
    who = _signed_in(Role.SETTER)
    _check_csrf()
    try:
        tables, cage = _amounts(action)
        sent = _sent(who)
        if action == "float":
            answer = evening_commands.open_evening(club(), who, tables, cage, **sent)
            said = f"Opened evening {answer['evening']}."
        else:
            answer = evening_commands.close_evening(club(), who, tables, cage, **sent)
            short = sum(line["difference"] for line in answer["cash_up"])
            said = (
                f"Cashed up evening {answer['evening']}: "
                f"{house().money(short, signed=True)} against the books."
            )
    except BadAmount as exc:
        return _page(who, error=f"Refused: {exc}", status=422)
    except ValidationError as exc:  # the form's key, read as the API reads the header
        return _page(who, error=f"Refused: {_fields(exc)}", status=422)
    except EveningRefused as exc:
        return _page(who, error=f"Refused ({exc.rule}): {exc.detail}", status=exc.status)
    except (IdempotencyConflict, Refused) as exc:
        return _page(who, error=f"Refused: {exc}", status=422)
    keep(PAGE, None, said)
    if action == "count":
        return redirect(url_for("console.night", evening=answer["evening"]))
    return redirect(url_for("console.evenings"))


@blp.route("/console/evenings/open", methods=["POST"])
def open_evening() -> Any:
    return _write("float")


@blp.route("/console/evenings/cash-up", methods=["POST"])
def cash_up() -> Any:
    return _write("count")


def _night(number: int) -> dict[str, Any]:
    found = nightreport.of_evening(club().store, number)
    if found is None:
        abort(404, description=f"there is no evening {number}")
    assert found is not None
    return found


@blp.route("/console/evenings/<int:evening>", methods=["GET"])
def night(evening: int) -> Any:
    """An evening's night report, with its charts."""
    who = _signed_in(*READERS)
    night = _night(evening)
    _, said = kept(PAGE)
    return render_template(
        "night.html",
        who=who,
        said=said,
        night=night,
        currency=house().currency,
        **nightpage.charts_of(night, house()),
    )


@blp.route("/console/evenings/<int:evening>/report.pdf", methods=["GET"])
def night_pdf(evening: int) -> Response:
    """The night report printed (one or two A4 pages, the covering checkpoint on it)."""
    _signed_in(*READERS)
    pdf = nightpage.pdf(_night(evening), house())
    return Response(
        pdf,
        mimetype="application/pdf",
        headers={"Content-Disposition": f'inline; filename="night-{evening}.pdf"'},
    )
