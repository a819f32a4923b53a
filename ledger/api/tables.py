"""Tables, play and bets: each write is one engine command through Club.command."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flask import request

import engine as hz
from engine import serverdice
from engine.play import require_server_throw
from engine.rules import from_mapping
from ledger.api import bodies, club, require, require_self, scoped_key
from ledger.api import schemas as s
from ledger.api.bodies import Blueprint
from ledger.api.replayschemas import TableStateAtSchema, TableStateQuerySchema
from ledger.api.shaped import shaped
from ledger.api.tokens import Holder, Role
from ledger.service import Decide, Forbidden, Reads

blp = Blueprint("tables", __name__, url_prefix="/tables", description="Tables, play and bets")

WRITE = (Role.CROUPIER,)
"""Who runs a table (besides the setter)."""
BET = (Role.CROUPIER, Role.PLAYER)
"""Who places bets (a player only their own)."""


def _run(
    table: str,
    who: Holder,
    headers: dict[str, Any],
    body: dict[str, Any],
    decide: Decide,
    players: Sequence[str] = (),
    **kw: Any,
) -> dict[str, Any]:
    return club().command(
        table,
        who.actor,
        decide,
        if_match=headers.get("if_match"),
        key=scoped_key(who, headers),
        request={"path": _path(), "body": body},
        players=players,
        **kw,
    )


def _path() -> str:
    from flask import request

    return request.path


def bet_number(bet_id: str) -> int:
    """A bet's place in the table's order: its id is "b" and the version that placed it."""
    return int(bet_id.removeprefix("b"))


def standing_view(standing: tuple[int, int] | None) -> dict[str, int] | None:
    """The die left standing by a void throw (the state keeps the die that went off)."""
    if standing is None:
        return None
    off, value = standing
    return {"die": 3 - off, "value": value}


def state_view(
    table: str, state: hz.TableState, after: int = 0, limit: int | None = None
) -> dict[str, Any]:
    """The table's state, with its open bets placed after bet number `after`, at most
    `limit` of them (all when None)."""
    bets = [b for b in state.open_bets if bet_number(b.id) > after]
    shown = bets if limit is None else bets[:limit]
    return _view(table, state, shown, bet_number(shown[-1].id) if len(shown) < len(bets) else None)


def touched_view(table: str, state: hz.TableState, bet_ids: Sequence[str]) -> dict[str, Any]:
    """The table's state after an event, with only the open bets the event named (its
    `bet_id`): a replay's step is about its event, and a table may hold a thousand open
    bets. `next_after` is 0 when others are open: the table's state as of the event (GET
    /tables/{t}?as_of=) lists them, a page at a time."""
    shown = [state.bets[i] for i in bet_ids if i in state.bets]
    return _view(table, state, shown, 0 if len(shown) < len(state.bets) else None)


def _view(
    table: str, state: hz.TableState, shown: Sequence[hz.Bet], next_after: int | None
) -> dict[str, Any]:
    assert state.rules is not None
    return {
        "table": table,
        "version": state.version,
        "phase": state.phase.value,
        "rules": state.rules.name,
        "seats": list(state.seats),
        "caster": state.caster,
        "round": state.round,
        "main": state.main,
        "chance": state.chance,
        "consecutive_losses": state.consecutive_losses,
        "consecutive_wins": state.consecutive_wins,
        "setter_exposure": state.exposure(),
        "dice": state.dice,
        "commitment": state.commitment,
        "nonce": state.nonce,
        "standing": standing_view(state.standing),
        "open_bet_count": len(state.bets),
        "open_bets": [
            {
                "id": b.id,
                "kind": b.kind.value,
                "round": b.round,
                "proposition": {
                    "kind": b.proposition.kind.value,
                    "totals": sorted(b.proposition.totals),
                },
                "yes": b.yes,
                "no": b.no,
                "yes_stake": b.yes_stake,
                "no_stake": b.no_stake,
                "pending": b.pending,
                "offered_to": b.offered_to,
            }
            for b in shown
        ],
        "next_after": next_after,
    }


@blp.route("", methods=["POST"])
@blp.arguments(s.WriteHeadersSchema, location="headers")
@blp.arguments(s.OpenTableSchema)
@blp.response(201, s.WriteResultSchema)
@blp.alt_response(409, schema=s.ProblemSchema, description="The table exists")
@blp.alt_response(422, schema=s.ProblemSchema, description="A bad rule set or limits")
def open_table(headers: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Open a table with a rule set (built-in by name, or custom) and its limits."""
    who = require(*WRITE)
    return _run(body["id"], who, headers, body, opening(body), new_table=True)


