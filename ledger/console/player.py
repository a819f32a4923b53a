"""The player's own page: their balance, open bets, statement and disputes, and a
dispute opened over a round they had money in.

The statement is ledger.books.statements' (newest first, the balance after each entry,
paged by keyset, filtered by table and by evening) in ledger.books.wording's words;
money and times are the club's (ledger.house, through the templates' filters). A
dispute is the API's own command (ledger.commands.disputes.open_dispute, as POST
/tables/{t}/rounds/{r}/disputes runs it), its form read by the API's own schema
(OpenDisputeSchema) and headers (its key as an Idempotency-Key, its version as
If-Match), as the signed-in player. Sent by htmx, the answer swaps in the form's place
and is said in the page's aria-live region; without script it is a plain POST and a
redirect to the dispute's page.
"""

from __future__ import annotations

from typing import Any

from flask import (
    abort,
    current_app,
    flash,
    get_flashed_messages,
    make_response,
    redirect,
    render_template,
    request,
    url_for,
)
from marshmallow import Schema, ValidationError, fields, validate

import engine as hz
from engine import serverdice
from ledger.audit import disputes
from ledger.books import (
    disputeviews,
    evenings,
    inplay,
    queries,
    statements,
    tableviews,
    wording,
)
from ledger.books.accounts import TABLE_PREFIX, account_stream, owed, player_account
from ledger.commands import NotPermitted, Role
from ledger.commands import disputes as dispute_commands
from ledger.console import amounts
from ledger.console.limits import reality_of
from ledger.console.views import (
    _check_csrf,
    _club_policy,
    _fields,
    _int,
    _receipts,
    _sent,
    _signed_in,
    _url_values,
    blp,
)
from ledger.house import House
from ledger.service import NotFound, StaleVersion
from ledger.store.eventstore import Refused
from ledger.store.log import proofs
from ledger.store.log.chains import parsed
from ledger.web import club
from ledger.web.disputeschemas import OpenDisputeSchema
from ledger.web.logschemas import InclusionQuerySchema
from ledger.web.numbers import QueryInteger
from ledger.web.readschemas import BIG, SMALL
from ledger.web.schemas import NAME, TableWriteHeadersSchema

BET_KINDS = {"caster": "stake as caster", "laid": "laid stake", "odds": "odds", "side": "side bet"}
OUTCOMES = {
    "open": "waiting for the setter",
    "upheld": "upheld: the round stands",
    "voided": "voided: every bet of the round reversed",
    "corrected": "corrected",
}
THROWS_SHOWN = 500
"""The most of a round's events read for the throws a dispute may name."""


class StatementQuerySchema(Schema):
    """What the statement's address may ask: a table, an evening, and the page."""

    table = fields.String(validate=NAME)
    evening = fields.String(validate=validate.Length(10, 10))
    before = QueryInteger(validate=validate.Range(1, BIG))
    after = QueryInteger(validate=validate.Range(0, BIG))


def _house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


def _flashed() -> str:
    """What the write before a redirect said, for this page's aria-live region."""
    return " ".join(str(message) for message in get_flashed_messages())


def _htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


# -- the page --------------------------------------------------------------------------


@blp.route("/console/me", methods=["GET"])
def me(errors: dict[str, str] | None = None) -> str:
    """A player's balance, open bets, statement and disputes, and their throw at a
    server-dice table where they hold the dice; with `errors` (a throw of theirs the
    table refused: ledger.console.views._my_page) beside the controls that sent them."""
    return page(_signed_in(Role.PLAYER), errors or {})


