"""A bare Flask app on the same SQLite database: the floor `bench.api` measures against.

gunicorn serves it as `bench.bare:app`, on DATABASE_URL (sqlite:///path), with the same
workers, worker class and threads as the service. No SQLAlchemy, no token, no engine:

  GET  /bare/settlements?table=<t>&limit=50   the rows the service's settlement query
       /bare/settlements?player=<p>&limit=50  reads (same table, same filter, same
                                              order and page), by the stdlib sqlite3,
                                              returned by jsonify
  POST /bare/throws {die1, die2}              one durable insert: BEGIN IMMEDIATE,
                                              INSERT into a scratch table, COMMIT

Each thread keeps one connection, set up as ledger.store.db sets up the service's: WAL,
synchronous=FULL (fsync on every commit), the same busy timeout, foreign keys on, and
transactions begun by hand. The scratch table `bare_throws` is made by `bench.api`
before the server starts (`prepare`), so that no worker races to make it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any

from flask import Flask, jsonify, request

PAGE_MAX = 200
BUSY_TIMEOUT_MS = 10_000
"""As ledger.store.db.BUSY_TIMEOUT_MS (LOCK_TIMEOUT_S = 10)."""

SCRATCH = """CREATE TABLE IF NOT EXISTS bare_throws (
    id INTEGER PRIMARY KEY,
    tbl TEXT NOT NULL,
    die1 INTEGER NOT NULL,
    die2 INTEGER NOT NULL,
    recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)"""

BY_TABLE = "SELECT * FROM settlements WHERE stream = ? AND position > 0 ORDER BY position LIMIT ?"
BY_PLAYER = (
    "SELECT s.* FROM settlements AS s JOIN settlement_parties AS p"
    " ON p.position = s.position WHERE p.party = ? AND p.position > 0"
    " ORDER BY p.position LIMIT ?"
)


def _path() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("sqlite:///"):
        raise RuntimeError(f"bench.bare serves SQLite only, not {url!r}")
    return url.removeprefix("sqlite:///")


def prepare(path: str) -> None:
    """The scratch table, in the database about to be served."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(SCRATCH)
        con.commit()
    finally:
        con.close()


_local = threading.local()


def _connection() -> sqlite3.Connection:
    con: sqlite3.Connection | None = getattr(_local, "con", None)
    if con is None:
        con = sqlite3.connect(_path(), isolation_level=None, check_same_thread=False)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        con.execute("PRAGMA foreign_keys=ON")
        _local.con = con
    return con


app = Flask(__name__)


@app.get("/readyz")
def readyz() -> Any:
    return jsonify({"status": "ready"})


@app.get("/bare/settlements")
def settlements() -> Any:
    limit = min(int(request.args.get("limit", 50)), PAGE_MAX)
    table, player = request.args.get("table"), request.args.get("player")
    if table is not None:
        sql, key = BY_TABLE, "table:" + table
    elif player is not None:
        sql, key = BY_PLAYER, "player:" + player
    else:
        return jsonify({"error": "table or player"}), 400
    con = _connection()
    con.execute("BEGIN")
    try:
        rows = con.execute(sql, (key, limit)).fetchall()
    finally:
        con.execute("COMMIT")
    return jsonify({"items": [dict(row) for row in rows]})


@app.post("/bare/throws")
def throws() -> Any:
    body = request.get_json()
    table = str(request.args.get("table", "t"))
    con = _connection()
    con.execute("BEGIN IMMEDIATE")
    try:
        cur = con.execute(
            "INSERT INTO bare_throws (tbl, die1, die2) VALUES (?, ?, ?)",
            (table, int(body["die1"]), int(body["die2"])),
        )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return jsonify({"id": cur.lastrowid}), 201
