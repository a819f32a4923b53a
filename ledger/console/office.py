"""The setter's back office: players and balances; deposits, withdrawals and credit, each
confirmed before it is written; the setter's exposure and takings per table, per evening
and per player, with charts; and the disputes waiting for a decision (a dispute's own
page and its resolution are ledger.console.disputes').

Money is typed in the club's major units ("12.50", ledger.house.House.parse), read
exactly into minor units, and then by the API's own schema. Nothing is written until
the setter confirms: the first POST answers with what would be written, the amount in
figures and in words, and a form that sends the same values with the same idempotency
key and `confirmed=yes`; only that second POST writes, and a third (a double click, the
page sent again) is answered from the key, once. Every write is the API's own
(Club.create_player, Club.account_command, as ledger.api.players runs them), as the
signed-in setter, its key read and scoped to the token as every console form's is
(ledger.console.views._sent). The write's answer is the API's: its receipt (the
positions written and the checkpoint signed) is shown, and said in the page's aria-live
region.

Sent by htmx, a form's answer is the players' section alone (its forms with fresh keys)
and the announcement, out of band; sent without script, the page itself, or after a
write a redirect to it, the receipt carried in the session's flashed messages.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any, NamedTuple

from flask import (
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from marshmallow import Schema, ValidationError, fields, validate

from engine.state import SETTER
from ledger.books import disputeviews, evenings, queries, takings
from ledger.books.evenings import Evening
from ledger.books.projections import CreditInUse, Overdraft
from ledger.commands import Role
from ledger.console import amounts
from ledger.console.views import _check_csrf, _fields, _sent, _signed_in, _url_values, blp
from ledger.house import BadAmount, House
from ledger.service import AlreadyExists, NotFound
from ledger.store.eventstore import ConcurrencyError, Refused
from ledger.store.idempotency import IdempotencyConflict
from ledger.store.vocabulary import CreditLimitSet, Deposited, Withdrawn
from ledger.web import charts, club
from ledger.web.numbers import QueryInteger
from ledger.web.schemas import AmountSchema, CreditLimitSchema, PlayerSchema, Whole
from ledger.web.tokens import Holder

EVENINGS = 7
"""How many evenings with takings the office lists a page, unless asked: a week's."""
MOST_EVENINGS = 366
ALL = "all"
"""The evening broken down by table and player: every one listed, together."""


def _an_evening(text: str) -> None:
    """An evening as the office's links name it: its date, or `all` (or none, the newest)."""
    if text not in ("", ALL) and evenings.day_of(text) is None:
        raise ValidationError(f"an evening's date (YYYY-MM-DD), or {ALL}")


PLAYERS = 50
"""Players on a page of the office."""


class OfficeQuerySchema(Schema):
    evenings = QueryInteger(load_default=EVENINGS, validate=validate.Range(1, MOST_EVENINGS))
    before = fields.String(load_default="", validate=_an_evening)
    """The evenings listed are those before this one (none: the newest)."""
    evening = fields.String(load_default="", validate=_an_evening)
    """The evening broken down by table and player (none: the newest listed)."""
    start = fields.String(
        data_key="from",
        load_default="",
        validate=Whole(r"[A-Za-z0-9_.\-]{0,64}", error="a player's name, or its start"),
    )


class Money(NamedTuple):
    """One of the office's money forms."""

    event: type[Deposited | Withdrawn | CreditLimitSet]
    schema: type[Schema]
    """The API's schema for its figure."""
    field: str
    verb: str
    done: str


MONEY = {
    "deposit": Money(Deposited, AmountSchema, "amount", "Deposit", "Deposited"),
    "withdraw": Money(Withdrawn, AmountSchema, "amount", "Withdraw", "Withdrew"),
    "credit": Money(CreditLimitSet, CreditLimitSchema, "limit", "Set the credit limit", "Set"),
}


def house() -> House:
    found: House = current_app.extensions["hazard.house"]
    return found


def _htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


# -- the page -----------------------------------------------------------------------------


@blp.route("/console/office", methods=["GET"])
def office() -> Any:
    """The setter's back office: `from`, the name its page of players starts at;
    `evenings`, how many of the latest to show."""
    who = _signed_in(Role.SETTER)
    step, said = kept("office")  # a write's receipt, after its redirect
    return _page(who, step=step, said=said)


def keep(page: str, step: dict[str, Any] | None, said: str) -> None:
    """What a write said, and its receipt, kept in the session for the page a plain POST
    redirects to (`page`), which shows it once (`kept`)."""
    session[f"said:{page}"] = {"step": step, "said": said}


