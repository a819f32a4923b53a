"""An export checked by a checker written here from docs/export-format.md alone, with
hashlib, json, the `cryptography` package and the engine: nothing from ledger/. What
it accepts, the ledger's own export must give; what it rejects, a tampered copy.

The test uses ledger/ only to make the files (a played log on SQLite and PostgreSQL,
exported). The checker is `Checker` below, and the one place it speaks the signed-note
and checkpoint formats (c2sp.org/signed-note, c2sp.org/tlog-checkpoint) is `open_note`.
What a format 2 file proves whole (the format's "Seals": a whole log's every seal, a
range's edges, a table's or a player's head proofs) is held by `Whole`, and the forged
files it must reject are tests/ledger/test_independent_completeness.py's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

# ---------------------------------------------------------------------------------------
# The checker: hashlib, json, cryptography and engine only.
# ---------------------------------------------------------------------------------------
from tests.ledger.independentkit import (
    ADJUSTED,
    FIGURES,
    NOT_HASHED,
    Checker,
    Rejected,
    canonical,
    sha,
)

# The tests: the files come from ledger/.
# ---------------------------------------------------------------------------------------


@pytest.fixture
def log(engine: sa.Engine) -> Iterator[tuple[sa.Engine, str]]:
    from ledger.books.book import Book
    from ledger.service import Club
    from ledger.store.eventstore import EventStore
    from tests.ledger.exportkit import play, ticking
    from tests.signing import SIGNER

    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    store.close()
    yield engine, SIGNER.verifier.text()


def exported(engine: sa.Engine, **scope: Any) -> bytes:
    from ledger.exports import jsonl
    from ledger.exports.scope import scope_of
    from tests.signing import VERIFIER

    return b"".join(jsonl.prepare(engine, scope_of(**scope), key=VERIFIER).chunks())


def test_the_whole_log_checks_out(log: tuple[sa.Engine, str]) -> None:
    engine, key = log
    data = exported(engine, everything=True)
    found = Checker(key).check(data)
    closing = json.loads(data.splitlines()[-1])
    assert found["events"] == closing["events"] == closing["size"] and found["skipped"] == 0
    assert found["rounds"] >= 3 and found["money"]["player:ann"]["deposited"] == 5001


def test_a_table_checks_out(log: tuple[sa.Engine, str]) -> None:
    engine, key = log
    data = exported(engine, table="t1")
    found = Checker(key).check(data)
    assert found["skipped"] > 0
    assert found["money"]["player:cat"] == dict(zip(FIGURES, (0, 600, 300, 0), strict=True))


def _rehashed(data: bytes, pick: Any, change: Any) -> bytes:
    """The file with one event changed, its leaf and its stream's chain recomputed."""
    records = [json.loads(line) for line in data.splitlines()]
    index = next(i for i, r in enumerate(records) if r["record"] == "event" and pick(r))
    change(records[index])
    stream, prev = records[index]["stream"], records[index]["prev_hash"]
    for r in records[index:]:
        if r["record"] == "event" and r["stream"] == stream:
            doc = canonical({k: v for k, v in r.items() if k not in NOT_HASHED})
            r["leaf"] = sha(b"\x00" + doc).hex()
            r["prev_hash"], r["hash"] = (
                prev,
                hashlib.sha256(prev.encode() + b"\n" + doc).hexdigest(),
            )
            prev = r["hash"]
    return b"".join(canonical(r) + b"\n" for r in records)


def test_tampered_copies_are_rejected(log: tuple[sa.Engine, str]) -> None:
    engine, key = log
    checker = Checker(key)
    for scope in ({"everything": True}, {"table": "t1"}):
        data = exported(engine, **scope)
        naive = data.replace(b'"payload":{"die1":1,"die2":3}', b'"payload":{"die1":1,"die2":2}')
        assert naive != data
        with pytest.raises(Rejected, match="the leaf is not the event's"):
            checker.check(naive)

        def is_b9(r: dict[str, Any]) -> bool:
            return bool(r["type"] == "BetSettled" and r["payload"]["bet_id"] == "b9")

        def to_bob(r: dict[str, Any]) -> None:
            r["payload"]["winner"] = r["payload"]["transfers"][0]["target"] = "bob"

        with pytest.raises(Rejected, match="BetSettled b9 pays player bob 800"):
            checker.check(_rehashed(data, is_b9, to_bob))

        def is_throw(r: dict[str, Any]) -> bool:
            return bool(r["type"] == "DiceThrown" and r["payload"] == {"die1": 1, "die2": 3})

        with pytest.raises(Rejected, match="decides no bet"):
            checker.check(_rehashed(data, is_throw, lambda r: r["payload"].update(die2=2)))
        with pytest.raises(Rejected, match="no closing line"):
            checker.check(data[: data.rindex(b"\n", 0, -1) + 1])
    with pytest.raises(Rejected, match="another key"):
        Checker(key.replace("+", "x", 1)).check(data)
    records = [json.loads(line) for line in data.splitlines()]
    skip = next(r for r in records if r["record"] == "skip")
    skip["hashes"][0] = "cd" * 32
    with pytest.raises(Rejected, match="closing root"):
        checker.check(b"".join(canonical(r) + b"\n" for r in records))


