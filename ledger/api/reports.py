"""Reports for the club: the dice-fairness report (ledger.audit.fairness).

GET /reports/dice tells a club when its dice, or a croupier recording them, need a
look: each table's throws and rounds against the exact odds, with a flag on every test
whose p-value falls below `alpha`. For the setter and the auditor: the report can
point at a croupier, so croupiers (its subject) and players do not read it.
"""

from __future__ import annotations

from typing import Any

from flask import current_app
from marshmallow import Schema, fields

from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.audit import fairness
from ledger.commands import Role
from ledger.house import House
from ledger.store.log import check
from ledger.web import club, heavy
from ledger.web.readschemas import DiceQuerySchema

blp = Blueprint("reports", __name__, description="Reports for the club: dice fairness")

READERS = (Role.AUDITOR,)
"""Who reads the reports (besides the setter)."""


def _observed() -> fields.Integer:
    return fields.Integer(required=True, metadata={"description": "Throws that showed it"})


def _expected() -> fields.Float:
    return fields.Float(
        required=True, metadata={"description": "Throws expected: throws times `p`"}
    )


def _p() -> fields.String:
    return fields.String(
        required=True, metadata={"description": "Its exact probability, `n/d` (engine.dice)"}
    )


class TotalCellSchema(Schema):
    total = fields.Integer(required=True)
    observed = _observed()
    expected = _expected()
    p = _p()


class PairCellSchema(Schema):
    die1 = fields.Integer(required=True)
    die2 = fields.Integer(required=True)
    observed = _observed()
    expected = _expected()
    p = _p()


def _chi_square_fields(cell: type[Schema]) -> dict[str, fields.Field[Any]]:
    return {
        "test": fields.String(required=True, metadata={"description": "`chi-square`"}),
        "cells": fields.List(fields.Nested(cell), required=True),
        "statistic": fields.Float(
            required=True,
            allow_none=True,
            metadata={"description": "Pearson's chi-square; null with no throws"},
        ),
        "df": fields.Integer(required=True, metadata={"description": "Degrees of freedom"}),
        "p_value": fields.Float(
            required=True,
            allow_none=True,
            metadata={"description": "P(chi-square >= statistic) if the dice are fair"},
        ),
        "least_expected": fields.Float(
            required=True, metadata={"description": "The smallest expected count of a cell"}
        ),
        "enough": fields.Boolean(
            required=True,
            metadata={
                "description": "Every cell expects at least `min_expected` throws, as the "
                "chi-square approximation needs; if not, the test is never flagged"
            },
        ),
        "flagged": fields.Boolean(
            required=True, metadata={"description": "`enough`, and p_value below alpha"}
        ),
    }


TotalsTestSchema = Schema.from_dict(_chi_square_fields(TotalCellSchema), name="TotalsTest")
PairsTestSchema = Schema.from_dict(_chi_square_fields(PairCellSchema), name="PairsTest")


class MainTestSchema(Schema):
    main = fields.Integer(required=True)
    rounds = fields.Integer(
        required=True, metadata={"description": "Rounds decided (won or lost) with this main"}
    )
    wins = fields.Integer(required=True, metadata={"description": "Won by the caster"})
    losses = fields.Integer(required=True, metadata={"description": "Lost by the caster"})
    p_win = fields.String(
        required=True,
        metadata={"description": "Exact P(caster wins) with this main, `n/d` (`hazard odds`)"},
    )
    expected_wins = fields.Float(required=True, metadata={"description": "rounds times p_win"})
    p_value = fields.Float(
        required=True,
        allow_none=True,
        metadata={"description": "The exact two-sided binomial test's; null with no rounds"},
    )
    flagged = fields.Boolean(required=True, metadata={"description": "p_value below alpha"})


class RuleSetMainsSchema(Schema):
    ruleset = fields.String(required=True, metadata={"description": "The rule set's name"})
    tables = fields.List(
        fields.String(), required=True, metadata={"description": "The tables that play it"}
    )
    test = fields.String(required=True, metadata={"description": "`exact binomial, two-sided`"})
    mains = fields.List(fields.Nested(MainTestSchema), required=True)


def _adjusted() -> dict[str, fields.Field[Any]]:
    return {
        "p_value": fields.Float(
            required=True,
            allow_none=True,
            metadata={"description": "The raw two-sided p-value; null with nothing to test"},
        ),
        "exact": fields.Boolean(
            required=True,
            metadata={
                "description": "p_value is exact (small counts); else the normal approximation"
            },
        ),
        "adjusted_p": fields.Float(
            required=True,
            allow_none=True,
            metadata={"description": "Holm-adjusted over every order test in the report"},
        ),
        "flagged": fields.Boolean(
            required=True, metadata={"description": "adjusted_p below alpha"}
        ),
    }


