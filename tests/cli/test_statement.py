"""`hazard statement` on SQLite and PostgreSQL, and the export that proves it: the
player's export for the same times, checked offline, has the statement's movements for
their account (and `hazard verify FILE` prints them as a statement line); the export of
the history before comes to the balance at the start. An insider's edit of a posting
makes the figures disagree, and the command says so and exits 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import jsonl, offline
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.schema import events, postings
from tests.ledger.exportkit import play
from tests.signing import SIGNER, VERIFIER

ON_THE_22ND = 12
"""The writes recorded on 22 November; the rest are on the 23rd."""


def two_evenings() -> Any:
    writes = count()

    def now() -> str:
        n = next(writes)
        day = 22 if n < ON_THE_22ND else 23
        return f"2026-11-{day}T20:{n // 60:02d}:{n % 60:02d}.000000Z"

    return now


@pytest.fixture
def played(engine: sa.Engine, database_url: str) -> Iterator[str]:
    store = EventStore(engine, clock=two_evenings(), signer=SIGNER)
    play(Club(Book(store)))
    store.close()
    yield database_url


def hazard(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["statement", *args, "--database-url", url])


def as_json(url: str, *args: str) -> dict[str, Any]:
    result = hazard(url, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def verified(url: str, **scope: Any) -> offline.Verified:
    engine = sa.create_engine(url)
    try:
        prepared = jsonl.prepare(engine, scope_of(**scope), key=VERIFIER)
        body = b"".join(prepared.chunks())
    finally:
        engine.dispose()
    return offline.verify(body.splitlines(), VERIFIER)


MOVEMENTS = ("deposited", "paid", "staked", "withdrawn", "adjusted")


@pytest.mark.parametrize("name", ["ann", "bob", "cat"])
def test_the_export_for_the_same_times_proves_it(played: str, name: str) -> None:
    found = as_json(played, "--player", name, "--evening", "2026-11-23")
    assert found["period"]["since"] == "2026-11-23T00:00:00.000000Z"
    moved = found["deposited"] + found["paid"] - found["staked"] - found["withdrawn"]
    assert found["opening"] + moved + found["adjusted"] == found["closing"]
    reckoned = found["net_deposits"] + found["net_play"] + found["adjusted"] - found["in_play"]
    assert found["opening"] + reckoned == found["closing"]
    assert found["staked"] or found["paid"]  # each of them played on the 23rd

    period = verified(played, **found["proof"])
    money = period.money[f"player:{name}"]
    assert tuple(getattr(money, k) for k in MOVEMENTS) == tuple(found[k] for k in MOVEMENTS)
    said = (
        f"statement: {name} from {found['period']['since']} up to {found['period']['until']}: "
        f"deposited {found['deposited']}, withdrawn {found['withdrawn']} (net deposits "
        f"{found['net_deposits']}); staked {found['staked']}, paid {found['paid']}, adjusted "
        f"{found['adjusted']}; the balance moved by {found['closing'] - found['opening']}"
    )
    assert said in period.lines()

    before = verified(played, **found["history"])
    assert before.money[f"player:{name}"].net == found["opening"]
    assert found["opening"] > 0  # each deposited on the 22nd


def test_the_text_says_each_line_and_how_to_prove_it(played: str) -> None:
    result = hazard(played, "--player", "ann", "--month", "2026-11")
    assert result.exit_code == 0, result.output
    found = as_json(played, "--player", "ann", "--month", "2026-11")
    text = result.stdout
    assert "ann's statement, month 2026-11" in text
    assert "Balance at the start" in text and "£0.00" in text
    closing = f"£{found['closing'] // 100:,}.{found['closing'] % 100:02d}"
    assert "Balance at the end" in text and closing in text
    assert (
        "prove it: hazard export --player ann --since 2026-11-01T00:00:00.000000Z "
        "--until 2026-12-01T00:00:00.000000Z -o FILE && hazard verify FILE"
    ) in text


def test_csv_and_pdf_to_files(played: str, tmp_path: Path) -> None:
    sheet, paper = tmp_path / "s.csv", tmp_path / "s.pdf"
    result = hazard(played, "--player", "ann", "--week", "2026-W48", "--format", "csv", "-o",
                    str(sheet))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sheet.read_text(encoding="utf-8").startswith("\ufeffplayer,ann")
    result = hazard(played, "--player", "ann", "--week", "2026-W48", "--format", "pdf")
    assert result.exit_code == 2 and "-o FILE" in result.output
    result = hazard(played, "--player", "ann", "--week", "2026-W48", "--format", "pdf", "-o",
                    str(paper))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert paper.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--player", "ann"], "ask for one period"),
        (["--player", "ann", "--month", "2026-11", "--evening", "2026-11-23"], "--month"),
        (["--player", "ann", "--month", "2026-13"], "not a month"),
        (["--player", "ann", "--from", "2026-11-01"], "a range needs both"),
        (["--player", "ann", "--from", "2020-01-01", "--to", "2026-01-01"], "at most 366 days"),
        (["--player", "ann", "--evening", "9" * 5000], "no evening numbered 9999"),
        (["--player", "ann", "--evening", "26-11-2026"], "not a date"),
        (["--player", "../x", "--month", "2026-11"], "not a player's name"),
    ],
)
def test_a_bad_period_or_name_is_a_usage_error(played: str, args: list[str], said: str) -> None:
    result = hazard(played, *args)
    assert result.exit_code == 2, result.output
    assert said in result.output


def test_no_such_player(played: str) -> None:
    result = hazard(played, "--player", "nobody", "--month", "2026-11")
    assert result.exit_code == 1 and "there is no player 'nobody'" in result.output


def test_an_edited_posting_is_named(played: str, engine: sa.Engine) -> None:
    """An insider adds 1 to one of ann's postings on the 23rd, its running balance left."""
    with engine.begin() as conn:
        p = postings.c
        target = conn.execute(
            sa.select(p.id)
            .join(events, events.c.position == p.position)
            .where(p.account == "player:ann", events.c.recorded_at >= "2026-11-23")
            .order_by(p.id)
            .limit(1)
        ).scalar_one()
        conn.execute(postings.update().where(p.id == target).values(amount=p.amount + 1))
    result = hazard(played, "--player", "ann", "--evening", "2026-11-23")
    assert result.exit_code == 1
    assert "does not add up: ann's 2026-11-23" in result.stderr
    # The day before is untouched, and adds up.
    assert hazard(played, "--player", "ann", "--evening", "2026-11-22").exit_code == 0