def page(who: Any, errors: dict[str, str]) -> str:
    """The player's page, as the address asks for its statement."""
    # A filter left at "every" (the form sends it empty) asks for nothing.
    asked = _url_values(StatementQuerySchema(), {k: v for k, v in request.args.items() if v})
    if "before" in asked and "after" in asked:
        abort(400, description="a page is before a position or after one, not both")
    account = player_account(who.name)
    shown = statements.Filter()
    with queries.reading(club().store) as read:
        conn = read.conn
        if "table" in asked:
            if not read.has_stream(TABLE_PREFIX + asked["table"]):
                abort(404, description=f"there is no table {asked['table']!r}")
            shown = statements.Filter(stream=TABLE_PREFIX + asked["table"])
        evening = None
        if "evening" in asked:
            day = evenings.day_of(asked["evening"])
            if day is None:
                abort(400, description="evening: a date, as YYYY-MM-DD")
            evening = evenings.of_day(conn, _house().zone, day)
            shown = statements.Filter(shown.stream, evening)
        balance, limit = club().standing(conn, who.name)  # as GET /players/{p}/balance
        found = statements.page(
            conn, account, who.name, shown, before=asked.get("before"), after=asked.get("after")
        )
        mine = disputeviews.listing(conn, claimant=who.name, limit=200)
        kept = _receipts(conn, (entry.position for entry in found.entries))
        playing = inplay.tables(conn, who.name)
    # The states of the tables with a bet open or where the player may hold the dice,
    # and of those alone: the page grows with the tables in play, not the club's all.
    states = {t: club().state(t) for t in playing}
    open_bets = [(t, b) for t, st in states.items() for b in st.open_bets if who.name in b.parties]
    disputed = {(d["table"], d["round"]): d for d in mine}
    # The tables the filter offers: those on this page and those with the player's bets.
    named = {e.table for e in found.entries if e.table} | {t for t, _ in open_bets}
    return render_template(
        "me.html",
        who=who,
        balance=balance,
        credit_limit=limit,
        owed=owed(balance, limit),
        lines=[_line(entry, disputed) for entry in found.entries],
        found=found,
        filters={k: asked[k] for k in ("table", "evening") if k in asked},
        evening=evening,
        tables=sorted(named | {asked["table"]} if "table" in asked else named),
        open_bets=open_bets,
        kinds=BET_KINDS,
        throws=_throws(who, states),
        errors=errors,
        disputes=[_dispute_line(d, account) for d in mine],
        receipts=kept,
        policy=_club_policy(),
        said=_flashed(),
        reality=reality_of(who),  # the reality check (ledger.console.limits)
    )


def _line(entry: statements.Entry, disputed: dict[tuple[str, int], Any]) -> dict[str, Any]:
    """A statement entry as the page shows it: its words, and what may be done with it."""
    settled = entry.type == "BetSettled" and entry.table is not None and entry.round is not None
    return {
        "entry": entry,
        "words": wording.describe(entry, _house()),
        "disputable": settled,
        "disputed": disputed.get((entry.table or "", entry.round or 0)) if settled else None,
    }


def _dispute_line(d: dict[str, Any], account: str) -> dict[str, Any]:
    """A dispute of the player's, with what its adjustments moved to or from them, and
    the service's answer (when read) as it concerns them."""
    net = sum(_moved(a["transfers"], account) for a in d["adjustments"])
    answer = d.get("answer")
    return {
        **d,
        "outcome": _outcome(d),
        "net": net,
        "mine": _my_bets(answer, account) if answer else [],
        "would_move": sum(_moved(a["transfers"], account) for a in answer["what_if"]["adjustments"])
        if answer and answer.get("what_if")
        else 0,
    }


def _moved(transfers: list[dict[str, Any]], account: str) -> int:
    """What `transfers` move into (+) or out of (-) `account`."""
    return sum(
        (t["amount"] if t["target"] == account else 0)
        - (t["amount"] if t["source"] == account else 0)
        for t in transfers
    )


