"""Schemas of the read side (settlements, rounds, statements, the audit trail, the dice
report): the query parameters each listing takes and the pages it answers with.

Query schemas raise on a parameter they do not know (the views pass `unknown=None`,
so webargs leaves that to the schema): a misspelt filter would otherwise be dropped
silently and the caller handed everything.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from engine.state import SETTER, RoundResult
from ledger.audit import fairness
from ledger.web.numbers import QueryInteger
from ledger.web.schemas import NAME, TransferSchema, payload, transfers

BIG = 2**63 - 1
"""Positions and posting ids are signed 64-bit columns."""
SMALL = 2**31 - 1
"""Rounds and versions are signed 32-bit columns."""
BET_ID = validate.Regexp(r"^[A-Za-z0-9_.:-]{1,32}$", error="1 to 32 letters, digits, _ . : -")


class StoredTime(fields.AwareDateTime):
    """An ISO-8601 time with a zone, loaded as the text the store keeps
    (`2026-11-21T01:18:22.123456Z`, ledger.store.eventstore.utc_now), so that it compares with
    stored times as text."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        moment: datetime = super()._deserialize(value, attr, data, **kwargs)
        try:
            utc = moment.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
            raise ValidationError("Not a time the ledger can hold.") from None
        return utc.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _limit() -> fields.Integer:
    return QueryInteger(
        load_default=50,
        validate=validate.Range(1, 500),
        metadata={"description": "Items per page, 1 to 500"},
    )


def _after(description: str, top: int = BIG) -> fields.Integer:
    return QueryInteger(
        load_default=0, validate=validate.Range(0, top), metadata={"description": description}
    )


def _next_after(more: str = "") -> fields.Integer:
    return fields.Integer(
        required=True,
        allow_none=True,
        metadata={"description": "The `after` of the next page; null on the last" + more},
    )


# -- queries ------------------------------------------------------------------------


class PageQuerySchema(Schema):
    after = _after("The `next_after` of the page before (a position)")
    limit = _limit()


class RoundPageQuerySchema(Schema):
    after = _after("The `next_after` of the page before (a round number)", SMALL)
    limit = _limit()


class SettlementQuerySchema(PageQuerySchema):
    table = fields.String(validate=NAME, metadata={"description": "Only this table's"})
    round = QueryInteger(
        validate=validate.Range(1, SMALL),
        metadata={"description": "Only this round's bets (with `table`)"},
    )
    player = fields.String(
        validate=NAME,
        metadata={"description": "Only those this player was party to; `setter`: the bank"},
    )
    bet = fields.String(validate=BET_ID, metadata={"description": "Only this bet's (an id)"})
    since = StoredTime(metadata={"description": "Recorded at or after this time (ISO-8601)"})
    until = StoredTime(metadata={"description": "Recorded before this time (ISO-8601)"})

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_: Any) -> None:
        if "round" in data and "table" not in data:
            raise ValidationError("A round is a round of a table: give `table` too.", "round")
        if "since" in data and "until" in data and data["since"] >= data["until"]:
            raise ValidationError("Must be later than `since`.", "until")


class EventQuerySchema(PageQuerySchema):
    stream = fields.String(
        validate=validate.Regexp(r"^[^\x00-\x1f\x7f]{1,200}$", error="1 to 200 characters"),
        metadata={
            "description": "Only this stream's events (`table:t1`, `account:player:ann`; "
            "`log`, the seal that ends every write)"
        },
    )


# -- settlements --------------------------------------------------------------------