def test_the_cosigned_checkpoint_checks_out_and_a_stripped_or_forged_one_does_not(
    log: tuple[sa.Engine, str],
) -> None:
    """The witnesses made with the ledger's code (the file's side); the checker reads
    the cosignatures from the C2SP texts alone."""
    from tests.ledger.cosignkit import AUDITOR, CHAIR, TREASURER, cosign, sizes

    engine, key = log
    witnesses = tuple(w.key.text() for w in (TREASURER, AUDITOR, CHAIR))
    cosign(engine, sizes(engine)[-3], TREASURER, CHAIR)
    for scope in ({"everything": True}, {"table": "t1"}):
        data = exported(engine, **scope)
        assert Checker(key, witnesses, 2).check(data)
        with pytest.raises(Rejected, match="1 of the witnesses cosigned, not 2"):
            Checker(key, witnesses[1:], 2).check(data)
        records = [json.loads(line) for line in data.splitlines()]
        closing = records[-1]
        cosigned = dict(closing["cosigned"])
        del closing["cosigned"]
        stripped = b"".join(canonical(r) + b"\n" for r in records)
        assert Checker(key).check(stripped)
        with pytest.raises(Rejected, match="no cosigned checkpoint"):
            Checker(key, witnesses, 2).check(stripped)
        lines = cosigned["note"].rpartition("\n\n")[2]
        last = lines.rstrip("\n").split("\n")[-1]
        blob = bytearray(base64.b64decode(last.split(" ")[2]))
        blob[-1] ^= 1
        forged = last.rsplit(" ", 1)[0] + " " + base64.b64encode(bytes(blob)).decode()
        closing["cosigned"] = {**cosigned, "note": cosigned["note"].replace(last, forged)}
        with pytest.raises(Rejected, match="does not verify"):
            Checker(key, witnesses, 2).check(b"".join(canonical(r) + b"\n" for r in records))


def _forged(engine: sa.Engine, attack: str) -> Any:
    """The log forged by `attack` (tests.ledger.attackkit, with the bank's own key)."""
    from pathlib import Path

    from tests.ledger import attackkit
    from tests.ledger.tamperkit import Log

    log = Log(engine, 0, "", Path())
    getattr(attackkit, attack)(log)
    return log


@pytest.mark.parametrize("attack", ["clock_stepped_back", "back_dated"])
def test_a_copy_gone_back_in_time_is_rejected_where(
    log: tuple[sa.Engine, str], attack: str
) -> None:
    from tests.ledger import attackkit

    engine, key = log
    where = attackkit.stepped_back_at(_forged(engine, attack))
    with pytest.raises(Rejected, match=f"position {where} goes back in time"):
        Checker(key).check(exported(engine, everything=True))


def test_checkpoints_dated_before_their_events_are_rejected(log: tuple[sa.Engine, str]) -> None:
    engine, key = log
    _forged(engine, "checkpoints_back_dated")
    for scope in ({"everything": True}, {"table": "t1"}):  # checkpoint lines; the closing's
        with pytest.raises(Rejected, match="a checkpoint dated before its events"):
            Checker(key).check(exported(engine, **scope))


def test_a_range_file_holds_only_events_inside_its_times(log: tuple[sa.Engine, str]) -> None:
    from tests.ledger.exportkit import at

    engine, key = log
    data = exported(engine, since=at(3), until=at(9))
    assert Checker(key).check(data)["events"] > 0
    records = [json.loads(line) for line in data.splitlines()]
    records[0]["scope"]["since"] = at(4)
    with pytest.raises(Rejected, match="is outside the file's times"):
        Checker(key).check(b"".join(canonical(r) + b"\n" for r in records))
    records[0]["scope"]["since"] = "2026-11-23"
    with pytest.raises(Rejected, match="the scope's times are not written as recorded_at is"):
        Checker(key).check(b"".join(canonical(r) + b"\n" for r in records))


