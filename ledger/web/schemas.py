"""Request and response schemas (marshmallow), which are also the OpenAPI contract."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from engine import serverdice
from engine.dice import MAINS
from engine.events import PropositionKind
from engine.play import VOID_REASONS
from ledger.books import accounts
from ledger.web.numbers import QueryInteger


class Whole(validate.Regexp):
    """A pattern the whole value must match. marshmallow's Regexp uses re.match, whose
    `$` also matches before a final newline: "ann" and a newline passed as a name, and
    was a player other than ann. The pattern is still the one documented."""

    def __call__(self, value: Any) -> Any:
        if self.regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


DIE = validate.Range(min=1, max=6)
"""A die shows 1 to 6: refused as a field, before the table is asked."""
MAIN = validate.Range(min=min(MAINS), max=max(MAINS))
"""A main is 5 to 9: refused as a field, like a die."""
MONEY = validate.Range(min=1, max=10**15)
"""Amounts are whole minor units; the cap keeps them inside a signed 64-bit column."""
NAME = Whole(accounts.NAME, error=accounts.NAME_RULE)
ACCOUNTS = (
    "A ledger account: `player:ann`, `setter` (the bank), `escrow:t1:b9` (bet b9's stakes "
    "at table t1, while it is open) or `cash` (money deposited and withdrawn)"
)
"""The account names every response uses, outside an event's stored payload."""


class WriteHeadersSchema(Schema):
    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        validate=Whole(r"^[\x21-\x7e]{1,100}$", error="1 to 100 visible ASCII characters"),
        metadata={
            "description": "A repeat with the same key and body gets the first response and "
            "writes nothing; the same key with another body is refused (422). Keys are "
            "scoped to the token that sends them."
        },
    )


class TableVersion(fields.String):
    """An If-Match value: the table's version, bare (`7`) or as the ETag a GET of the
    table gives (`"7"`). A String to the contract (headers are text), an int once read."""

    def _deserialize(  # type: ignore[override]
        self, value: object, attr: str | None, data: object, **kw: object
    ) -> int:
        text = super()._deserialize(value, attr, data, **kw).strip()
        digits = text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
        if not digits.isascii() or not digits.isdigit() or len(digits) > 12:
            raise ValidationError('the table\'s version: a whole number, bare or quoted ("7")')
        return int(digits)


class TableWriteHeadersSchema(WriteHeadersSchema):
    if_match = TableVersion(
        data_key="If-Match",
        metadata={
            "description": "The table version this write expects, as GET gives it in ETag; "
            "a stale version is refused with 409 and the current version",
            "pattern": r'^\s*("[0-9]{1,12}"|[0-9]{1,12})\s*$',
        },
    )


class TransferSchema(Schema):
    """Money moved, between two of the ledger's accounts."""

    source = fields.String(required=True, metadata={"description": ACCOUNTS})
    target = fields.String(required=True, metadata={"description": ACCOUNTS})
    amount = fields.Integer(required=True, metadata={"description": "Minor units"})


def payload() -> fields.Dict:
    return fields.Dict(
        required=True,
        metadata={
            "description": "The engine's record, as stored and hashed. It names the table's "
            "own accounts (`ann`, `setter`, `escrow:b9`); `transfers` gives the same money "
            "in the ledger's"
        },
    )


def transfers() -> fields.List[Any]:
    return fields.List(
        fields.Nested(TransferSchema),
        required=True,
        metadata={"description": "The money the event moved, exactly as the ledger posted it"},
    )


class EventSchema(Schema):
    position = fields.Integer(required=True)
    stream = fields.String(required=True)
    version = fields.Integer(required=True)
    type = fields.String(required=True)
    payload = payload()
    actor = fields.String(required=True)
    recorded_at = fields.String(required=True)
    hash = fields.String(required=True)
    transfers = transfers()


