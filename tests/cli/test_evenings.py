"""`hazard evening`, through click's runner, on SQLite and PostgreSQL: the setter opens
an evening, cashes it up, lists the evenings and prints the night report (lines, JSON,
PDF); a refusal is printed with its rule, exits 1 and writes nothing."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import sqlalchemy as sa
from click.testing import CliRunner, Result

from ledger.cli import main
from ledger.commands import tables
from ledger.store.eventstore import EventStore
from ledger.store.schema import events
from tests import pdfkit
from tests.ledger.clubkit import CROUPIER, a_club
from tests.ledger.nightkit import ANN
from tests.signing import SIGNER


def _run(url: str, line: str) -> Result:
    return CliRunner().invoke(main, [*shlex.split(line), "--database-url", url])


def _events(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(events)).scalar_one())


def test_an_evening_from_the_command_line(
    engine: sa.Engine, database_url: str, tmp_path: Path
) -> None:
    store = EventStore(engine, signer=SIGNER)
    club = a_club(store)
    opened = _run(database_url, "evening open --float t1=5000 --cage 1000")
    assert opened.exit_code == 0, opened.output
    assert opened.output == "opened evening 1\n"
    tables.stake(club, "t1", ANN, 100)
    tables.call_main(club, "t1", CROUPIER, 7)
    tables.throw(club, "t1", CROUPIER, 3, 4)
    closed = _run(database_url, "evening cash-up --count t1=4890 --cage 1000")
    assert closed.exit_code == 0, closed.output
    assert "t1: counted 4890, expected 4900, difference -10" in closed.output
    assert "cage: counted 1000, expected 1000, difference +0" in closed.output
    listed = _run(database_url, "evening list")
    assert "evening 1: opened" in listed.output and "by setter:cli" in listed.output
    assert "difference -10" in listed.output
    report = _run(database_url, "evening report 1")
    assert report.exit_code == 0, report.output
    for said in ("takings: -£1.00 to the setter", "difference -£0.10", "1 rounds, 1 throws"):
        assert said in report.output, said
    assert "checkpoint covering it: size" in report.output
    night = json.loads(_run(database_url, "evening report 1 --json").output)
    assert night["difference"] == -10 and night["takings"]["total"] == -100
    pdf = tmp_path / "night.pdf"
    printed = _run(database_url, f"evening report 1 --pdf {pdf}")
    assert printed.exit_code == 0, printed.output
    assert "-£0.10" in " ".join(pdfkit.page_texts(pdf.read_bytes()))
    store.close()


def test_a_refusal_names_its_rule_exits_1_and_writes_nothing(
    engine: sa.Engine, database_url: str
) -> None:
    store = EventStore(engine, signer=SIGNER)
    a_club(store)
    store.close()
    before = _events(engine)
    for line, said in (
        ("evening cash-up --cage 0", "refused (no-evening-open): no evening is open"),
        ("evening open --float nowhere=5", "refused (no-such-table)"),
        ("evening open --float t1=1000000000001", "refused (bad-count)"),
        ("evening open --float t1=-5", "give TABLE=AMOUNT"),
        ("evening open --float t1=" + "9" * 5000, "give TABLE=AMOUNT"),
        ("evening open --float t1=5 --float t1=6", "counted twice"),
        ("evening report 1", "there is no evening 1"),
    ):
        result = _run(database_url, line)
        assert result.exit_code != 0 and said in result.output, (line[:40], result.output)
    assert _events(engine) == before
    assert _run(database_url, "evening open --float t1=5").exit_code == 0
    before = _events(engine)
    result = _run(database_url, "evening open")
    assert result.exit_code == 1 and "refused (evening-open)" in result.output
    assert _events(engine) == before
