"""The dice-fairness report's counts of the whole club, kept beside the events.

Revision ID: 0017
Revises: 0016

The report of the whole club (GET /reports/dice with no scope, `hazard fairness`, the
console's dice page) counted every throw in the log and every decided round, and read
every table's opening for its rule set: it grew with the log. Three read models now
hold what it counts (ledger.books.dicetallies), written in each append's transaction:
`dice_counts` (valid throws by ordered pair, as the dice showed them), `main_counts`
(rounds decided after a main, by rule set, main and who won) and `main_tables` (each
table with such a round, and its rule set).

On a database with events already, they are counted here from what is stored, as the
report counted them: the throws from the events (their canonical payload is the two
dice), each throw a dispute corrected moved to the dice the correction says; the rounds
from the `rounds` read model; each table's rule set from its TableOpened, digested as
the write path digests it (engine.rules, the same code: the digest must be the same).
A row is written only where its count is not zero, as the write path keeps them. No
event changes; a downgrade drops the three tables.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import sqlalchemy as sa
from alembic import op

from engine.rules import from_mapping
from engine.state import RoundResult

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

WON = {r.value: r.caster_won for r in RoundResult if r.caster_won is not None}
"""The results that decide a round, and whether the caster won it."""


def _canonical(document: Any) -> bytes:
    # ledger.store.codec.canonical: sorted keys, no spaces, UTF-8.
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def upgrade() -> None:
    dice_counts = op.create_table(
        "dice_counts",
        sa.Column("die1", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("die2", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("throws", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("die1", "die2", name=op.f("pk_dice_counts")),
    )
    main_counts = op.create_table(
        "main_counts",
        sa.Column("rules", sa.String(64), nullable=False),
        sa.Column("main", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("caster_won", sa.Boolean(), nullable=False),
        sa.Column("rounds", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("rules", "main", "caster_won", name=op.f("pk_main_counts")),
    )
    main_tables = op.create_table(
        "main_tables",
        sa.Column("stream", sa.String(200), nullable=False),
        sa.Column("rules", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("stream", name=op.f("pk_main_tables")),
    )
    bind = op.get_bind()
    pairs: Counter[tuple[int, int]] = Counter()
    thrown = "SELECT payload, count(*) FROM events WHERE type = 'DiceThrown' GROUP BY payload"
    for payload, n in bind.execute(sa.text(thrown)):
        dice = json.loads(payload)
        pairs[dice["die1"], dice["die2"]] += n
    corrected = (
        "SELECT e.payload, d.resolved_die1, d.resolved_die2 FROM disputes AS d "
        "JOIN events AS e ON e.stream = d.stream AND e.version = d.resolved_throw "
        "WHERE d.resolution = 'corrected' AND e.type = 'DiceThrown'"
    )
    for payload, die1, die2 in bind.execute(sa.text(corrected)):
        dice = json.loads(payload)
        pairs[dice["die1"], dice["die2"]] -= 1
        pairs[int(die1), int(die2)] += 1
    rows = [{"die1": a, "die2": b, "throws": n} for (a, b), n in sorted(pairs.items()) if n]
    if rows:
        op.bulk_insert(dice_counts, rows)

    rules: dict[str, str] = {}
    opened = "SELECT stream, payload FROM events WHERE type = 'TableOpened'"
    for stream, payload in bind.execute(sa.text(opened)):
        mapping = from_mapping(json.loads(payload)["rules"]).to_mapping()
        rules[stream] = hashlib.sha256(_canonical(mapping)).hexdigest()
    rounds: Counter[tuple[str, int, bool]] = Counter()
    listed: dict[str, str] = {}
    decided = ", ".join(f"'{result}'" for result in WON)
    played = (
        "SELECT stream, main, result, count(*) FROM rounds WHERE main IS NOT NULL "
        f"AND result IN ({decided}) GROUP BY stream, main, result"
    )
    for stream, main, result, n in bind.execute(sa.text(played)):
        rounds[rules[stream], int(main), WON[result]] += n
        listed[stream] = rules[stream]
    if rounds:
        op.bulk_insert(
            main_counts,
            [
                {"rules": r, "main": m, "caster_won": won, "rounds": n}
                for (r, m, won), n in sorted(rounds.items())
            ],
        )
        op.bulk_insert(main_tables, [{"stream": s, "rules": r} for s, r in sorted(listed.items())])


def downgrade() -> None:
    op.drop_table("main_tables")
    op.drop_table("main_counts")
    op.drop_table("dice_counts")
