"""`hazard export`, through click's runner, on SQLite and PostgreSQL: the file it writes
is the export's bytes, to stdout or whole to FILE (never half a file that looks whole),
and a bad scope is a usage error that writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from ledger.books.book import Book
from ledger.cli import main
from ledger.exports import jsonl
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from tests.ledger.exportkit import play, ticking
from tests.signing import SIGNER, VERIFIER


@pytest.fixture
def played(engine: sa.Engine, database_url: str) -> Iterator[str]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    store.close()
    yield database_url


@pytest.fixture
def outdir(tmp_path: Path) -> Path:
    """Where the files go (the SQLite database is in tmp_path)."""
    path = tmp_path / "out"
    path.mkdir()
    return path


def hazard(url: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["export", *args, "--database-url", url])


def exported(url: str, **scope: Any) -> bytes:
    engine = sa.create_engine(url)
    try:
        prepared = jsonl.prepare(engine, scope_of(**scope), key=VERIFIER)
        return b"".join(prepared.chunks())
    finally:
        engine.dispose()


def test_to_stdout(played: str) -> None:
    result = hazard(played, "--table", "t1")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == exported(played, table="t1")
    assert result.stderr == ""  # no terminal: no progress bar


def test_to_a_file(played: str, outdir: Path) -> None:
    out = outdir / "club.jsonl"
    result = hazard(played, "--all", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == exported(played, everything=True)
    assert result.stdout_bytes == b""
    assert f"to {out}" in result.stderr
    assert list(outdir.iterdir()) == [out]


def test_a_player_since_a_time(played: str, outdir: Path) -> None:
    out = outdir / "cat.jsonl"
    since = "2026-11-23T15:00:20+01:00"
    result = hazard(played, "--player", "cat", "--since", since, "--output", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == exported(played, player="cat", since=since)
    assert b'"since":"2026-11-23T14:00:20.000000Z"' in out.read_bytes()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--table", "t1", "--player", "ann"], "--player"),
        (["--all", "--since", "2026-01-01"], "--since"),
        ([], "say what to export"),
        (["--since", "last tuesday"], "--since"),
        (["--table", "t/1"], "--table"),
        (["--table", "t1", "--sheet", "rounds"], "--format csv"),
        (["--table", "t1", "--format", "xml"], "--format"),
        (["--table", "t1", "--format", "csv", "--sheet", "statement"], "--sheet"),
    ],
)
def test_a_bad_scope_is_a_usage_error(
    played: str, outdir: Path, args: list[str], said: str
) -> None:
    out = outdir / "x.jsonl"
    result = hazard(played, *args, "-o", str(out))
    assert result.exit_code == 2 and said in result.output
    assert list(outdir.iterdir()) == []


@pytest.mark.parametrize(("option", "name"), [("--table", "t9"), ("--player", "zed")])
def test_no_such_table_or_player(played: str, outdir: Path, option: str, name: str) -> None:
    out = outdir / "x.jsonl"
    result = hazard(played, option, name, "-o", str(out))
    assert result.exit_code == 1 and f"no {option[2:]} '{name}'" in result.output
    assert list(outdir.iterdir()) == []


def test_csv_without_the_sheets_says_so(
    played: str, outdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ledger.exports.sheets", None)  # as if not built
    result = hazard(played, "--table", "t1", "--format", "csv", "-o", str(outdir / "x.csv"))
    assert result.exit_code == 1 and "CSV export is not available" in result.output
    assert list(outdir.iterdir()) == []


def test_a_failed_export_leaves_no_file(
    played: str, outdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "CHUNK", 100)
    real = jsonl._Body._lines

    def failing(self: Any, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        yield from real(self, *args, **kwargs)
        raise sa.exc.OperationalError("SELECT", {}, Exception("the server went away"))

    monkeypatch.setattr(jsonl._Body, "_lines", failing)
    out = outdir / "x.jsonl"
    result = hazard(played, "--all", "-o", str(out))
    assert result.exit_code != 0
    assert list(outdir.iterdir()) == []


def test_csv_goes_to_the_sheets(played: str, outdir: Path) -> None:
    from ledger.exports import sheets

    for args, scope, sheet, decimals in [
        (["--table", "t1"], {"table": "t1"}, None, 2),
        (["--player", "cat", "--decimals", "0"], {"player": "cat"}, None, 0),
        (["--all", "--sheet", "rounds"], {"everything": True}, "rounds", 2),
    ]:
        out = outdir / "sheet.csv"
        result = hazard(played, *args, "--format", "csv", "-o", str(out))
        assert result.exit_code == 0, result.output
        engine = sa.create_engine(played)
        try:
            made = sheets.prepare(engine, scope_of(**scope), sheet, decimals)
            assert out.read_bytes() == b"".join(made.chunks())
        finally:
            engine.dispose()
        assert out.read_bytes().startswith(b"\xef\xbb\xbf") and b"\r\n" in out.read_bytes()


def test_csv_in_the_clubs_minor_units_and_zone(
    played: str, outdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hazard export --format csv` reads the club's settings as `hazard serve` does."""
    import csv
    import io

    monkeypatch.setenv("HAZARD_MINOR_UNITS", "3")
    monkeypatch.setenv("HAZARD_TIMEZONE", "Asia/Kolkata")
    out = outdir / "cat.csv"
    result = hazard(played, "--player", "cat", "--format", "csv", "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(out.read_text("utf-8-sig"), newline="")))
    assert rows and all(len(x["amount_decimal"].split(".")[1]) == 3 for x in rows)
    assert all(x["time_local"].endswith("+05:30") for x in rows)
    monkeypatch.setenv("HAZARD_TIMEZONE", "Mars/Olympus")
    result = hazard(played, "--player", "cat", "--format", "csv", "-o", str(out))
    assert result.exit_code == 1 and "HAZARD_TIMEZONE" in result.output


def test_an_output_in_no_directory_is_a_clear_error(played: str, outdir: Path) -> None:
    result = hazard(played, "--table", "t1", "-o", str(outdir / "missing" / "x.jsonl"))
    assert result.exit_code == 1
    assert "cannot write" in result.output and "No such file or directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_dash_is_stdout(played: str, outdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(outdir)
    result = hazard(played, "--table", "t1", "-o", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == exported(played, table="t1")
    assert list(outdir.iterdir()) == []


def test_an_export_needs_no_signing_key_only_the_public_one(
    played: str, outdir: Path, tmp_path: Path
) -> None:
    """Regression: on a copy of the database, away from the signing key (as docs/auditor.md
    says an auditor's machine should be), `hazard export` asked for it. The header needs
    only the public key, which the auditor was given (club.pub): `--key`, as `hazard
    verify` takes it, checked against the log's newest signed checkpoint."""
    away = {"HAZARD_KEY": str(tmp_path / "no-such.key")}
    club_pub = tmp_path / "club.pub"
    club_pub.write_text(VERIFIER.text() + "\n", encoding="utf-8")
    for key in (str(club_pub), VERIFIER.text()):
        out = outdir / "all.jsonl"
        args = ["export", "--all", "--key", key, "-o", str(out), "--database-url", played]
        result = CliRunner().invoke(main, args, env=away)
        assert result.exit_code == 0, result.output
        assert out.read_bytes() == exported(played, everything=True)
    # Without one: what to give, and that no signing key is wanted.
    bare = CliRunner().invoke(main, ["export", "--all", "--database-url", played], env=away)
    assert bare.exit_code == 1 and bare.stdout_bytes == b""
    assert "--key" in bare.output and "public key" in bare.output
    assert "needs no signing key" in bare.output
    # A key that did not sign the log is refused, and nothing is written.
    from ledger.store.log.keys import Signer

    other = Signer.generate(VERIFIER.name).verifier.text()
    out = outdir / "other.jsonl"
    args = ["export", "--all", "--key", other, "-o", str(out), "--database-url", played]
    refused = CliRunner().invoke(main, args, env=away)
    assert refused.exit_code == 1 and "did not sign" in refused.output
    assert not out.exists()


def test_a_spreadsheet_needs_no_key_at_all(played: str, tmp_path: Path) -> None:
    away = {"HAZARD_KEY": str(tmp_path / "no-such.key")}
    args = ["export", "--table", "t1", "--format", "csv", "--database-url", played]
    result = CliRunner().invoke(main, args, env=away)
    assert result.exit_code == 0, result.output