class ReceiptSchema(Schema):
    """What a write appended, and the signed checkpoint of a tree that holds it."""

    positions = fields.List(
        fields.Integer(),
        required=True,
        metadata={"description": "The positions of the events the write appended"},
    )
    checkpoint = fields.String(
        required=True,
        metadata={
            "description": "The checkpoint the write signed (C2SP tlog-checkpoint, a signed "
            "note): the log's name, the tree's size (its last position) and root (base64), "
            "the time, and the Ed25519 signature of the key GET /log/key gives. Keep it: GET "
            "/log/proofs/consistency?from=<size> proves today's log extends it, and "
            "`hazard verify --checkpoint FILE` checks a database against it"
        },
    )


class SeedGivenSchema(Schema):
    """A server throw's first write: the caster's client seed, logged before the draw."""

    events = fields.List(
        fields.Nested(EventSchema),
        required=True,
        metadata={"description": "The ClientSeedGiven that logged the seed for the throw"},
    )
    receipt = fields.Nested(
        ReceiptSchema,
        required=True,
        allow_none=True,
        metadata={
            "description": "The receipt of the write that logged it (this call's, or an "
            "earlier attempt's whose draw failed): its positions and the checkpoint it "
            "signed, earlier than the draw's. Null only where no checkpoint holds it"
        },
    )


class WriteResultSchema(Schema):
    table = fields.String()
    player = fields.String()
    version = fields.Integer(required=True)
    events = fields.List(
        fields.Nested(EventSchema),
        required=True,
        metadata={
            "description": "The events the write appended, in order: at a table, the first "
            "50 of them (a throw or a closing may close hundreds of bets, one event each)"
        },
    )
    event_count = fields.Integer(
        metadata={"description": "A table write: how many events it appended"}
    )
    next_events = fields.String(
        allow_none=True,
        metadata={
            "description": "A table write that appended more events than it lists: where the "
            "rest are read, the table's replay from the last one listed "
            "(`/tables/{table}/replay?after={position}`); null when every one is listed. "
            "What it settled is also at `/settlements?table={table}&round={round}`"
        },
    )
    receipt = fields.Nested(
        ReceiptSchema,
        metadata={
            "description": "The write's receipt; every write that appends an event has one, "
            "and a repeat under the same Idempotency-Key gets the same"
        },
    )
    seed_given = fields.Nested(
        SeedGivenSchema,
        metadata={
            "description": "A server-dice throw: the write before the draw's, which logged "
            "the caster's client seed the dice are drawn from. Keep the seed, and send it "
            "again (never another) if the throw fails, until an answer holds this receipt"
        },
    )


def _not_reserved(name: str) -> None:
    if accounts.reserved(name):
        raise ValidationError(f"a player's name is {accounts.OWN_RULE}")


class PlayerSchema(Schema):
    name = fields.String(
        required=True,
        validate=[NAME, _not_reserved],
        metadata={"description": f"A player's name: {accounts.PLAYER_RULE}"},
    )


class AmountSchema(Schema):
    amount = fields.Integer(required=True, strict=True, validate=MONEY)


class CreditLimitSchema(Schema):
    limit = fields.Integer(required=True, strict=True, validate=validate.Range(min=0, max=10**15))


class BalanceSchema(Schema):
    player = fields.String(required=True)
    balance = fields.Integer(required=True)
    credit_limit = fields.Integer(required=True)
    owed = fields.Integer(
        required=True,
        metadata={
            "description": "What the player owes the club beyond their credit: only a "
            "dispute's adjustment may take a balance past the credit limit; it is posted, "
            "and the shortfall shown here (docs/setter.md: Overdrafts after a dispute)"
        },
    )


class LimitsSchema(Schema):
    min_stake = fields.Integer(strict=True, load_default=1, validate=MONEY)
    max_stake = fields.Integer(strict=True, allow_none=True, load_default=None, validate=MONEY)
    max_exposure = fields.Integer(
        strict=True, allow_none=True, load_default=None, validate=validate.Range(0, 10**15)
    )