def _my_bets(answer: dict[str, Any], account: str) -> list[dict[str, Any]]:
    """The bets of the disputed round the player had money on: each as recorded and, with
    the claimed dice, as it would have gone (ledger.audit.disputes.answer_view's)."""
    what_if = {b["bet_id"]: b for b in (answer.get("what_if") or {}).get("bets", [])}
    rows = []
    for bet in answer["bets"]:
        other = what_if.get(bet["bet_id"])
        if account not in bet["net"] and (other is None or account not in other["net"]):
            continue
        rows.append(
            {
                "bet_id": bet["bet_id"],
                "outcome": bet["outcome"],
                "net": bet["net"].get(account, 0),
                "would": None if other is None else other["outcome"],
                "would_net": None if other is None else other["net"].get(account, 0),
            }
        )
    return rows


def _outcome(d: dict[str, Any]) -> str:
    resolved = d.get("resolved") or {}
    if d["status"] == "corrected" and resolved.get("dice"):
        dice = resolved["dice"]
        return f"corrected: the throw was {dice[0]}+{dice[1]}"
    return str(OUTCOMES.get(d["status"], d["status"]))


def _throws(who: Any, states: dict[str, hz.TableState]) -> list[dict[str, Any]]:
    """The server-dice tables where the player holds the dice: their throw is theirs to
    send, with a seed their own browser makes and keeps (static/console.js)."""
    return [
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


@blp.route("/console/me/receipts/<int:position>", methods=["GET"])
def receipt(position: int) -> Any:
    """The receipt of one of the player's own events: its leaf in the log's Merkle tree,
    the audit path to the newest signed checkpoint, and that checkpoint, as the API's
    GET /log/proofs/inclusion gives them, to keep and check later; and what the event
    was, in the statement's words when it is an entry of it."""
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
        shown = statements.entry(conn, account, who.name, position)
    event, house = found.event, _house()
    table = event.stream.removeprefix(TABLE_PREFIX)
    what = (
        wording.sentence(shown, house)
        if shown is not None
        else wording.event_words(event.type, parsed(event.payload) or {}, table, house)
    )
    return render_template(
        "receipt.html",
        who=who,
        position=position,
        found=found,
        what=what,
        of=f"table {table}" if event.stream.startswith(TABLE_PREFIX) else "your account",
        proof=[h.hex() for h in found.proof],
        receipts=kept,
        policy=_club_policy(),
    )


# -- a dispute over a round -------------------------------------------------------------


def _round(table: str, number: int) -> tuple[str, Any, hz.TableState]:
    """The table's stream, its round `number` as stored, and the table as it is now."""
    stream = TABLE_PREFIX + table
    with queries.reading(club().store) as read:
        if not read.has_stream(stream):
            abort(404, description=f"there is no table {table!r}")
        if not 1 <= number <= SMALL:
            abort(404, description=f"table {table!r} has no round {number}")
        row = tableviews.round_row(read.conn, stream, number)
    if row is None:
        abort(404, description=f"table {table!r} has no round {number}")
    return stream, row, club().state(table)


def _round_throws(stream: str, row: Any) -> list[dict[str, Any]]:
    """The throws of a round, each with the version a dispute names it by."""
    with club().store.engine.connect() as conn:
        found = tableviews.round_events(conn, stream, row, limit=THROWS_SHOWN)
    return [
        {"version": e["version"], "dice": (e["payload"]["die1"], e["payload"]["die2"])}
        for e in found
        if e["type"] == "DiceThrown"
    ]


@blp.route("/console/me/tables/<table>/rounds/<int:number>/dispute", methods=["GET"])
def my_dispute_form(table: str, number: int) -> Any:
    """The form that disputes a round: what went wrong, and for a throw entered wrongly,
    which throw and the dice it showed."""
    who = _signed_in(Role.PLAYER)
    return _dispute_form(who, table, number, {}, None)


def _dispute_form(
    who: Any, table: str, number: int, typed: dict[str, str], error: str | None, status: int = 200
) -> Any:
    stream, row, state = _round(table, number)
    html = render_template(
        "dispute_round.html" if not _htmx() else "_dispute_form.html",
        who=who,
        table=table,
        round=row,
        result=wording.RESULTS.get(row.result or "", "not yet over"),
        throws=_round_throws(stream, row),
        version=state.version,
        typed=typed,
        error=error,
        said=error or "",
        oob=_htmx(),
    )
    return html, status


@blp.route("/console/me/tables/<table>/rounds/<int:number>/dispute", methods=["POST"])
def open_my_dispute(table: str, number: int) -> Any:
    """Open the dispute: the API's command, as the signed-in player."""
    who = _signed_in(Role.PLAYER)
    _check_csrf()
    form = request.form
    typed = {k: form.get(k, "") for k in ("claim", "throw", "die1", "die2")}
    _round(table, number)  # a table and round that exist, or 404
    try:
        body = _dispute_body(typed)
        sent = _sent(who, TableWriteHeadersSchema)
        answer = dispute_commands.open_dispute(
            club(),
            table,
            who.actor,
            Role.PLAYER.value,
            who.name,
            number,
            body["claim"],
            body["throw"],
            None if body["dice"] is None else (body["dice"][0], body["dice"][1]),
            key=sent["key"],
            if_match=sent["if_match"],
            # What the key's answer is held against, as the API's route holds it.
            request={"path": f"/tables/{table}/rounds/{number}/disputes", "body": body},
        )
    except ValidationError as exc:
        return _dispute_form(who, table, number, typed, _fields(exc), 422)
    except StaleVersion as exc:
        message = (
            f"The table has moved on since this form was drawn (it is at version "
            f"{exc.current}): nothing was written. Check the round and send it again."
        )
        return _dispute_form(who, table, number, typed, message, 409)
    except hz.RuleBroken as exc:
        said = amounts.rule_words(_house(), exc)
        return _dispute_form(who, table, number, typed, f"{said} (rule {exc.code})", 422)
    except NotPermitted:
        abort(403, description="a player disputes only as themselves")
    except (NotFound, Refused) as exc:
        return _dispute_form(who, table, number, typed, str(exc), 422)
    said = f"Dispute {answer['dispute_id']} opened over round {number} at {table}."
    if not _htmx():
        flash(said)
        return redirect(url_for("console.my_dispute", table=table, dispute_id=answer["dispute_id"]))
    view = disputes.dispute(club(), table, answer["dispute_id"], amounts.money_words(_house()))
    html = render_template(
        "_my_dispute.html",
        d=_dispute_line(view, player_account(who.name)),
        results=wording.RESULTS,
        said=said,
        oob=True,
    )
    response = make_response(html, 201)
    response.headers["HX-Push-Url"] = url_for(
        "console.my_dispute", table=table, dispute_id=answer["dispute_id"]
    )
    return response


def _dispute_body(typed: dict[str, str]) -> dict[str, Any]:
    """The form as the API's body, read by the API's schema: ValidationError names the
    field it refuses. A throw is named by its version; the dice come both or neither."""
    dice = [typed["die1"].strip(), typed["die2"].strip()]
    if any(dice) and not all(dice):
        raise ValidationError("give both dice, or neither", "dice")
    body: dict[str, Any] = {"claim": typed["claim"].strip()}
    if typed["throw"].strip():
        body["throw"] = _int(typed["throw"])
    if all(dice):
        body["dice"] = [_int(d) for d in dice]
    loaded: dict[str, Any] = OpenDisputeSchema().load(body)
    return loaded


@blp.route("/console/me/tables/<table>/disputes/<dispute_id>", methods=["GET"])
def my_dispute(table: str, dispute_id: str) -> Any:
    """One of the player's disputes: the claim, the service's answer, the outcome."""
    who = _signed_in(Role.PLAYER)
    try:
        view = disputes.dispute(club(), table, dispute_id, amounts.money_words(_house()))
    except NotFound as exc:
        abort(404, description=str(exc))
    if view["claimant"] != who.name:
        abort(403, description="a player reads only the disputes they opened")
    return render_template(
        "my_dispute.html",
        who=who,
        d=_dispute_line(view, player_account(who.name)),
        results=wording.RESULTS,
        said=_flashed(),
    )