class SettlementSchema(Schema):
    """A bet closed, settled or voided, and the money it moved."""

    position = fields.Integer(required=True, metadata={"description": "Of the closing event"})
    table = fields.String(required=True)
    round = fields.Integer(required=True)
    bet_id = fields.String(required=True)
    kind = fields.String(required=True)
    outcome = fields.String(required=True, validate=validate.OneOf(["settled", "voided"]))
    winner = fields.String(required=True, allow_none=True)
    reason = fields.String(required=True, allow_none=True, metadata={"description": "A void's"})
    recorded_at = fields.String(required=True)
    transfers = fields.List(fields.Nested(TransferSchema), required=True)
    sources = fields.List(
        fields.Integer(),
        required=True,
        metadata={"description": "Positions of the events it came from"},
    )
    adjustments = fields.List(
        fields.Dict(),
        required=True,
        metadata={
            "description": "What disputes' resolutions moved for this bet since, party to "
            "party (each: bet_id, dispute_id, adjustment reversal|correction, round, version, "
            "position, recorded_at, transfers); empty for a bet no dispute adjusted"
        },
    )


class SettlementPageSchema(Schema):
    items = fields.List(fields.Nested(SettlementSchema), required=True)
    next_after = _next_after()


# -- rounds -------------------------------------------------------------------------


RESULTS: dict[RoundResult, str] = {
    RoundResult.NICK: "the first throw nicked the main: the caster wins",
    RoundResult.OUT: "the first throw threw out: the caster loses",
    RoundResult.CHANCE: "the chance came before the main: the caster wins",
    RoundResult.MAIN: "the main came before the chance: the caster loses",
    RoundResult.NO_MAIN: "the main was thrown outside 5 to 9 where that loses: the caster loses",
    RoundResult.ABANDONED: "the caster left or forfeited, or the table closed, before the "
    "round was decided: neither wins",
}
"""How a round can end, in words (engine.state.RoundResult), for the contract."""


class RoundSchema(Schema):
    table = fields.String(required=True)
    round = fields.Integer(required=True)
    caster = fields.String(required=True)
    main = fields.Integer(required=True, allow_none=True)
    chance = fields.Integer(required=True, allow_none=True)
    result = fields.String(
        required=True,
        allow_none=True,
        validate=validate.OneOf([r.value for r in RoundResult]),
        metadata={
            "description": "\n".join(
                [
                    "How the round ended; null while it is open:",
                    "",
                    *(f"- `{r.value}`: {RESULTS[r]}" for r in RoundResult),
                ]
            )
        },
    )
    winner = fields.String(
        required=True,
        allow_none=True,
        metadata={
            "description": f"Who won the round: the caster (by name) or `{SETTER}`; null "
            "while it is open, or if it was abandoned"
        },
    )
    first_version = fields.Integer(required=True)
    last_version = fields.Integer(required=True)
    first_position = fields.Integer(required=True)
    last_position = fields.Integer(required=True)
    started_at = fields.String(required=True)
    ended_at = fields.String(required=True, allow_none=True)


class RoundPageSchema(Schema):
    items = fields.List(fields.Nested(RoundSchema), required=True)
    next_after = _next_after()


class RoundEventSchema(Schema):
    position = fields.Integer(required=True)
    version = fields.Integer(required=True)
    type = fields.String(required=True)
    payload = payload()
    actor = fields.String(required=True)
    recorded_at = fields.String(required=True)
    transfers = transfers()


class RoundDetailSchema(RoundSchema):
    """The round, and a page of its events: pass `next_after` back as `after` for the
    next. Its settlements are GET /settlements?table=&round=."""

    events = fields.List(
        fields.Nested(RoundEventSchema),
        required=True,
        metadata={"description": "A page of the round's events, in order"},
    )
    next_after = _next_after()


# -- statements ---------------------------------------------------------------------


class CauseSchema(Schema):
    """The event a posting comes from."""

    position = fields.Integer(required=True)
    stream = fields.String(required=True)
    version = fields.Integer(required=True)
    type = fields.String(required=True)
    payload = fields.Dict(
        required=True, allow_none=True, metadata={"description": "null if not readable JSON"}
    )
    actor = fields.String(required=True)
    recorded_at = fields.String(required=True)