RunsTestSchema = Schema.from_dict(
    {
        "test": fields.String(required=True),
        "above": fields.Integer(required=True, metadata={"description": "Throws above 7"}),
        "below": fields.Integer(required=True, metadata={"description": "Throws below 7"}),
        "runs": fields.Integer(
            required=True, metadata={"description": "Runs above and below 7 (sevens left out)"}
        ),
        "expected_runs": fields.Float(
            required=True,
            allow_none=True,
            metadata={"description": "2 above below / (above + below) + 1"},
        ),
        **_adjusted(),
    },
    name="RunsTest",
)
SerialTestSchema = Schema.from_dict(
    {
        "test": fields.String(required=True),
        "statistic": fields.Integer(
            required=True,
            metadata={"description": "Sum over consecutive throws of (total - 7)(next - 7)"},
        ),
        "correlation": fields.Float(
            required=True, metadata={"description": "Lag-1 correlation about 7"}
        ),
        **_adjusted(),
    },
    name="SerialTest",
)


class OrderUnitSchema(Schema):
    table = fields.String(metadata={"description": "A table (or `croupier`)"})
    croupier = fields.String(metadata={"description": "A croupier (or `table`)"})
    throws = fields.Integer(required=True)
    runs = fields.Nested(RunsTestSchema, required=True)
    serial = fields.Nested(SerialTestSchema, required=True)


class OrderSchema(Schema):
    tables = fields.List(fields.Nested(OrderUnitSchema), required=True)
    croupiers = fields.List(fields.Nested(OrderUnitSchema), required=True)
    correction = fields.String(required=True, metadata={"description": "`holm`"})
    tests = fields.Integer(required=True, metadata={"description": "Order tests with a p-value"})
    chance_flags = fields.Float(
        required=True,
        metadata={"description": "Flags chance alone raises on average: tests times alpha"},
    )
    raw_below_alpha = fields.Integer(
        required=True, metadata={"description": "Tests whose raw p-value is below alpha"}
    )
    flagged = fields.Integer(
        required=True, metadata={"description": "Tests whose adjusted p-value is below alpha"}
    )


class DiceScopeSchema(Schema):
    table = fields.String(required=True, allow_none=True)
    croupier = fields.String(required=True, allow_none=True)
    since = fields.String(required=True, allow_none=True)
    until = fields.String(required=True, allow_none=True)


class DiceReportSchema(Schema):
    scope = fields.Nested(DiceScopeSchema, required=True)
    alpha = fields.Float(required=True, metadata={"description": "The threshold applied"})
    min_expected = fields.Float(
        required=True,
        metadata={"description": "The least expected count per cell a chi-square test needs"},
    )
    throws = fields.Integer(
        required=True, metadata={"description": "Throws that counted (void throws do not)"}
    )
    totals = fields.Nested(TotalsTestSchema, required=True)
    pairs = fields.Nested(PairsTestSchema, required=True)
    rulesets = fields.List(
        fields.Nested(RuleSetMainsSchema),
        required=True,
        metadata={
            "description": "The caster's result per main, for each rule set the tables in "
            "scope play; rounds decided after a main was set"
        },
    )
    order = fields.Nested(
        OrderSchema,
        required=True,
        allow_none=True,
        metadata={
            "description": "Runs and serial tests of the throws in the order thrown, per "
            "table and per croupier, Holm-adjusted; null for the whole club or too many throws "
            "(see order_note)"
        },
    )
    order_note = fields.String(
        required=True, allow_none=True, metadata={"description": "Why `order` is null"}
    )
    flags = fields.List(
        fields.String(),
        required=True,
        metadata={"description": "Each flagged test, in words; empty if none is"},
    )


@blp.route("/reports/dice", methods=["GET"])
@heavy.read(blp)
@blp.arguments(DiceQuerySchema, location="query", unknown=None)
@blp.response(200, DiceReportSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Neither setter nor auditor")
@blp.alt_response(404, schema=ProblemSchema, description="No such table")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def dice(query: dict[str, Any]) -> dict[str, Any]:
    """The dice-fairness report for a table, a croupier or the whole club, over a time
    range: every total and ordered pair thrown against the exact 2d6 odds (chi-square),
    and the caster's wins per main against the exact P(caster wins) of the table's rule
    set (exact binomial), each test flagged when its p-value is below `alpha`. An empty
    range is an answer with no throws, not an error."""
    require(*READERS)
    scope = fairness.Scope(
        table=query.get("table"),
        croupier=query.get("croupier"),
        since=query.get("since"),
        until=query.get("until"),
    )
    with club().store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)  # the throws and the rounds as of one moment
        house: House = current_app.extensions["hazard.house"]
        return fairness.report(conn, scope, query.get("alpha", house.fairness_alpha))
