"""CSV sheets for a spreadsheet, on SQLite and PostgreSQL: a header row, UTF-8 with a
byte order mark, CRLF rows the csv module reads back, amounts in minor units and as a
decimal, names a spreadsheet would run as a formula escaped, and a statement whose
running balance ends at the player's balance."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.book import Book
from ledger.exports import sheets
from ledger.exports.scope import NotFound, ScopeError, scope_of
from ledger.house import House
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.vocabulary import Deposited, Withdrawn

ANN = "-ann"  # a legal name (accounts.NAME) that a spreadsheet would read as a formula


def _play(store: EventStore) -> None:
    """Players paid in and out, and two rounds at t1 with money on them."""
    club = Club(Book(store))
    for name in (ANN, "bob"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")
    club.account_command("setter", Deposited, 100_000, "setter")
    steps: list[Callable[[hz.TableState], list[hz.Event]]] = [
        lambda s: hz.seat(s, ANN),
        lambda s: hz.seat(s, "bob"),
        lambda s: hz.cast_for_caster(s, ANN, 1),
        lambda s: hz.cast_for_caster(s, "bob", 6),
        lambda s: hz.call_main(s, 7),
        lambda s: hz.stake(s, 1000),
        lambda s: hz.lay(s, "bob", 405),
        lambda s: hz.cover(s, 4000),
        lambda s: hz.throw(s, 2, 2),  # chance 4
        lambda s: hz.throw(s, 1, 3),  # the chance: -ann wins
        lambda s: hz.call_main(s, 6),
        lambda s: hz.stake(s, 250),
        lambda s: hz.throw(s, 1, 1),  # out
    ]
    club.command(
        "t1", "croupier:cy", lambda s, _: hz.open_table(hz.BUILTIN["english"]), new_table=True
    )
    for step in steps:
        club.command("t1", "croupier:cy", lambda s, _, step=step: step(s))
    club.account_command(ANN, Withdrawn, 123, "setter")


@pytest.fixture
def played(store: EventStore) -> sa.Engine:
    _play(store)
    return store.engine


def _read(engine: sa.Engine, sheet: str | None = None, **scope: object) -> tuple[bytes, list]:
    prepared = sheets.prepare(engine, scope_of(**scope), sheet)  # type: ignore[arg-type]
    body = b"".join(prepared.chunks())
    assert body.startswith(b"\xef\xbb\xbf")  # UTF-8's byte order mark, for Excel
    text = body.decode("utf-8-sig")
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return body, rows


def test_the_statement_runs_to_the_players_balance(played: sa.Engine) -> None:
    _, rows = _read(played, player=ANN)
    assert rows[0] == list(sheets.HEADERS["statement"])
    lines = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    with played.connect() as conn:
        (stored,) = conn.execute(
            sa.text("SELECT balance FROM accounts WHERE account = :a"), {"a": "player:-ann"}
        ).one()
    assert int(lines[-1]["balance"]) == stored == 5000 + 1000 + 405 - 250 - 123
    assert sum(int(x["amount"]) for x in lines) == stored
    # Every posting's decimal is its minor units over 100, exactly.
    for x in lines:
        assert x["amount_decimal"] == f"{int(x['amount']) / 100:.2f}"
    assert lines[-1]["balance_decimal"] == "60.32"
    assert lines[-1]["event"] == "Withdrawn" and lines[-1]["amount_decimal"] == "-1.23"
    stakes = [x for x in lines if x["event"] == "CasterStaked"]
    assert [x["bet"] for x in stakes] and stakes[0]["stream"] == "table:t1"


def test_a_name_a_spreadsheet_would_run_is_escaped(played: sa.Engine) -> None:
    _, rows = _read(played, "settlements", table="t1")
    header, *body = rows
    assert header == list(sheets.HEADERS["settlements"])
    winners = {r[header.index("winner")] for r in body}
    assert "'-ann" in winners and "-ann" not in winners
    # Numbers are never escaped, a negative one included.
    _, statement = _read(played, player=ANN)
    amounts = [r[statement[0].index("amount")] for r in statement[1:]]
    assert "-123" in amounts
    assert all(not a.startswith("'") for a in amounts)


def test_settlements_pay_the_winner_in_minor_units_and_decimals(played: sa.Engine) -> None:
    _, rows = _read(played, table="t1")  # settlements by default for a table
    header, *body = rows
    by_bet = {r[header.index("bet")]: dict(zip(header, r, strict=True)) for r in body}
    caster = by_bet["b8"]  # -ann's stake of 1000 against the setter, won on the chance
    assert (caster["winner"], caster["amount"], caster["amount_decimal"]) == (
        "'-ann",
        "2000",
        "20.00",
    )
    assert caster["outcome"] == "settled" and caster["kind"] == "caster"
    assert caster["transfers"] == "escrow:t1:b8 → player:-ann 2000"
    assert caster["time"].endswith("Z") and caster["time"][10] == "T"
    laid = by_bet["b9"]
    assert (laid["winner"], laid["amount"], laid["amount_decimal"]) == ("'-ann", "810", "8.10")
    assert by_bet["b16"]["winner"] == "setter"


def test_rounds(played: sa.Engine) -> None:
    _, rows = _read(played, "rounds", table="t1")
    header, *body = rows
    assert header == list(sheets.HEADERS["rounds"])
    assert [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in body] == [
        ("t1", "1", "'-ann", "7", "4", "chance"),
        ("t1", "2", "'-ann", "6", "", "out"),
    ]
    _, mine = _read(played, "rounds", player="bob")  # bob had a bet settled in round 1
    assert [r[1] for r in mine[1:]] == ["1"]


def test_decimals_and_time_filters(played: sa.Engine) -> None:
    prepared = sheets.prepare(played, scope_of(player=ANN), decimals=0)
    text = b"".join(prepared.chunks()).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert all(r[6] == r[7] for r in rows[1:])  # no places: the decimal is the minor units
    assert prepared.total == len(rows) - 1
    with played.connect() as conn:
        times = sorted(t for (t,) in conn.execute(sa.text("SELECT recorded_at FROM events")))
    _, later = _read(played, player=ANN, since=times[-1])
    assert len(later) == 2 and later[1][3] == "Withdrawn"
    assert later[1][8] == "6032"  # the running balance starts from the balance before


def test_decimal_is_exact() -> None:
    assert sheets.decimal(1234, 2) == "12.34"
    assert sheets.decimal(-5, 2) == "-0.05"
    assert sheets.decimal(10**30 + 1, 18) == "1000000000000.000000000000000001"
    assert sheets.decimal(-7, 0) == "-7"


@pytest.mark.parametrize("text", ["=cmd|' /C calc'!A0", "+1", "-ann", "@SUM(A1)", "\tx", "\rx"])
def test_formula_starts_are_escaped(text: str) -> None:
    assert sheets.escaped(text) == "'" + text
    assert sheets.escaped("ann") == "ann" and sheets.escaped(None) == ""


def test_bad_requests_fail_before_any_output(played: sa.Engine) -> None:
    with pytest.raises(ScopeError) as info:
        sheets.prepare(played, scope_of(table="t1"), "statement")
    assert info.value.field == "sheet"
    with pytest.raises(ScopeError):
        sheets.prepare(played, scope_of(everything=True), "ledger")
    with pytest.raises(ScopeError) as info:
        sheets.prepare(played, scope_of(player=ANN), decimals=-1)
    assert info.value.field == "decimals"
    with pytest.raises(NotFound):
        sheets.prepare(played, scope_of(table="t9"))
    with pytest.raises(NotFound):
        sheets.prepare(played, scope_of(player="zed"))


def test_pages_are_read_by_keyset(played: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _read(played, player=ANN)[0]
    everything = _read(played, "settlements", everything=True)[0]
    rounds = _read(played, "rounds", everything=True)[0]
    monkeypatch.setattr(sheets, "BATCH", 2)
    assert _read(played, player=ANN)[0] == whole
    assert _read(played, "settlements", everything=True)[0] == everything
    assert _read(played, "rounds", everything=True)[0] == rounds
    prepared = sheets.prepare(played, scope_of(everything=True))
    seen: list[int] = []
    b"".join(prepared.chunks(seen.append))
    assert sum(seen) == prepared.total and len(seen) > 1
    assert prepared.filename == "hazard-all-settlements.csv"


def test_the_clubs_minor_units_and_zone_by_default(played: sa.Engine) -> None:
    """A club that counts euros to the tenth of a cent, in Tokyo: every decimal column
    has its three places, and every time is written again in its zone, to the second,
    in columns after the old ones (which stay where they were)."""
    tokyo = House("EUR", 3, "Asia/Tokyo")
    for sheet, scope, times in [
        ("statement", {"player": ANN}, {"time": "time_local"}),
        ("settlements", {"table": "t1"}, {"time": "time_local"}),
        ("rounds", {"table": "t1"}, {"started_at": "started_local", "ended_at": "ended_local"}),
    ]:
        prepared = sheets.prepare(played, scope_of(**scope), sheet, house=tokyo)  # type: ignore[arg-type]
        text = b"".join(prepared.chunks()).decode("utf-8-sig")
        header, *body = list(csv.reader(io.StringIO(text, newline="")))
        assert header[: len(OLD_HEADERS[sheet])] == list(OLD_HEADERS[sheet])
        assert body
        for row in body:
            line = dict(zip(header, row, strict=True))
            for name in ("amount", "balance"):
                if name in line:
                    assert line[f"{name}_decimal"] == sheets.decimal(int(line[name]), 3)
            for utc, local in times.items():
                if line[utc]:
                    at = datetime.fromisoformat(line[utc]).astimezone(ZoneInfo("Asia/Tokyo"))
                    assert line[local] == at.strftime("%Y-%m-%dT%H:%M:%S+09:00")
                else:
                    assert line[local] == ""
    # Decimals asked for win over the club's.
    asked = sheets.prepare(played, scope_of(player=ANN), decimals=0, house=tokyo)
    text = b"".join(asked.chunks()).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert all(r[6] == r[7] for r in rows[1:])


OLD_HEADERS = {
    "statement": ("position", "time", "stream", "event", "bet", "counterparty", "amount",
                  "amount_decimal", "balance", "balance_decimal"),
    "settlements": ("position", "time", "table", "round", "bet", "kind", "outcome", "winner",
                    "reason", "amount", "amount_decimal", "transfers"),
    "rounds": ("table", "round", "caster", "main", "chance", "result", "started_at",
               "ended_at", "first_position", "last_position"),
}  # fmt: skip
"""The columns each sheet had before the local times were added: still first, in order."""