class StatementLineSchema(Schema):
    posting = fields.Integer(required=True, metadata={"description": "The posting's id"})
    position = fields.Integer(required=True)
    account = fields.String(required=True)
    amount = fields.Integer(
        required=True, metadata={"description": "Minor units: in is positive, out negative"}
    )
    counterparty = fields.String(required=True)
    event = fields.Nested(CauseSchema, required=True)


class StatementPageSchema(Schema):
    player = fields.String(required=True)
    account = fields.String(required=True)
    items = fields.List(fields.Nested(StatementLineSchema), required=True)
    next_after = _next_after(". A page ends with its last event's postings whole")


# -- the audit trail ----------------------------------------------------------------


class LoggedEventSchema(Schema):
    """An event as stored, with everything its hash covers. To re-check it:
    sha256(prev_hash + "\\n" + canonical JSON of every field but the two hashes),
    canonical meaning sorted keys, no spaces, UTF-8; the first event of a stream has
    a prev_hash of 64 zeros."""

    position = fields.Integer(required=True)
    stream = fields.String(required=True)
    version = fields.Integer(required=True)
    type = fields.String(required=True)
    schema_version = fields.Integer(required=True)
    payload = fields.Dict(
        required=True,
        allow_none=True,
        metadata={"description": "null if the stored text is not JSON: see payload_text"},
    )
    payload_text = fields.String(
        metadata={"description": "The stored text, given only when it is not JSON"}
    )
    actor = fields.String(required=True)
    idempotency_key = fields.String(required=True, allow_none=True)
    recorded_at = fields.String(required=True)
    prev_hash = fields.String(required=True)
    hash = fields.String(required=True)


class EventPageSchema(Schema):
    items = fields.List(fields.Nested(LoggedEventSchema), required=True)
    next_after = _next_after()


VERIFY_LIMIT = 100_000
"""Events one /audit/verify checks unless told: well under a second's work."""
VERIFY_MAX = 500_000
"""The most it checks in one request: a few seconds, inside any worker's timeout."""


DEEP_MAX = 20_000
"""The most events a request's deep check replays (ledger.books.deep): it ran at 5,000
to 16,000 events a second in bench.verify (docs/performance.md, issue 27), so this is
a few seconds at worst, well inside the worker timeout."""


class VerifyQuerySchema(Schema):
    after = _after("Check the events after this position: the `next_after` of the check before")
    limit = QueryInteger(
        load_default=VERIFY_LIMIT,
        validate=validate.Range(1, VERIFY_MAX),
        metadata={"description": f"Events to check at most, 1 to {VERIFY_MAX}"},
    )
    deep = fields.Boolean(
        load_default=False,
        metadata={
            "description": "Also recompute every read model from the events and compare "
            f"(the whole log, so only for a log of at most {DEEP_MAX} events; beyond "
            "that, `hazard verify --deep`)"
        },
    )


class DifferenceSchema(Schema):
    table = fields.String(required=True, metadata={"description": "The read model"})
    key = fields.Raw(required=True, metadata={"description": "The row's key in that table"})
    row = fields.String(required=True, metadata={"description": "The row, in words"})
    column = fields.String(allow_none=True, metadata={"description": "The column that differs"})
    stored = fields.Raw(allow_none=True, metadata={"description": "What is stored"})
    expected = fields.Raw(allow_none=True, metadata={"description": "What the events give"})
    rows = fields.Integer(
        required=True, metadata={"description": "How many rows of the table differ"}
    )
    message = fields.String(required=True, metadata={"description": "The difference, in words"})


