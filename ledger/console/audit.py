"""The auditor's pages: the event log, verify with its progress, the latest signed
checkpoint, exports to download, a round's replay stepped throw by throw, and the
dice-fairness report with its chart. For the auditor and the setter.

What they read is what the API reads: ledger.books.queries' event pages, the check of
GET /audit/verify (ledger.web.verify.check), ledger.store.log.proofs' checkpoint, the
exports of GET /export (ledger.api.exports.export_response), ledger.audit.replay and
ledger.audit.fairness. Nothing here writes. The pages that read much of the log (verify,
a round's replay, the dice-fairness report, an export) are heavy reads of the signed-in
token, held as the API's are (ledger.web.heavy): a reader's pages cannot shut out the
others'.
"""

from __future__ import annotations

from typing import Any

from flask import abort, current_app, jsonify, redirect, render_template, request, url_for
from marshmallow import Schema, ValidationError, validate

from engine.dice import TOTALS, p_total
from ledger.audit import fairness, replay
from ledger.books import queries, tableviews
from ledger.commands import Role
from ledger.console import payloads
from ledger.console.views import _fields, _signed_in, _tables, _url_values, blp
from ledger.house import House
from ledger.service import NotFound, is_name, table_stream
from ledger.store.log import chains, proofs
from ledger.store.log.check import snapshot
from ledger.web import charts, club, heavy
from ledger.web import readschemas as rs
from ledger.web.exports import ExportQuerySchema, export_response
from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import SMALL, DiceQuerySchema
from ledger.web.verify import check
from ledger.web.views import step_view

READERS = (Role.SETTER, Role.AUDITOR)
PAGE = 50
"""Events on a page of the log."""
VERIFY_PAGE = 20_000
"""Events one step of the verify page checks: a request's worth, the progress shown
between them."""
STEPS = 500
"""The most steps of a round the replay page walks (a round is tens of events)."""


# Accounts and payloads as people read them, on the auditor's pages and the office's.
blp.add_app_template_filter(payloads.party, "party")


@blp.app_template_filter("readable")
def readable(payload: dict[str, Any]) -> list[payloads.Field]:
    """`{{ event.payload|readable }}`: its fields, for _payload.html."""
    house: House = current_app.extensions["hazard.house"]
    return payloads.fields(payload, house)


class StepQuerySchema(Schema):
    """The replay page's own parameter, read as the API reads a number in a query."""

    step = QueryInteger(load_default=1, validate=validate.Range(1, STEPS))


def _query(schema: Schema) -> dict[str, Any]:
    """The request's query, its values stripped of the spaces a form's field may carry,
    read by `schema` (the API's own, for what the API takes too)."""
    return _url_values(schema, {name: value.strip() for name, value in request.args.items()})


@blp.route("/console/audit", methods=["GET"])
def audit() -> Any:
    """The event log a page at a time, newest last (the last page unless `after` says
    otherwise), the log's head and its latest signed checkpoint, and the ways on."""
    who = _signed_in(*READERS)
    store = club().store
    # A position, as GET /events reads `after`; by default, the last page.
    asked = _query(rs.PageQuerySchema(only=("after",))).get("after")
    with queries.reading(store) as read:
        # The head by two seeks, not GET /audit/head's digest of every stream's head,
        # which reads them all (the page links to it).
        head = chains.newest(read.conn)
        after = asked if asked is not None else max(0, head["position"] - PAGE)
        page = read.events(None, after, PAGE)
        try:
            checkpoint: dict[str, Any] | None = proofs.latest(read.conn).view()
        except proofs.NoCheckpoint:
            checkpoint = None
    return render_template(
        "audit.html",
        who=who,
        head=head,
        events=page["items"],
        after=after,
        before=max(0, after - PAGE) if after else None,
        next_after=page["next_after"],
        checkpoint=checkpoint,
        key=store.signer.verifier.text() if store.signer is not None else None,
        tables=_tables()[0],
    )


# -- verify, with its progress ---------------------------------------------------------


@blp.route("/console/audit/verify", methods=["GET"])
@heavy.held
def verify() -> Any:
    """The log checked as GET /audit/verify checks it, a page of events at a time. With
    script, the page asks for each page in turn (`verify_step`) and moves a progress
    bar; without, each page is a request of its own, and a link goes on to the next."""
    who = _signed_in(*READERS)
    report = None
    if "after" in request.args:
        report = check(_verified_after(), VERIFY_PAGE)
    return render_template("verify.html", who=who, report=report, page=VERIFY_PAGE)