def kept(page: str) -> tuple[dict[str, Any] | None, str]:
    found = session.pop(f"said:{page}", None)
    if not isinstance(found, dict):
        return None, ""
    return found.get("step"), str(found.get("said", ""))


def _page(
    who: Holder,
    *,
    start: str | None = None,
    step: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
    said: str = "",
    status: int = 200,
) -> Any:
    """The office, or (to htmx) its players' section and the announcement. The players
    shown start at `start` (a write's: the player it was for), else at the URL's `from`."""
    query = _url_values(OfficeQuerySchema(), request.args)
    players = _players(query["start"] if start is None else start)
    if _htmx():
        section = render_template(
            "_office_players.html", step=step, errors=errors or {}, form={}, **players
        )
        return section.strip() + render_template("_announce.html", said=said, oob=True), status
    return (
        render_template(
            "office.html",
            who=who,
            step=step,
            errors=errors or {},
            said=said,
            form=request.form if request.method == "POST" else {},
            **players,
            **_takings(query["evenings"], query["before"], query["evening"]),
        ),
        status,
    )


def _players(start: str) -> dict[str, Any]:
    """A page of the players, from `start` (the first, with the setter, from "")."""
    start = "" if start == SETTER else start
    with queries.reading(club().store) as read:
        shown, more = read.players_from(start, PLAYERS)
    return {"players": shown, "players_from": start, "players_next": more}


def _takings(count: int, before: str, chosen: str) -> dict[str, Any]:
    """The exposure and takings sections: the net of each of `count` evenings (the
    latest, or those `before` an evening), and one evening's by table and player (the
    `chosen`, or the newest listed; `all`: those listed together), with charts.

    Only one evening is broken down unless asked: the office draws a week's nets and an
    evening's tables, however many evenings the log holds (bench.console)."""
    zone = house().zone
    with queries.reading(club().store) as read:
        conn = read.conn
        through = _evening_of(conn, zone, before).after if before else None
        shown = takings.latest(conn, zone, count, through)
        nets = [takings.nets(conn, evening) for evening in shown]
        older = bool(shown) and bool(takings.latest(conn, zone, 1, shown[0].after))
        picked = chosen or (shown[-1].key if shown else "")
        broken = [(e, n) for e, n in zip(shown, nets, strict=True) if picked in (ALL, e.key)]
        if not broken and picked not in ("", ALL):  # an evening not listed: asked by name
            evening = _evening_of(conn, zone, picked)
            broken = [(evening, takings.nets(conn, evening))]
        exposed, open_bets = takings.exposure(conn)
        waiting = disputeviews.listing(conn, status="open", limit=200)
    taken: takings.Nets = {}
    for _, evening_nets in broken:
        for key, net in evening_nets.items():
            taken[key] = taken.get(key, 0) + net
    per_evening: list[dict[str, Any]] = [
        {"key": e.key, "label": _evening(e.key), "net": sum(n.values())}
        for e, n in zip(shown, nets, strict=True)
    ]
    breakdown = [{"key": e.key, "label": _evening(e.key), "rows": _rows(n)} for e, n in broken]
    # The tables with something to show: takings in the evening broken down, or bets open.
    by_table = _by(taken, exposed, lambda key: key[0])
    per_table: list[dict[str, Any]] = [
        {"table": t, "open_bets": open_bets.get(t, 0), "net": net, "exposure": at_stake}
        for t, (net, at_stake) in sorted({**{t: (0, 0) for t in open_bets}, **by_table}.items())
    ]
    by_player = _by(taken, exposed, lambda key: key[1])
    per_player: list[dict[str, Any]] = [
        {"player": p, "net": net, "exposure": at_stake}
        for p, (net, at_stake) in sorted(
            by_player.items(), key=lambda x: (x[0] is None, x[0] or "")
        )
    ]
    if picked == ALL:
        over = f"the {len(shown)} evenings listed" if len(shown) != 1 else "the evening listed"
    else:
        over = _evening(picked) if picked else "no evening yet"
    money = charts.money_ticks(house())
    return {
        "evenings_shown": count,
        "evenings_before": before,
        "evenings_older": shown[0].key if older else "",
        "per_evening": per_evening,
        "breakdown": breakdown,
        "broken_down": picked,
        "broken_over": over,
        "per_table": per_table,
        "per_player": per_player,
        "disputes": waiting,
        "evenings_chart": charts.columns(
            [(_evening(e["key"], short=True), e["net"]) for e in per_evening],
            title="The setter's takings per evening, all tables",
            unit=house().currency,
            labels=money,
        ),
        "tables_chart": charts.rows(
            [(t["table"], [t["net"], t["exposure"]]) for t in per_table],
            title="Takings and exposure per table",
            unit=house().currency,
            series=[f"takings in {over}", "exposure now"],
            labels=money,
        ),
        "players_chart": charts.rows(
            [(p["player"] or "no taker yet", [p["net"], p["exposure"]]) for p in per_player],
            title="Takings and exposure per player",
            unit=house().currency,
            series=[f"takings in {over}", "exposure now"],
            labels=money,
        ),
    }


