"""What the watcher's tests share: a club's log with its receipts, three witnesses and
the reader's policy, cosignatures, a history rewritten with the bank's own key, a
tlog-proof made from the log, and the ledger's anonymous reads over HTTP.

`ledger_serving` stands in for the ledger's side of issue 24 (its endpoints are built
beside the watcher, on another branch): it serves exactly the contract the two were
built to (`GET /log/cosigned`, `/log/checkpoint`, `/log/checkpoints/{size}`,
`/log/proofs/consistency`, `/log/proofs/tlog-proof`, `GET` and `POST /log/gossip`),
answered by the store's own functions (the tlog-proof by the one the ledger serves,
ledger.store.log.tlogproof.of), without the tokens and roles in front of them. Once
the ledger serves them, `hazard serve` can take its place.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import sqlalchemy as sa

from ledger.books.book import Book
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, proofs, tlogproof, tree, witnessed
from ledger.store.log.checkpoint import Checkpoint, parse_note, sign_checkpoint
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import Signer
from ledger.store.vocabulary import Deposited
from tests.ledger.tamperkit import multiplied, rehash_stream, reseal, set_row
from tests.signing import SIGNER

TREASURER = Cosigner("treasurer.example/w", hashlib.sha256(b"treasurer").digest())
AUDITOR = Cosigner("auditor.example/w", hashlib.sha256(b"auditor").digest())
CHAIR = Cosigner("chair.example/w", hashlib.sha256(b"chair").digest())
AT = "2026-11-26T15:00:00Z"


def policy_text(quorum: str = "2", log: str | None = None) -> str:
    """The reader's policy: the log's key, three witnesses, and `quorum` of them."""
    return (
        f"log {log or SIGNER.verifier.text()}\n"
        f"witness treasurer {TREASURER.key.text()}\n"
        f"witness auditor {AUDITOR.key.text()}\n"
        f"witness chair {CHAIR.key.text()}\n"
        f"group members {quorum} treasurer auditor chair\n"
        "quorum members\n"
    )


@dataclass(frozen=True)
class Written:
    """One write of the evening, as its receipt tells it: the position of its one
    event (a deposit, or ann's account opened) and the checkpoint it signed, whose size
    is the position of the write's seal, the event after it."""

    position: int
    note: str

    @property
    def size(self) -> int:
        return Checkpoint.parse(parse_note(self.note)[0]).size


def as_written(answer: dict[str, Any]) -> Written:
    """A one-event write's answer, as its receipt tells it."""
    (position,) = answer["receipt"]["positions"]
    return Written(position, answer["receipt"]["checkpoint"])


def evening(store: EventStore, writes: int) -> list[Written]:
    """`writes` writes (ann's account opened, then her deposits of 10, 20, ...), one
    event each, as written: the evening's nth write is `evening(...)[n - 1]`."""
    club = Club(Book(store))
    written = [as_written(club.create_player("ann", "setter"))]
    for i in range(1, writes):
        written.append(as_written(club.account_command("ann", Deposited, 10 * i, "setter")))
    return written


def more(store: EventStore, writes: int) -> list[Written]:
    """`writes` more deposits, as written. The service restarted first, as after a
    rewrite it would be: the tree's right edge and the heads read again."""
    store.frontier, store.heads = None, None
    club = Club(Book(store))
    return [as_written(club.account_command("ann", Deposited, 7, "setter")) for _ in range(writes)]


def note_of(engine: sa.Engine, size: int) -> str:
    with engine.connect() as conn:
        return proofs.checkpoint(conn, size).note


def cosign(engine: sa.Engine, size: int, *witnesses: Cosigner, at: int = 1_790_000_000) -> str:
    """The stored checkpoint of `size` cosigned by `witnesses`; its cosigned note."""
    text, _ = parse_note(note_of(engine, size))
    with engine.begin() as conn:
        for witness in witnesses:
            witnessed.record(conn, size, witness.key, witness.cosign(text, at), AT)
    with engine.connect() as conn:
        found = witnessed.at(conn, size)
    assert found is not None
    return found.note


@contextmanager
def unguarded(engine: sa.Engine) -> Iterator[sa.Connection]:
    """What whoever holds the database and the key can do: switch off the append-only
    triggers of the log, its checkpoints and their cosignatures, and change them."""
    tables = ("events", "tree_hashes", "checkpoints", "cosignatures", "heads_log", "clock_holds")
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:  # outside a transaction, or SQLite ignores it
            conn.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        with conn.begin():
            for table in tables:
                if sqlite:
                    for what in ("update", "delete"):
                        conn.exec_driver_sql(f"DROP TRIGGER {table}_refuse_{what}")
                else:
                    conn.exec_driver_sql(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
            yield conn
        conn.invalidate()  # not back into the pool without its triggers


def rewrite(engine: sa.Engine, position: int, signer: Signer = SIGNER) -> None:
    """The deposit at `position` multiplied by a hundred, its stream's chain, every
    seal and the heads they commit, the tree and every checkpoint made again and signed
    with `signer` (the bank's own key), and every cosignature dropped: a consistent
    rewrite, with nothing stored left to tell."""
    with unguarded(engine) as conn:
        row = conn.execute(
            sa.text("SELECT stream, version, payload FROM events WHERE position = :p"),
            {"p": position},
        ).one()
        set_row(conn, position, payload=multiplied(row.payload))
        rehash_stream(conn, row.stream, row.version)
        reseal(conn)  # every seal made again, as the bank's code makes one
        issued = conn.execute(
            sa.text("SELECT size, issued_at FROM checkpoints ORDER BY size")
        ).all()
        for table in ("cosignatures", "checkpoints", "tree_hashes"):
            conn.execute(sa.text(f"DELETE FROM {table}"))
        tree.build(conn)
        for size, issued_at in issued:
            tree.issue(conn, signer, size, merkle.tree_hash(size, tree.reader(conn)), issued_at)


def cut(engine: sa.Engine, size: int) -> None:
    """The log as a backup cut at `size` restores it: the events past it gone, and
    with them their tree's hashes, their seals' heads, the checkpoints past it and their
    cosignatures. The receipts handed out for those sizes stay where their holders keep
    them."""
    with unguarded(engine) as conn:
        for table, column in (("cosignatures", "size"), ("checkpoints", "size"),
                              ("heads_log", "position"), ("clock_holds", "position"),
                              ("events", "position")):  # fmt: skip
            conn.execute(sa.text(f"DELETE FROM {table} WHERE {column} > :n"), {"n": size})
        conn.execute(sa.text("DELETE FROM tree_hashes"))
        tree.build(conn)


def lose_checkpoint(engine: sa.Engine, size: int) -> None:
    """The checkpoint of `size` gone from a log that kept its events: a backup with
    that checkpoint's line taken out, restored."""
    with unguarded(engine) as conn:
        for table in ("cosignatures", "checkpoints"):
            conn.execute(sa.text(f"DELETE FROM {table} WHERE size = :n"), {"n": size})


def forged(size: int, seed: bytes = b"other") -> str:
    """A checkpoint of `size` over another tree, signed with the bank's key."""
    root = hashlib.sha256(seed).digest()
    return sign_checkpoint(Checkpoint(SIGNER.name, size, root), SIGNER)


def tlog_proof(engine: sa.Engine, position: int) -> str:
    """The tlog-proof of the event at `position`, as the ledger serves it."""
    with engine.connect() as conn:
        return tlogproof.of(conn, position)


def changed_extra(proof: str, old: bytes, new: bytes) -> str:
    """A tlog-proof whose event (its extra line) says `new` where it said `old`."""
    lines = proof.split("\n")
    frame = base64.b64decode(lines[1].removeprefix("extra "))
    assert old in frame
    lines[1] = "extra " + base64.b64encode(frame.replace(old, new)).decode()
    return "\n".join(lines)


# -- the ledger's anonymous reads, as the contract has them -----------------------------


class _Ledger(BaseHTTPRequestHandler):
    engine: sa.Engine
    requests: list[str]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, body: Any, kind: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.requests.append(self.path)
        url = urllib.parse.urlsplit(self.path)
        token = self.headers.get("Authorization")
        if (url.path == "/log/proofs/tlog-proof") != (token is not None):
            # A tlog-proof carries its event, and takes the token the event does; the
            # watcher sends none, so that the ledger cannot tell who asks.
            return self._answer(401 if token is None else 400, {"detail": "token or not"})
        query = {k: int(v[0]) for k, v in urllib.parse.parse_qs(url.query).items()}
        try:
            with self.engine.connect() as conn:
                self._get(conn, url.path, query)
        except proofs.ProofRefused as e:
            self._answer(404, {"detail": str(e)})

    def _get(self, conn: sa.Connection, path: str, query: dict[str, int]) -> None:
        if path == "/log/cosigned":
            found = witnessed.at(conn, query["size"]) if "size" in query else witnessed.newest(conn)
            if found is None:
                return self._answer(404, {"detail": "no checkpoint is cosigned yet"})
            text, _ = parse_note(found.note)
            return self._answer(200, {
                "size": found.size,
                "root": Checkpoint.parse(text).root.hex(),
                "note": found.note,
                "witnesses": [{"key": k, "cosigned_at": t} for k, t in found.witnesses.items()],
            })  # fmt: skip
        if path == "/log/checkpoint":
            return self._answer(200, proofs.latest(conn).view())
        if path.startswith("/log/checkpoints/"):
            return self._answer(200, proofs.checkpoint(conn, int(path.rsplit("/", 1)[1])).view())
        if path == "/log/proofs/consistency":
            found = proofs.consistency(conn, query["from"], query.get("to"))
            return self._answer(200, {
                "from": found.old.size, "to": found.new.size,
                "proof": [h.hex() for h in found.proof],
                "old": found.old.view(), "new": found.new.view(),
            })  # fmt: skip
        if path == "/log/proofs/tlog-proof":
            text = tlog_proof(self.engine, query["position"])
            return self._answer(200, text, "text/plain; charset=utf-8")
        if path == "/log/gossip":
            limit = query.get("limit", 100)
            found = witnessed.reports(conn, query.get("after", 0), limit)
            following = found[-1].id if len(found) == limit else None
            return self._answer(200, {"items": [r.view() for r in found], "next_after": following})
        return self._answer(404, {"detail": f"no {path} here"})

    def do_POST(self) -> None:
        self.requests.append(self.path)
        if self.headers.get("Authorization") is not None:
            return self._answer(400, {"detail": "a watcher reports without a token"})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.engine.begin() as conn:
            report, new = witnessed.report(
                conn, body["note"], SIGNER.verifier, body.get("reported_by"), at
            )
        self._answer(201 if new else 200, {"report": report.view(), "new": new})


@contextmanager
def ledger_serving(engine: sa.Engine) -> Iterator[tuple[str, list[str]]]:
    """The ledger's anonymous reads of `engine`'s log over HTTP: its base URL, and the
    paths asked for."""
    asked: list[str] = []
    handler = type("Ledger", (_Ledger,), {"engine": engine, "requests": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