def opening(body: dict[str, Any]) -> Decide:
    """What opens a table as `body` (OpenTableSchema's) asks: its rule set, built-in by
    name or custom, and its limits. RuleSetError if the rule set is not one. The API's
    POST /tables and the console's form both open a table with it."""
    if body.get("rules") is not None:
        if body.get("ruleset") is not None:
            raise hz.RuleSetError("ruleset", "name a built-in rule set or give rules, not both")
        rules = from_mapping(body["rules"])
    else:
        name = body.get("ruleset") or hz.DEFAULT
        if name not in hz.BUILTIN:
            known = ", ".join(sorted(hz.BUILTIN))
            raise hz.RuleSetError("ruleset", f"{name!r} is not a built-in rule set ({known})")
        rules = hz.BUILTIN[name]
    limits = hz.Limits(**body["limits"])
    return lambda _st, _funds: hz.open_table(rules, limits, dice=body["dice"])


@blp.route("/<table>", methods=["GET"])
@blp.arguments(TableStateQuerySchema, location="query", unknown=None)
@blp.response(
    200,
    TableStateAtSchema,
    headers={
        "ETag": {
            "description": "The table's version, quoted: send it back as If-Match",
            "schema": {"type": "string"},
        }
    },
)
@shaped(TableStateAtSchema)
@blp.alt_response(404, schema=s.ProblemSchema, description="No such table")
@blp.alt_response(422, schema=s.ProblemSchema, description="A bad parameter, named")
def table_state(query: dict[str, Any], table: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    """The table's derived state: phase, caster, main, chance, version, and its open
    bets a page at a time; with `as_of`, as it stood then (no ETag: it is not now)."""
    require(Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
    if query.get("as_of") is not None:
        from ledger.api.replays import table_as_of  # which builds on state_view here

        return table_as_of(table, query["as_of"], query["after"], query["limit"]), 200, {}
    state = club().state(table)
    view = state_view(table, state, query["after"], query["limit"])
    return view, 200, {"ETag": f'"{state.version}"'}


Make = Callable[[Holder, dict[str, Any]], tuple[Decide, Sequence[str]]]

COMMANDS: dict[str, tuple[type | None, Make, tuple[Role, ...]]] = {}
"""Every table write by its rule ("throws", "lays", ...): the schema of its body, what
builds its engine command, and who may send it. The API's routes are made from it, and
the console (ledger.console) runs the same commands through `run_command`."""


def run_command(
    rule: str, table: str, body: dict[str, Any], headers: dict[str, Any]
) -> dict[str, Any]:
    """Run the table write `rule` as the caller (`g.holder`), as its API route would:
    the body checked by the route's schema (marshmallow.ValidationError if it is bad),
    the role checked, the command through Club.command with `headers` (as
    TableWriteHeadersSchema reads them: the key scoped to the caller, the version)."""
    schema, make, roles = COMMANDS[rule]
    data = schema().load(body) if schema is not None else {}
    who = require(*roles)
    decide, players = make(who, data)
    return club().command(
        table,
        who.actor,
        decide,
        if_match=headers.get("if_match"),
        key=scoped_key(who, headers),
        request={"path": f"/tables/{table}/{rule}", "body": data},
        players=players,
    )


def _write(rule: str, schema: type | None, doc: str, roles: tuple[Role, ...] = WRITE) -> Any:
    """Register POST /tables/<table>/<rule>, which runs the engine command `make` builds
    from the caller and the request body."""

    def register(make: Make) -> Make:
        def view(headers: dict[str, Any], *args: Any, table: str) -> dict[str, Any]:
            if schema is None:
                bodies.no_body(request)  # one sent anyway is refused, not ignored
            body = args[0] if args else {}
            who = require(*roles)
            decide, players = make(who, body)
            return _run(table, who, headers, body, decide, players)

        view.__name__ = rule.replace("-", "_").replace("/", "_")
        view.__doc__ = doc
        wrapped: Any = view
        if schema is not None:
            wrapped = blp.arguments(schema)(wrapped)
        wrapped = blp.arguments(s.TableWriteHeadersSchema, location="headers")(wrapped)
        wrapped = blp.response(201, s.WriteResultSchema)(wrapped)
        wrapped = blp.alt_response(404, schema=s.ProblemSchema, description="No such table")(
            wrapped
        )
        wrapped = blp.alt_response(409, schema=s.ProblemSchema, description="Stale If-Match")(
            wrapped
        )
        wrapped = blp.alt_response(
            422, schema=s.ProblemSchema, description="A rule of the table broken, or a bad field"
        )(wrapped)
        blp.route(f"/<table>/{rule}", methods=["POST"])(wrapped)
        COMMANDS[rule] = (schema, make, roles)
        return make

    return register


@_write("seats", s.SeatSchema, "Seat a player at the table.")
def _seat(who: Holder, body: dict[str, Any]) -> Any:
    return (lambda st, _: hz.seat(st, body["player"])), [body["player"]]


@_write("leave", s.SeatSchema, "A player leaves the table (a player: only themselves).", BET)
def _leave(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    return (lambda st, _: hz.leave(st, body["player"])), []


@_write("close", None, "Close the table; open bets are voided and their stakes returned.")
def _close(who: Holder, body: dict[str, Any]) -> Any:
    return (lambda st, _: hz.close(st)), []


@_write("casts", s.CastSchema, "Enter the die a player cast to choose the first caster.")
def _cast(who: Holder, body: dict[str, Any]) -> Any:
    return (lambda st, _: hz.cast_for_caster(st, body["player"], body["die"])), []


@_write("main", s.MainSchema, "The caster's main: called (5 to 9) where the rule set lets them.")
def _main(who: Holder, body: dict[str, Any]) -> Any:
    return (lambda st, _: hz.call_main(st, body["main"])), []


@_write(
    "throws",
    s.ThrowSchema,
    "A throw. At a croupier table the croupier records the dice, each 1 to 6. At a "
    "server-dice table the caster (with their own player token) or the croupier gives "
    "the caster's client seed, and the server draws the dice from it and the turn's "
    "committed seed; the setter, a party to the bets, may not.",
    BET,
)
def _throw(who: Holder, body: dict[str, Any]) -> Any:
    def decide(st: hz.TableState, reads: Reads) -> list[hz.Event]:
        if st.dice == serverdice.SERVER:
            return _server_throw(who, st, reads, body)
        if who.role is Role.PLAYER:
            raise Forbidden("the croupier enters this table's dice; a player does not")
        if body["client_seed"] is not None:
            serverdice.require_server_dice(st)
        if body["die1"] is None or body["die2"] is None:
            raise hz.RuleBroken(
                hz.Rule.CROUPIER_DICE, "the croupier enters this table's dice: give die1 and die2"
            )
        return hz.throw(st, body["die1"], body["die2"])

    return decide, []


def _server_throw(
    who: Holder, st: hz.TableState, reads: Reads, body: dict[str, Any]
) -> list[hz.Event]:
    """The caster's client seed in, the server's dice out (engine.serverdice)."""
    if body["die1"] is not None or body["die2"] is not None:
        serverdice.require_croupier_dice(st)
    client_seed = body["client_seed"]
    if client_seed is None:
        raise hz.RuleBroken(
            hz.Rule.SERVER_DICE,
            "the server throws this table's dice: give the caster's client_seed for this throw",
        )
    if who.role is Role.SETTER:
        # Whoever could know the server seed must not choose the client seed: with both
        # they would choose the dice. The setter's service keeps the seeds.
        raise Forbidden(
            "the setter is a party to the bets and keeps the server seeds: the caster, or "
            "the croupier for them, gives the client seed"
        )
    _caster_only(who, st)
    require_server_throw(st, client_seed)
    die1, die2 = serverdice.draw(reads.server_seed(), client_seed, st.nonce)
    return hz.server_throw(st, client_seed, die1, die2)


@_write("void-throws", s.VoidThrowSchema, "Record a cocked or wild throw, which does not count.")
def _void(who: Holder, body: dict[str, Any]) -> Any:
    return (lambda st, _: hz.void_throw(st, body["reason"], body["off"], body["standing"])), []


@_write("pass", None, "The caster passes the dice (where the rule set allows).", BET)
def _pass(who: Holder, body: dict[str, Any]) -> Any:
    def decide(st: hz.TableState, _: Any) -> list[hz.Event]:
        _caster_only(who, st)
        return hz.pass_dice(st)

    return decide, []


def _caster_only(who: Holder, st: hz.TableState) -> None:
    """A player acting as the caster must be the caster."""
    if who.role is Role.PLAYER and st.caster != who.name:
        raise Forbidden(f"only the caster ({st.caster}) does this, not {who.name!r}")


@_write("stakes", s.StakeSchema, "The caster stakes against the setter.", BET)
def _stake(who: Holder, body: dict[str, Any]) -> Any:
    def decide(st: hz.TableState, _: Any) -> list[hz.Event]:
        _caster_only(who, st)
        return hz.stake(st, body["amount"])

    return decide, []


@_write("lays", s.LaySchema, "A player lays a stake against the caster.", BET)
def _lay(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    return (lambda st, _: hz.lay(st, body["player"], body["amount"])), []


@_write("covers", s.CoverSchema, "The caster covers stakes laid against them.", BET)
def _cover(who: Holder, body: dict[str, Any]) -> Any:
    def decide(st: hz.TableState, funds: Any) -> list[hz.Event]:
        _caster_only(who, st)
        caster = st.caster
        return hz.cover(st, funds(caster) if caster else 0, body.get("bets"))

    return decide, []


@_write("refusals", s.RefuseSchema, "The caster refuses a laid stake; it is returned.", BET)
def _refuse(who: Holder, body: dict[str, Any]) -> Any:
    def decide(st: hz.TableState, _: Any) -> list[hz.Event]:
        _caster_only(who, st)
        return hz.refuse(st, body["bet"])

    return decide, []


@_write("odds", s.OddsSchema, "Lay odds on the chance or the main, once a chance is set.", BET)
def _odds(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    return (lambda st, _: hz.lay_odds(st, body["player"], body["on"], body["amount"])), []


@_write("side-bets", s.SideBetSchema, "Offer a side bet, to anyone or to one participant.", BET)
def _offer(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    prop = body["proposition"]
    proposition = hz.Proposition(hz.PropositionKind(prop["kind"]), frozenset(prop["totals"]))
    return (
        lambda st, _: hz.offer_side_bet(
            st,
            body["player"],
            proposition,
            body["backs"],
            body["stake"],
            body["asks"],
            body["to"],
        )
    ), []


@_write("side-bets/accept", s.SideBetActSchema, "Accept a side bet offered.", BET)
def _accept(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    return (lambda st, _: hz.accept_side_bet(st, body["bet"], body["player"])), []


@_write("side-bets/withdraw", s.SideBetActSchema, "Withdraw a side bet not yet accepted.", BET)
def _withdraw(who: Holder, body: dict[str, Any]) -> Any:
    require_self(who, body["player"])
    return (lambda st, _: hz.withdraw_side_bet(st, body["bet"], body["player"])), []