def _evening_of(conn: Any, zone: str, key: str) -> Evening:
    """The evening of the date `key` (checked by the query's schema)."""
    day = evenings.day_of(key)
    assert day is not None, key
    return evenings.of_day(conn, zone, day)


def _rows(nets: takings.Nets) -> list[tuple[str, str | None, int]]:
    """(table, player, net), by table and then player, the offers no one took last."""
    found = [(t, p, n) for (t, p), n in nets.items()]
    return sorted(found, key=lambda r: (r[0], r[1] is None, r[1] or ""))


def _last_none(item: tuple[str | None, Any]) -> tuple[bool, str]:
    """By name, the offers no one took (None) last."""
    return item[0] is None, item[0] or ""


def _by(
    taken: takings.Nets, exposed: takings.Nets, part: Callable[[tuple[str, str | None]], Any]
) -> dict[Any, tuple[int, int]]:
    """(takings, exposure) summed by `part` of their keys (the table, or the player)."""
    found: dict[Any, tuple[int, int]] = {}
    for key, net in taken.items():
        old = found.get(part(key), (0, 0))
        found[part(key)] = (old[0] + net, old[1])
    for key, at_stake in exposed.items():
        old = found.get(part(key), (0, 0))
        found[part(key)] = (old[0], old[1] + at_stake)
    return found


def _evening(key: str, *, short: bool = False) -> str:
    """An evening's name, as the office shows it: "Thu 2 Jul 2026", or "2 Jul"."""
    day = date.fromisoformat(key)
    return f"{day.day} {day:%b}" if short else f"{day:%a} {day.day} {day:%b %Y}"


# -- players and their money ------------------------------------------------------------------


@blp.route("/console/office/players", methods=["POST"])
def create_player() -> Any:
    who = _signed_in(Role.SETTER)
    _check_csrf()
    try:
        body = PlayerSchema().load({"name": request.form.get("name", "").strip()})
        club().create_player(body["name"], who.actor, _sent(who)["key"])
    except ValidationError as exc:
        return _page(who, errors={"create": _fields(exc)}, status=422)
    except AlreadyExists as exc:
        return _page(who, errors={"create": str(exc)}, status=409)
    except Refused as exc:  # InvalidName
        return _page(who, errors={"create": str(exc)}, status=422)
    said = f"Created the player {body['name']}: their account is open, at {house().money(0)}."
    return _written(who, body["name"], None, said)


@blp.route("/console/office/players/<name>/<what>", methods=["POST"])
def money(name: str, what: str) -> Any:
    """A deposit, a withdrawal or a credit limit, from the player's row: first what
    would be written, to confirm; with `confirmed=yes`, written."""
    who = _signed_in(Role.SETTER)
    _check_csrf()
    if what not in MONEY:
        return _refused(who, f"{what}:{name}", f"there is no form {what!r}", 404)
    move, control = MONEY[what], f"{what}:{name}"
    try:
        minor = house().parse(request.form.get("amount", ""))
        body = move.schema().load({move.field: minor})
        sent = _sent(who)
    except BadAmount as exc:
        return _refused(who, control, f"amount: {exc}", 422)
    except ValidationError as exc:
        return _refused(who, control, _out_of_range(exc, move), 422)
    if not club().player_exists(name):
        return _refused(who, control, f"there is no player {name!r}", 404)
    if request.form.get("confirmed") != "yes":
        step = _confirmation(name, what, move, body[move.field])
        return _page(who, start=name, step=step, said=f"Confirm: {step['sentence']}")
    try:
        answer = club().account_command(name, move.event, body[move.field], who.actor, sent["key"])
    except NotFound as exc:
        return _refused(who, control, str(exc), 404)
    except ConcurrencyError as exc:
        return _refused(who, control, f"{exc}: nothing was written, try again", 409)
    except (Overdraft, CreditInUse, IdempotencyConflict) as exc:
        return _refused(who, control, _in_words(name, exc), 422)
    except Refused as exc:  # out of the ledger's range, or past a player's limit
        return _refused(who, control, amounts.refused_words(house(), exc), 422)
    done = _sentence(name, what, body[move.field], done=True)
    step = _receipt(done, answer)
    return _written(who, name, step, f"{done} Receipt: {step['where']}.")


