"""An export made once and read as records, to tamper with as a forger would: shared by
the offline check's tests and `hazard verify FILE`'s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from hashlib import sha256
from typing import Any

import pytest

from ledger.books.book import Book
from ledger.exports import offline
from ledger.exports.offline.events import NOT_HASHED
from ledger.exports.scope import Scope, scope_of
from ledger.service import Club
from ledger.store import codec, db
from ledger.store.eventstore import EventStore
from tests.ledger.exportkit import at, export, play, ticking
from tests.signing import SIGNER, VERIFIER


def exported_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    """The `files` fixture: the whole log, table t1, a range and bob's statement, exported from one
    SQLite log (the file is what is tampered with: the database it came from does not
    matter here)."""
    path = tmp_path_factory.mktemp("tamper") / "hazard.sqlite3"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    scopes: dict[str, Scope] = {
        "all": scope_of(everything=True),
        "t1": scope_of(table="t1"),
        "range": scope_of(since=at(31), until=at(40)),
        "bob": scope_of(player="bob"),
    }
    yield {name: export(engine, scope) for name, scope in scopes.items()}
    store.close()
    engine.dispose()


Records = list[dict[str, Any]]


def records(data: bytes) -> Records:
    return [json.loads(line) for line in data.splitlines()]


def encoded(recs: Records) -> list[bytes]:
    return [codec.canonical(r) + b"\n" for r in recs]


def line_of(recs: Records, **where: Any) -> int:
    """The line number (from 1) of the first event with these fields."""
    for number, r in enumerate(recs, 1):
        if r.get("record") == "event" and all(
            r.get(k) == v or r["payload"].get(k) == v for k, v in where.items()
        ):
            return number
    raise LookupError(where)


def document(r: dict[str, Any]) -> bytes:
    return codec.canonical({k: v for k, v in r.items() if k not in NOT_HASHED})


def rehash(recs: Records, number: int) -> None:
    """Recompute the leaf of the event on line `number`, and the chain from it to its
    stream's end, as a forger who knows the format would."""
    changed = recs[number - 1]
    changed["leaf"] = sha256(b"\x00" + document(changed)).hexdigest()
    previous = changed["prev_hash"]
    for r in recs[number - 1 :]:
        if r.get("record") == "event" and r["stream"] == changed["stream"]:
            r["prev_hash"] = previous
            r["hash"] = codec.chain_hash(previous, document(r))
            previous = r["hash"]


def fails(lines: list[bytes], key: Any = VERIFIER) -> offline.Disagreement:
    with pytest.raises(offline.Disagreement) as caught:
        offline.verify(lines, key)
    return caught.value


def settled(recs: Records, bet: str) -> int:
    return line_of(recs, type="BetSettled", bet_id=bet)