class OpenTableSchema(Schema):
    id = fields.String(required=True, validate=NAME)
    ruleset = fields.String(load_default=None, metadata={"description": "a built-in rule set"})
    rules = fields.Dict(
        load_default=None, metadata={"description": "a custom rule set, as `hazard odds` takes"}
    )
    limits = fields.Nested(LimitsSchema, load_default=dict)
    dice = fields.String(
        load_default=serverdice.CROUPIER,
        validate=validate.OneOf(serverdice.DICE),
        metadata={
            "description": "Who throws the dice: `croupier` (the default: the croupier enters "
            "each throw) or `server` (provably fair server dice: each caster's turn commits "
            "to a secret seed, the caster gives a client seed with each throw, and the seed "
            "is revealed when the turn ends)"
        },
    )


class SeatSchema(Schema):
    player = fields.String(required=True, validate=NAME)


class CastSchema(Schema):
    player = fields.String(required=True, validate=NAME)
    die = fields.Integer(required=True, strict=True, validate=DIE)


class MainSchema(Schema):
    main = fields.Integer(
        required=True,
        strict=True,
        validate=MAIN,
        metadata={"description": "5 to 9: refused as a field, before the table is asked"},
    )


class ThrowSchema(Schema):
    """A croupier table: the dice, as thrown. A server-dice table: the caster's client
    seed alone, and the server draws the dice."""

    die1 = fields.Integer(
        strict=True,
        load_default=None,
        validate=DIE,
        metadata={"description": "A croupier table's throw (refused at a server-dice table)"},
    )
    die2 = fields.Integer(
        strict=True,
        load_default=None,
        validate=DIE,
        metadata={"description": "A croupier table's throw (refused at a server-dice table)"},
    )
    client_seed = fields.String(
        load_default=None,
        validate=Whole(serverdice.CLIENT_SEED.pattern, error="1 to 64 printable ASCII characters"),
        metadata={
            "description": "A server-dice table: the caster's fresh seed for this throw, "
            "given after the bets on it are placed (refused at a croupier table). It is "
            "logged first, in a write of its own, and the throw is then drawn from it: a "
            "throw that fails is drawn from it when it is sent again, and another seed for "
            "the same throw is refused (`seed-already-given`). The dice are "
            "HMAC-SHA256(server seed, `client_seed:nonce:cursor`), drawn as docs/player.md's "
            '"Provably fair server dice" says'
        },
    )


class VoidThrowSchema(Schema):
    reason = fields.String(
        required=True,
        validate=validate.OneOf(VOID_REASONS),
        metadata={"description": "cocked or wild"},
    )
    off = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=0, max=2),
        metadata={"description": "the die that went off, 1 or 2, or 0: both"},
    )
    standing = fields.Integer(
        strict=True,
        allow_none=True,
        load_default=None,
        validate=DIE,
        metadata={
            "description": "the value of the die that stands when only the off die is "
            "recast; null when both are. While a die stands only the other can go off, "
            "and a recast of it alone names the same standing value"
        },
    )


class StakeSchema(Schema):
    amount = fields.Integer(required=True, strict=True, validate=MONEY)


class LaySchema(Schema):
    player = fields.String(required=True, validate=NAME)
    amount = fields.Integer(required=True, strict=True, validate=MONEY)


class CoverSchema(Schema):
    bets = fields.List(
        fields.String(validate=validate.Length(max=32)),
        load_default=None,
        metadata={"description": "the laid stakes to cover; all pending when omitted"},
    )


class OddsSchema(Schema):
    player = fields.String(required=True, validate=NAME)
    on = fields.String(required=True, validate=validate.OneOf(["chance", "main"]))
    amount = fields.Integer(required=True, strict=True, validate=MONEY)