@blp.route("/console/audit/verify/step", methods=["GET"])
@heavy.held
def verify_step() -> Any:
    """One page of the check, as JSON, for the verify page's script to show."""
    _signed_in(*READERS)
    report = check(_verified_after(), VERIFY_PAGE)
    response = jsonify(report)
    response.headers["Cache-Control"] = "no-store"
    return response


def _verified_after() -> int:
    """Where this page of the check starts, as GET /audit/verify reads `after`."""
    after: int = _query(rs.VerifyQuerySchema(only=("after",)))["after"]
    return after


# -- exports ---------------------------------------------------------------------------


@blp.route("/console/audit/export", methods=["GET"])
def export() -> Any:
    """A file to download: the export GET /export streams, as the signed-in reader."""
    who = _signed_in(*READERS)
    try:
        query = ExportQuerySchema().load(request.args)
    except ValidationError as exc:
        abort(400, description=_fields(exc))
    return export_response(who, query)


# -- a round's replay ------------------------------------------------------------------


@blp.route("/console/audit/replay", methods=["GET"])
def replay_pick() -> Any:
    """The replay form's answer: on to the round's page."""
    _signed_in(*READERS)
    # A table and a round, as GET /settlements reads them.
    query = _query(rs.SettlementQuerySchema(only=("table", "round")))
    if "table" not in query:
        abort(400, description="table: name the table whose round to replay")
    return redirect(url_for("console.replay", table=query["table"], round=query.get("round", 1)))


@blp.route("/console/audit/replay/<table>/<int:round>", methods=["GET"], endpoint="replay")
@heavy.held
def replay_step(table: str, round: int) -> Any:
    """Round `round` of `table`, at step `step` (1, its first event, by default): the
    event, the table after it, the money it moved, the settlements it made and its
    parties' balances either side, with controls to step back and on."""
    who = _signed_in(*READERS)
    step = _query(StepQuerySchema())["step"]
    store = club().store
    stream = table_stream(table)
    with store.engine.connect() as conn:
        if not is_name(table) or not store.stream_version(conn, stream):
            abort(404, description=f"there is no table {table!r}")
        row = tableviews.round_row(conn, stream, round) if round <= SMALL else None
        if row is None:
            abort(404, description=f"table {table!r} has no round {round}")
        steps, more = replay.round_page(conn, store, row, 0, step)
    if not steps:
        abort(404, description=f"round {round} of table {table!r} has no events")
    if len(steps) < step:
        return redirect(url_for("console.replay", table=table, round=round, step=len(steps)))
    shown = step_view(table, steps[step - 1])
    return render_template(
        "replay.html",
        who=who,
        table=table,
        round=tableviews.round_view(row),
        step=step,
        last=more is None,
        s=shown,
        throws=[(i + 1, x.payload) for i, x in enumerate(steps) if x.type == "DiceThrown"],
    )


# -- the dice-fairness report ------------------------------------------------------------


TABLES_NAMED = 20
"""How many of each rule set's tables the whole club's report names on the page, the
newest (with how many more): a club's thousands of tables are a count to a person, and
every name is GET /reports/dice's."""


@blp.route("/console/audit/fairness", methods=["GET"])
@heavy.held
def fairness_report() -> Any:
    """The dice-fairness report (GET /reports/dice's) of the club or one table: observed
    totals against the exact 2d6 distribution, as a chart and as numbers."""
    who = _signed_in(*READERS)
    # A table, as GET /reports/dice reads it; none (or the form left blank): the club.
    asked = request.args.get("table", "").strip()
    query = _url_values(DiceQuerySchema(only=("table",)), {"table": asked} if asked else {})
    table = query.get("table")
    scope = fairness.Scope(table=table)
    try:
        with club().store.engine.connect() as conn, conn.begin():
            snapshot(conn)
            house: House = current_app.extensions["hazard.house"]
            report = fairness.report(conn, scope, house.fairness_alpha, named=TABLES_NAMED)
    except NotFound as exc:
        abort(404, description=str(exc))
    cells = report["totals"]["cells"]
    chart = charts.columns(
        [(str(c["total"]), c["observed"]) for c in cells],
        title=f"Observed totals of {report['throws']} throws against the exact distribution",
        unit="throws",
        marks=[report["throws"] * float(p_total(t)) for t in TOTALS],
        legend=["bars: throws observed", "lines: throws expected"],
    )
    return render_template(
        "fairness.html",
        who=who,
        report=report,
        chart=chart,
        table=table,
        tables=_tables()[0],
        lines=fairness.lines(report),
    )