def test_the_checker_imports_nothing_from_ledger() -> None:
    import ast
    from pathlib import Path

    checker = (Path(__file__).parent / "independentkit.py").read_text(encoding="utf-8")
    imported = {
        name
        for statement in ast.walk(ast.parse(checker))
        if isinstance(statement, ast.Import | ast.ImportFrom)
        for name in (
            [a.name for a in statement.names]
            if isinstance(statement, ast.Import)
            else [statement.module or ""]
        )
    }
    assert imported, "the checker's imports are read"
    assert not any(
        n.startswith(("ledger", "tests", "engine.serverdice", "engine.disputes")) for n in imported
    )
    assert {n.split(".")[0] for n in imported} <= {
        "__future__", "base64", "collections", "dataclasses", "fractions", "hashlib", "hmac",
        "json", "re", "typing", "pytest", "sqlalchemy", "cryptography", "engine",
    }  # fmt: skip


def _server_log(engine: sa.Engine, logged: bool) -> Iterator[tuple[sa.Engine, str]]:
    from ledger.books.book import Book
    from ledger.service import Club
    from ledger.store.eventstore import EventStore
    from tests.ledger.exportkit import ticking
    from tests.ledger.serverdicekit import fixed_seeds, play
    from tests.signing import SIGNER

    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    with fixed_seeds():
        play(Club(Book(store)), logged=logged)
    store.close()
    yield engine, SIGNER.verifier.text()


@pytest.fixture
def server_log(engine: sa.Engine) -> Iterator[tuple[sa.Engine, str]]:
    """A server-dice table whose throws each logged their client seed first."""
    yield from _server_log(engine, logged=True)


@pytest.fixture
def unlogged_server_log(engine: sa.Engine) -> Iterator[tuple[sa.Engine, str]]:
    """The same table played as the ledger played it before it logged client seeds."""
    yield from _server_log(engine, logged=False)


def test_server_dice_are_drawn_again_from_the_revealed_seeds(
    server_log: tuple[sa.Engine, str],
) -> None:
    engine, key = server_log
    for scope in ({"everything": True}, {"table": "s1"}):
        data = exported(engine, **scope)
        records = [json.loads(line) for line in data.splitlines()]
        drawn = [r for r in records if r.get("type") == "DiceDrawn"]
        found = Checker(key).check(data)
        # Two turns ended and were drawn again; one throw of the third is on trust.
        assert found["on_trust"] == 1
        assert found["drawn"] == len(drawn) - 1 >= 2

    def is_draw(r: dict[str, Any]) -> bool:
        """The first turn's first throw (its nonce 0), whose two dice differ in this
        log (the seeds are fixed for the test: tests/ledger/test_server_dice.py)."""
        p = r.get("payload", {})
        return bool(r.get("type") == "DiceDrawn" and p["die1"] != p["die2"] and p["nonce"] == 0)

    def swapped(r: dict[str, Any]) -> None:
        r["payload"]["die1"], r["payload"]["die2"] = r["payload"]["die2"], r["payload"]["die1"]

    # Both the DiceDrawn and its DiceThrown changed alike, hashes recomputed: the total is
    # the same, so nothing but the seed can tell.
    once = _rehashed(exported(engine, table="s1"), is_draw, swapped)
    lines = [json.loads(line) for line in once.splitlines()]
    at = next(i for i, r in enumerate(lines) if is_draw(r))
    twice = _rehashed(
        once,
        lambda r: r["type"] == "DiceThrown" and r["version"] == lines[at]["version"] + 1,
        swapped,
    )
    with pytest.raises(Rejected, match="the revealed seed draws") as caught:
        Checker(key).check(twice)
    assert caught.value.line == at + 1