class ChainCheckSchema(Schema):
    ok = fields.Boolean(
        required=True,
        metadata={"description": "Everything checked verifies (chains, tree, checkpoints)"},
    )
    events = fields.Integer(
        required=True, metadata={"description": "Events stored when the check began"}
    )
    through = fields.Integer(
        required=True, metadata={"description": "The last position stored when the check began"}
    )
    problems = fields.List(
        fields.String(),
        required=True,
        metadata={
            "description": "The first problems found, each naming a position: the first "
            "event that fails in each broken stream, the first position whose stored tree "
            "hashes differ, a gap, a checkpoint that does not verify; at most 100"
        },
    )
    more_problems = fields.Integer(
        required=True,
        metadata={"description": "How many more problems there are than are listed"},
    )
    after = fields.Integer(required=True, metadata={"description": "The check began after this"})
    checked = fields.Integer(required=True, metadata={"description": "Events checked by this one"})
    next_after = _next_after(": the `after` that checks on from here, until the log's end")
    checkpoints = fields.Integer(
        required=True, metadata={"description": "Stored checkpoints checked (in the range)"}
    )
    root = fields.String(
        required=True,
        metadata={"description": "The tree's root (hex) after the last event checked"},
    )
    key = fields.String(
        required=True,
        allow_none=True,
        metadata={"description": "The verifier key the checkpoints were checked with"},
    )
    read_models = fields.List(
        fields.Nested(DifferenceSchema),
        allow_none=True,
        metadata={
            "description": "With deep: the first row that differs in each read model "
            "(empty: every one equals the replay of the events); null without deep"
        },
    )
    limits = fields.List(
        fields.String(),
        metadata={
            "description": "With deep: each deposit or bet a player's limits or break in "
            "force did not allow, and each limit no command writes, by position (empty: "
            "none; the first 100); absent without deep"
        },
    )
    tokens = fields.List(
        fields.String(),
        allow_none=True,
        metadata={
            "description": "With deep: each token row the token events of the log of "
            "significant events do not account for (empty: none); null without deep"
        },
    )


class ChainHeadSchema(Schema):
    """The newest event: its hash closes its stream's chain."""

    position = fields.Integer(required=True, metadata={"description": "0 when nothing is stored"})
    stream = fields.String(required=True, allow_none=True)
    version = fields.Integer(required=True, allow_none=True)
    hash = fields.String(required=True, allow_none=True)
    recorded_at = fields.String(required=True, allow_none=True)
    events = fields.Integer(
        required=True,
        metadata={"description": "Events stored; equal to position unless the log has a gap"},
    )
    streams = fields.Integer(required=True, metadata={"description": "Streams stored"})
    digest = fields.String(
        required=True,
        metadata={
            "description": "SHA-256 over `stream TAB version TAB hash LF` for every "
            "stream's newest event, sorted by stream: one value that vouches for the whole "
            "log, to print or publish"
        },
    )


class QueryProbability(fields.Float):
    """A probability in a query, written in ASCII as a URL writes a number (`0.01`,
    `1e-3`): Python's float() would read any script's digits, spaces and `_` too."""

    FORM = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

    def _validated(self, value: Any) -> float:
        if isinstance(value, str) and not self.FORM.fullmatch(value):
            raise self.make_error("invalid")
        return float(super()._validated(value))


class DiceQuerySchema(Schema):
    table = fields.String(validate=NAME, metadata={"description": "Only this table's"})
    croupier = fields.String(
        validate=validate.Regexp(r"^[^\x00-\x1f\x7f]{1,200}$", error="1 to 200 characters"),
        metadata={
            "description": "Only what this croupier recorded: the name on their token "
            "(the events' actor `croupier:<name>#<tag>`, every token of that name, and "
            "events recorded before actors named their token), or `<name>#<tag>` for "
            "one token's alone"
        },
    )
    since = StoredTime(metadata={"description": "Recorded at or after this time (ISO-8601)"})
    until = StoredTime(metadata={"description": "Recorded before this time (ISO-8601)"})
    alpha = QueryProbability(
        validate=validate.Range(0, 1, min_inclusive=False, max_inclusive=False),
        metadata={
            "description": "Flag every test whose p-value is below this (0 < alpha < 1; "
            "default 1 - the club's HAZARD_FAIRNESS_LEVEL, "
            f"{fairness.ALPHA} at the default 99%)"
        },
    )

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_: Any) -> None:
        if "since" in data and "until" in data and data["since"] >= data["until"]:
            raise ValidationError("Must be later than `since`.", "until")