def _written(who: Holder, name: str, step: dict[str, Any] | None, said: str) -> Any:
    """A write's answer, the players shown from `name`'s row: to htmx, the players'
    section with its receipt; without script, a redirect to the office, which shows it
    once."""
    if _htmx():
        return _page(who, start=name, step=step, said=said)
    keep("office", step, said)
    shown: dict[str, Any] = {"from": name} if name != SETTER else {}
    where = url_for("console.office", **shown)
    return redirect(where + ("#money-step" if step else "#players-h"))


def _refused(who: Holder, control: str, message: str, status: int) -> Any:
    """A money form refused: the reason where the confirmation would have been, said
    aloud, the player's row on show; nothing written."""
    step = {"kind": "refused", "control": control, "message": message}
    name = control.split(":", 1)[1]
    return _page(who, start=name, step=step, said=f"Refused: {message}", status=status)


def _in_words(name: str, exc: Refused) -> str:
    """A refusal of the write, with its money in the club's currency (the API's words
    give minor units)."""
    money = house().money
    if isinstance(exc, Overdraft):
        if exc.credit_limit:
            return (
                f"not enough funds: {_whose(name)} would stand at {money(exc.balance)}, "
                f"below its credit limit of {money(exc.credit_limit)}"
            )
        return f"not enough funds: {_whose(name)} would stand at {money(exc.balance)}"
    if isinstance(exc, CreditInUse):
        return (
            f"{name} has drawn {money(exc.drawn)} on their credit: the limit cannot go "
            f"below {money(exc.drawn)} until that is repaid"
        )
    return (
        "this form was used before to write something else (its key, as an "
        "Idempotency-Key, is spent): start again from the office"
    )


def _out_of_range(exc: ValidationError, move: Money) -> str:
    """The schema's refusal of an amount, in the club's money rather than minor units."""
    bounds = next(
        (v for v in move.schema().fields[move.field].validators if isinstance(v, validate.Range)),
        None,
    )
    if bounds is None or bounds.min is None or bounds.max is None:  # pragma: no cover
        return _fields(exc)
    least, most = house().money(int(bounds.min)), house().money(int(bounds.max))
    return f"amount: from {least} to {most}"


def _whose(name: str) -> str:
    return "the setter's own account (the bank's float)" if name == SETTER else f"{name}'s account"


def _sentence(name: str, what: str, minor: int, *, done: bool = False) -> str:
    """What a money form does, in words: "Deposit £12.50 into ann's account."."""
    money = house().money(minor)
    if what == "credit":
        return f"Set {'the setter' if name == SETTER else name}'s credit limit to {money}."
    if what == "deposit":
        return f"{'Deposited' if done else 'Deposit'} {money} into {_whose(name)}."
    return f"{'Withdrew' if done else 'Withdraw'} {money} from {_whose(name)}."


def _confirmation(name: str, what: str, move: Money, minor: int) -> dict[str, Any]:
    """What the setter confirms: the amount in figures and in words, the player, the
    balance (or limit) before and after, and the same form's values to send again."""
    with club().store.engine.connect() as conn:
        balance, limit = club().standing(conn, name)
    if what == "credit":
        before, after, measure = limit, minor, "Credit limit"
    else:
        change = minor if what == "deposit" else -minor
        before, after, measure = balance, balance + change, "Balance"
    return {
        "kind": "confirm",
        "player": name,
        "what": what,
        "verb": move.verb,
        "minor": minor,
        "typed": house().figure(minor),
        "sentence": _sentence(name, what, minor),
        "button": f"set the limit to {house().money(minor)}"
        if what == "credit"
        else f"{what} {house().money(minor)}",
        "measure": measure,
        "before": before,
        "after": after,
        # The same key again, so that the write happens once, however often confirmed;
        # a form sent without one (not the office's) gets one here, for the same reason.
        "key": request.form.get("key") or secrets.token_urlsafe(16),
    }


def _receipt(done: str, answer: dict[str, Any]) -> dict[str, Any]:
    """A write's receipt as its answer (the API's) gives it."""
    written = answer.get("events") or [{}]
    receipt = answer.get("receipt") or {}
    positions = receipt.get("positions") or [e.get("position") for e in written]
    return {
        "kind": "receipt",
        "sentence": done,
        "positions": positions,
        "version": answer.get("version"),
        "recorded_at": written[0].get("recorded_at"),
        "checkpoint": receipt.get("checkpoint"),
        "where": where(positions),
    }


def where(positions: Sequence[int]) -> str:
    """Where a write is in the log, as a receipt says it: "position 57 of the log"."""
    listed = ", ".join(str(p) for p in positions)
    return f"position{'s' if len(positions) > 1 else ''} {listed} of the log"