def test_each_throw_is_drawn_from_the_client_seed_logged_before_it(
    server_log: tuple[sa.Engine, str],
) -> None:
    engine, key = server_log
    data = exported(engine, table="s1")
    records = [json.loads(line) for line in data.splitlines()]
    given = [r for r in records if r.get("type") == "ClientSeedGiven"]
    drawn = [r for r in records if r.get("type") == "DiceDrawn"]
    assert len(given) == len(drawn) >= 3
    Checker(key).check(data)

    def line_of(pick: Any, changed: bytes) -> int:
        lines = [json.loads(line) for line in changed.splitlines()]
        return next(i for i, r in enumerate(lines, 1) if r.get("record") == "event" and pick(r))

    def first(kind: str) -> Any:
        return lambda r: r["type"] == kind and r["payload"]["nonce"] == 0

    def reseeded(r: dict[str, Any]) -> None:
        r["payload"]["client_seed"] = "mine"

    # The throw drawn from another seed than the one logged for it.
    changed = _rehashed(data, first("DiceDrawn"), reseeded)
    with pytest.raises(Rejected, match="another seed than the one logged") as caught:
        Checker(key).check(changed)
    assert caught.value.line == line_of(first("DiceDrawn"), changed)

    # The seed logged for another throw than the next.
    def renumbered(r: dict[str, Any]) -> None:
        r["payload"]["nonce"] = 1

    changed = _rehashed(data, first("ClientSeedGiven"), renumbered)
    with pytest.raises(Rejected, match="out of its turn's order") as caught:
        Checker(key).check(changed)

    # A logged seed followed by something else than its throw: the throw's DiceDrawn
    # made a DiceThrown of the same dice (as a croupier enters them).
    def entered(r: dict[str, Any]) -> None:
        p = r["payload"]
        r["type"], r["payload"] = "DiceThrown", {"die1": p["die1"], "die2": p["die2"]}

    changed = _rehashed(data, first("DiceDrawn"), entered)
    with pytest.raises(Rejected, match="after a logged seed is not its throw"):
        Checker(key).check(changed)


def test_a_table_written_before_seeds_were_logged_still_checks(
    unlogged_server_log: tuple[sa.Engine, str],
) -> None:
    engine, key = unlogged_server_log
    for scope in ({"everything": True}, {"table": "s1"}):
        data = exported(engine, **scope)
        assert b"ClientSeedGiven" not in data
        found = Checker(key).check(data)
        assert found["on_trust"] == 1 and found["drawn"] >= 2


@pytest.fixture
def disputed_log(engine: sa.Engine) -> Iterator[tuple[sa.Engine, str]]:
    from ledger.books.book import Book
    from ledger.service import Club
    from ledger.store.eventstore import EventStore
    from tests.ledger.exportkit import play, play_disputes, ticking
    from tests.signing import SIGNER

    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    store.close()
    yield engine, SIGNER.verifier.text()


def test_disputes_are_checked_and_their_adjustments_counted(
    disputed_log: tuple[sa.Engine, str],
) -> None:
    engine, key = disputed_log
    for scope in ({"everything": True}, {"table": "t3"}):
        data = exported(engine, **scope)
        found = Checker(key).check(data)
        adjusted = {a: m.get(ADJUSTED, 0) for a, m in found["money"].items() if m.get(ADJUSTED)}
        assert adjusted == {
            "player:ann": -160,  # round 1 voided: the setter's 100 and bob's 60 back
            "player:bob": 60 + 70,  # and round 2 corrected: cat's 20, and his 50 back
            "player:cat": -70,
            "setter": 100,
        }
        types = json.loads(data.splitlines()[-1])["types"]
        assert (types["DisputeOpened"], types["DisputeResolved"], types["BetAdjusted"]) == (3, 3, 3)


def test_a_reversal_that_is_not_the_bets_net_reversed_is_rejected(
    disputed_log: tuple[sa.Engine, str],
) -> None:
    engine, key = disputed_log
    data = exported(engine, table="t3")

    def is_reversal(r: dict[str, Any]) -> bool:
        return bool(r["type"] == "BetAdjusted" and r["payload"]["adjustment"] == "reversal")

    def less(r: dict[str, Any]) -> None:
        r["payload"]["transfers"][0]["amount"] -= 1

    with pytest.raises(Rejected, match="not the bet's net reversed"):
        Checker(key).check(_rehashed(data, is_reversal, less))

    def to_cat(r: dict[str, Any]) -> None:  # the setter's 100 paid to cat instead
        r["payload"]["transfers"][0]["target"] = "cat"

    with pytest.raises(Rejected, match="not the bet's net reversed"):
        Checker(key).check(_rehashed(data, is_reversal, to_cat))

    def by_cat(r: dict[str, Any]) -> bool:
        return bool(r["type"] == "DisputeOpened" and r["payload"]["claimant"] == "cat")

    with pytest.raises(Rejected, match="cat had no money in round 1"):
        Checker(key).check(_rehashed(data, by_cat, lambda r: r["payload"].update(round=1)))