class PropositionSchema(Schema):
    kind = fields.String(
        required=True,
        validate=validate.OneOf([kind.value for kind in PropositionKind]),
    )
    totals = fields.List(fields.Integer(strict=True), load_default=list)


class SideBetSchema(Schema):
    player = fields.String(required=True, validate=NAME)
    proposition = fields.Nested(PropositionSchema, required=True)
    backs = fields.Boolean(required=True, metadata={"description": "true: for it; false: against"})
    stake = fields.Integer(required=True, strict=True, validate=MONEY)
    asks = fields.Integer(required=True, strict=True, validate=MONEY)
    to = fields.String(allow_none=True, load_default=None, validate=validate.Length(max=100))


class RefuseSchema(Schema):
    bet = fields.String(required=True, validate=validate.Length(min=1, max=32))


class SideBetActSchema(Schema):
    player = fields.String(required=True, validate=NAME)
    bet = fields.String(required=True, validate=validate.Length(min=1, max=32))


class BetSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(required=True)
    round = fields.Integer(required=True)
    proposition = fields.Dict(required=True)
    yes = fields.String(allow_none=True, required=True)
    no = fields.String(allow_none=True, required=True)
    yes_stake = fields.Integer(required=True)
    no_stake = fields.Integer(required=True)
    pending = fields.Boolean(required=True)
    offered_to = fields.String(allow_none=True, required=True)


class StandingSchema(Schema):
    die = fields.Integer(required=True, metadata={"description": "1 or 2: the die that stands"})
    value = fields.Integer(required=True, metadata={"description": "What it shows, 1 to 6"})


class TableStateSchema(Schema):
    table = fields.String(required=True)
    version = fields.Integer(required=True)
    phase = fields.String(required=True)
    rules = fields.String(required=True)
    seats = fields.List(fields.String(), required=True)
    caster = fields.String(allow_none=True, required=True)
    round = fields.Integer(required=True)
    main = fields.Integer(allow_none=True, required=True)
    chance = fields.Integer(allow_none=True, required=True)
    consecutive_losses = fields.Integer(required=True)
    consecutive_wins = fields.Integer(required=True)
    setter_exposure = fields.Integer(required=True)
    dice = fields.String(
        required=True,
        validate=validate.OneOf(serverdice.DICE),
        metadata={"description": "Who throws the dice: `croupier` or `server`"},
    )
    commitment = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "A server-dice table: SHA-256 (hex) of the secret seed of the "
            "caster's turn in play, which its SeedRevealed will show; null otherwise"
        },
    )
    nonce = fields.Integer(
        required=True,
        metadata={"description": "A server-dice table: the nonce of the next throw of the turn"},
    )
    client_seed = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": "A server-dice table: the caster's client seed logged for the next "
            "throw (its ClientSeedGiven) and not drawn yet, which that throw is drawn from "
            "before anything else happens at the table: send it again to draw it; null "
            "when none waits"
        },
    )
    standing = fields.Nested(
        StandingSchema,
        required=True,
        allow_none=True,
        metadata={
            "description": "After a void throw where only the off die is recast: the die "
            "that stands and its value, which the next throw must show; null otherwise"
        },
    )
    open_bet_count = fields.Integer(
        required=True, metadata={"description": "How many bets and offers are open"}
    )
    open_bets = fields.List(
        fields.Nested(BetSchema),
        required=True,
        metadata={"description": "A page of the open bets, in the order they were placed"},
    )
    next_after = fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "The `after` of the next page of open bets; null on the last"},
    )


class OpenBetsQuerySchema(Schema):
    after = QueryInteger(
        load_default=0,
        validate=validate.Range(0, 2**31 - 1),
        metadata={
            "description": "The `next_after` of the page before (a bet's number: 14 for b14)"
        },
    )
    limit = QueryInteger(
        load_default=50,
        validate=validate.Range(1, 500),
        metadata={"description": "Open bets per page, 1 to 500"},
    )
