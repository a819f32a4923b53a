"""The table's writes by name, as the web sends them: POST /tables/{t}/{rule} and the
console's form for the same rule each give a body that `WRITES[rule].schema` reads,
and `run` hands it to the command (ledger.commands.tables), as the caller, with how
they sent it (ledger.web.sent_by: the key scoped to them, the version). Opening a
table (POST /tables, the console's form) is `open_table`.

The API's routes are made from WRITES (ledger.api.tables), and the console runs the
same (ledger.console.views): neither decides anything of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from marshmallow import Schema

from ledger.commands import Sent, tables
from ledger.web import club
from ledger.web import schemas as s
from ledger.web.tokens import Holder


class TableWrite(NamedTuple):
    schema: type[Schema] | None
    """What its body holds (None: it takes none)."""
    command: Callable[..., dict[str, Any]]
    """The command, called with the club, the table, the caller and the body's fields."""
    doc: str
    """What it does, in the API's words (its operation's description)."""


WRITES: dict[str, TableWrite] = {
    "seats": TableWrite(s.SeatSchema, tables.seat, "Seat a player at the table."),
    "leave": TableWrite(
        s.SeatSchema, tables.leave, "A player leaves the table (a player: only themselves)."
    ),
    "close": TableWrite(
        None, tables.close, "Close the table; open bets are voided and their stakes returned."
    ),
    "casts": TableWrite(
        s.CastSchema, tables.cast, "Enter the die a player cast to choose the first caster."
    ),
    "main": TableWrite(
        s.MainSchema,
        tables.call_main,
        "The caster's main: called (5 to 9) where the rule set lets them.",
    ),
    "throws": TableWrite(
        s.ThrowSchema,
        tables.throw,
        "A throw. At a croupier table the croupier records the dice, each 1 to 6. At a "
        "server-dice table the caster (with their own player token) or the croupier gives "
        "the caster's client seed, and the server logs it (ClientSeedGiven, a write of its "
        "own, whose receipt the answer gives as `seed_given`) and then draws the dice from "
        "it and the turn's committed seed; the setter, a party to the bets, may not. A "
        "throw whose draw failed is sent again with the same seed, never another.",
    ),
    "void-throws": TableWrite(
        s.VoidThrowSchema,
        tables.void_throw,
        "Record a cocked or wild throw, which does not count.",
    ),
    "pass": TableWrite(
        None, tables.pass_dice, "The caster passes the dice (where the rule set allows)."
    ),
    "stakes": TableWrite(s.StakeSchema, tables.stake, "The caster stakes against the setter."),
    "lays": TableWrite(s.LaySchema, tables.lay, "A player lays a stake against the caster."),
    "lays/everyone": TableWrite(
        s.StakeSchema,
        tables.everyone_lays,
        "Each seated player but the caster lays the same stake against the caster, in one "
        "write: every lay or none. A rule one of them breaks, or a stake one of them cannot "
        "fund, refuses them all and says whose. The croupier's (and the setter's).",
    ),
    "covers": TableWrite(
        s.CoverSchema, tables.cover, "The caster covers stakes laid against them."
    ),
    "refusals": TableWrite(
        s.RefuseSchema, tables.refuse, "The caster refuses a laid stake; it is returned."
    ),
    "odds": TableWrite(
        s.OddsSchema,
        tables.lay_odds,
        "Lay odds on the chance or the main, once a chance is set.",
    ),
    "side-bets": TableWrite(
        s.SideBetSchema,
        tables.offer_side_bet,
        "Offer a side bet, to anyone or to one participant.",
    ),
    "side-bets/accept": TableWrite(
        s.SideBetActSchema, tables.accept_side_bet, "Accept a side bet offered."
    ),
    "side-bets/withdraw": TableWrite(
        s.SideBetActSchema, tables.withdraw_side_bet, "Withdraw a side bet not yet accepted."
    ),
}
"""Every table write by its rule ("throws", "lays", ...), in the order the API lists them."""


def table_write(rule: str) -> TableWrite | None:
    """The write `rule` names; None if none."""
    return WRITES.get(rule)


def run(rule: str, table: str, who: Holder, body: Mapping[str, Any], sent: Sent) -> dict[str, Any]:
    """The table write `rule` as `who` sent it: `body` as its schema loaded it, `sent`
    as `ledger.web.sent_by` reads it."""
    asked = _asked(sent, f"/tables/{table}/{rule}", body)
    write = table_write(rule)
    assert write is not None, rule
    return write.command(club(), table, who, **body, **asked)


def open_table(who: Holder, body: Mapping[str, Any], sent: Sent) -> dict[str, Any]:
    """Open the table `body` (OpenTableSchema's) asks for, as `who` sent it."""
    return tables.open_table(
        club(),
        body["id"],
        who,
        ruleset=body.get("ruleset"),
        rules=body.get("rules"),
        limits=body["limits"],
        dice=body["dice"],
        **_asked(sent, "/tables", body),
    )


def _asked(sent: Sent, path: str, body: Mapping[str, Any]) -> Sent:
    """`sent`, with what its key's answer is remembered against: the write's path and
    body, whichever surface sent it."""
    return {
        "key": sent.get("key"),
        "if_match": sent.get("if_match"),
        "request": {"path": path, "body": body},
    }
