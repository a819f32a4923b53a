"""Concurrency and crashes: client processes drive a multi-worker `hazard serve` while
the server is killed with SIGKILL and restarted, then the log and read models are checked.

Run from the repository root:

    .venv/bin/python -m bench.crash                                  # SQLite, 4 x 30 s, 10 kills
    .venv/bin/python -m bench.crash --database postgres --seconds 60 --kills 20
    .venv/bin/python -m bench.crash --tables 1 --kills 0             # contention alone
    .venv/bin/python -m bench.crash --json > crash.json

A fresh database (SQLite in a temporary directory; PostgreSQL on a throwaway cluster,
tests.pgcluster, or in a new database of `--postgres-url`) gets players with deposits
and `--tables` tables with every player seated and a caster chosen. `--processes`
client processes then run closed loops over HTTP on loopback, each with its own tokens
(a setter's, a croupier's, one per player), for `--seconds`: throws and mains
(croupier), stakes, lays, covers, side bets and accepts (players), deposits and
withdrawals (setter). Every write has an Idempotency-Key, and every table write the
If-Match of the client's last GET, so writers race: on a 409 the client GETs again and
retries with the same key; on a connection error it sends the same request with the
same key and If-Match until it is answered. Meanwhile a killer SIGKILLs the server's
whole process group at random moments, `--kills` times, and restarts it on the same
database and port.

Afterwards, the server stopped, the checks:

- acknowledged: every event of every 2xx answer is in the log at its position with its
  hash, and the events under its key are exactly those (none lost, none added);
- exactly once: every event written under a client's key belongs to one answer the client
  got (a write whose answer was lost to a kill was answered by its retry), and no
  position is claimed by two keys;
- conflicts settled: every write refused 409 was answered otherwise by a retry;
- no overdraft: no account below minus its credit limit;
- `hazard verify`: positions, hash chains, the Merkle tree, the signed checkpoints;
- `hazard verify --deep`: every table's events are what the rules derive, and every
  read model equals a rebuild from the events.

The exit status is 1 if any check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
PLAYERS = ("ann", "bob", "cat", "dan")
DEPOSIT = 100_000
CLIENT_TIMEOUT_S = 30.0
ANSWER_WITHIN_S = 120.0  # a request not answered in this long (retries included) is lost
MAX_CONFLICT_RETRIES = 200


# -- the server -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    workdir: Path
    port: int
    workers: int
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        env["DATABASE_URL"] = self.url
        env["HAZARD_KEY"] = str(self.workdir / "hazard.key")
        env["TMPDIR"] = str(self.workdir)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        return env

    def start(self) -> float:
        """Start `hazard serve` and wait until it answers; the seconds that took."""
        began = time.monotonic()
        log = open(self.workdir / f"serve-{self.starts}.log", "wb")  # noqa: SIM115
        self.starts += 1
        cmd = [sys.executable, "-m", "ledger", "serve", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [*cmd, "--workers", str(self.workers)],
            cwd=self.workdir,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the killer takes it all
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"hazard serve exited: see {self.workdir}/serve-*.log")
            conn = http.client.HTTPConnection(HOST, self.port, timeout=2)
            try:
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    return time.monotonic() - began
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            time.sleep(0.05)
        raise SystemExit("hazard serve did not get ready in 60 s")

    def kill(self) -> None:
        """SIGKILL the server's whole process group: master and workers at once."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def hazard(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ledger", *args],
            cwd=self.workdir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )


# -- HTTP -----------------------------------------------------------------------------


class Http:
    """One keep-alive connection; a new one after any error."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(
        self, method: str, path: str, token: str, body: Any = None, headers: Any = None
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, headers); OSError / HTTPException when unanswered."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(HOST, self.port, timeout=CLIENT_TIMEOUT_S)
        sent = {"Authorization": f"Bearer {token}", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=sent)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise
        if response.will_close:
            self.conn.close()
            self.conn = None
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return response.status, parsed, dict(response.headers)


# -- set-up ---------------------------------------------------------------------------


def setup_token(url: str) -> str:
    """The database upgraded, and the setter's token for set-up."""
    from ledger.commands import Role
    from ledger.store import db
    from ledger.web.tokens import create

    engine = db.make_engine(url)
    try:
        db.upgrade(engine)
        return create(engine, Role.SETTER, "setup")
    finally:
        engine.dispose()


def make_tokens(url: str, processes: int, key: Path) -> list[dict[str, Any]]:
    """For each client process, its own setter's and croupier's tokens (a name is one
    live token's within its role), and the players' tokens, one each, which they share:
    made once set-up has created the players. Made as `hazard token create` makes them,
    each with its event in the log of significant events (signed by the server's key),
    so that `hazard verify --deep` finds every token accounted for."""
    from ledger.bootstrap import load_key
    from ledger.commands import Role
    from ledger.store import db
    from ledger.store.eventstore import EventStore
    from ledger.web.tokens import create

    engine = db.make_engine(url)
    store = EventStore(engine, signer=load_key(key))
    try:
        players = {p: create(store, Role.PLAYER, p) for p in PLAYERS}
        return [
            {
                "setter": create(store, Role.SETTER, f"setter-{n}"),
                "croupier": create(store, Role.CROUPIER, f"cecil-{n}"),
                "players": players,
            }
            for n in range(processes)
        ]
    finally:
        store.close()
        engine.dispose()


def set_up(port: int, token: str, tables: Sequence[str]) -> None:
    """Players with deposits (the setter's own account too), and tables with every
    player seated and a caster chosen, all through the API."""
    api = Http(port)
    n = 0

    def ok(path: str, body: Any) -> None:
        nonlocal n
        n += 1
        status, answer, _ = api.call("POST", path, token, body, {"Idempotency-Key": f"setup-{n}"})
        if status not in (200, 201):
            raise SystemExit(f"set-up: POST {path} {body}: {status} {answer}")

    for player in PLAYERS:
        ok("/players", {"name": player})
        ok(f"/players/{player}/deposits", {"amount": DEPOSIT})
    ok("/players/setter/deposits", {"amount": DEPOSIT * 10})
    for table in tables:
        ok("/tables", {"id": table, "ruleset": "english", "limits": {"min_stake": 1}})
        for player in PLAYERS:
            ok(f"/tables/{table}/seats", {"player": player})
        for die, player in zip((6, 5, 4, 3), PLAYERS, strict=False):
            ok(f"/tables/{table}/casts", {"player": player, "die": die})
    api.close()


# -- a client process -------------------------------------------------------------------


def choose(rng: random.Random, state: dict[str, Any], tokens: dict[str, Any]) -> Any:
    """A write for the table as it stands: (kind, path suffix, token, body)."""
    caster = state.get("caster")
    others = [p for p in PLAYERS if p != caster] or list(PLAYERS)
    player = rng.choice(others)
    players = tokens["players"]
    phase = state.get("phase")
    offered = [b for b in state.get("open_bets", []) if b["kind"] == "side" and b["pending"]]
    laid = [b for b in state.get("open_bets", []) if b["yes"] is None or b["no"] is None]
    roll = rng.random()
    if offered and roll < 0.12:
        bet = rng.choice(offered)
        taker = rng.choice([p for p in PLAYERS if p not in (bet["yes"], bet["no"])] or PLAYERS)
        return "accept", "side-bets/accept", players[taker], {"player": taker, "bet": bet["id"]}
    if roll < 0.24:
        totals = sorted(rng.sample(range(2, 13), rng.randint(1, 4)))
        body = {
            "player": player,
            "proposition": {"kind": "next-total", "totals": totals},
            "backs": rng.random() < 0.5,
            "stake": rng.randint(1, 50),
            "asks": rng.randint(1, 50),
        }
        return "side-bet", "side-bets", players[player], body
    if phase == "awaiting-main":
        if caster and roll < 0.42:
            return "stake", "stakes", players[caster], {"amount": rng.randint(1, 100)}
        if roll < 0.6:
            return "lay", "lays", players[player], {"player": player, "amount": rng.randint(1, 80)}
        return "main", "main", tokens["croupier"], {"main": rng.randint(5, 9)}
    if laid and caster and roll < 0.4:
        return "cover", "covers", players[caster], {}
    die1, die2 = rng.randint(1, 6), rng.randint(1, 6)
    return "throw", "throws", tokens["croupier"], {"die1": die1, "die2": die2}


def client(
    number: int,
    port: int,
    tokens: dict[str, Any],
    tables: Sequence[str],
    seed: int,
    stop: Any,
    out: Any,
) -> None:
    """A closed loop of writes until `stop` is set; its record put on `out`."""
    rng = random.Random(seed * 1000 + number)
    api = Http(port)
    statuses: Counter[str] = Counter()
    record: dict[str, Any] = {
        "acks": [],  # every 2xx answer: key, status, positions, hashes
        "conflicts": 0,  # 409s answered
        "settled": 0,  # writes refused 409 and then answered otherwise under the same key
        "unsettled": [],  # writes that were never answered but 409
        "connection_errors": 0,
        "cut_off": 0,  # writes whose answer a kill cut off, answered by a retry
        "cut_off_acknowledged": 0,  # ... with 2xx (the first attempt's, or the retry's)
        "lost": [],  # requests never answered at all
    }
    sequence = 0

    cut = False

    def send(method: str, path: str, token: str, body: Any, headers: Any) -> Any:
        """The same request until it is answered (across kills)."""
        nonlocal cut
        began = time.monotonic()
        while True:
            try:
                answer = api.call(method, path, token, body, headers)
            except (OSError, http.client.HTTPException):
                record["connection_errors"] += 1
                cut = method == "POST"
                if time.monotonic() - began > ANSWER_WITHIN_S:
                    return None
                time.sleep(0.05)
                continue
            statuses[str(answer[0])] += 1
            return answer

    def write(method: str, path: str, token: str, body: Any, table: str | None, tag: str) -> None:
        nonlocal sequence
        sequence += 1
        key = f"crash-{seed}-{number}-{sequence}"
        headers = {"Idempotency-Key": key}
        if table is not None:
            headers["If-Match"] = version[table]
        refused = 0
        nonlocal cut
        cut = False
        while True:
            answer = send(method, path, token, body, headers)
            if answer is None:
                record["lost"].append({"key": key, "path": path, "body": body})
                return
            status, got, _ = answer
            if status == 409 and table is not None:
                record["conflicts"] += 1
                refused += 1
                if refused > MAX_CONFLICT_RETRIES:
                    record["unsettled"].append({"key": key, "path": path})
                    return
                read(table)  # the version moved on: read it again, retry the same key
                headers["If-Match"] = version[table]
                continue
            if refused:
                record["settled"] += 1
            if cut:
                record["cut_off"] += 1
                record["cut_off_acknowledged"] += 200 <= status < 300
            if 200 <= status < 300:
                receipt = (got or {}).get("receipt") or {}
                record["acks"].append(
                    {
                        "key": key,
                        "what": tag,
                        "positions": receipt.get("positions", []),
                        "hashes": {str(e["position"]): e["hash"] for e in got["events"]},
                    }
                )
            return

    version: dict[str, str] = {}
    states: dict[str, Any] = {}

    def read(table: str) -> None:
        answer = send("GET", f"/tables/{table}", tokens["croupier"], None, None)
        if answer is not None and answer[0] == 200:
            version[table] = answer[2].get("ETag", "")
            states[table] = answer[1]

    while not stop.is_set():
        table = rng.choice(tables)
        if rng.random() < 0.12:
            player = rng.choice(PLAYERS)
            kind = "deposit" if rng.random() < 0.5 else "withdrawal"
            path = f"/players/{player}/{kind}s"
            write("POST", path, tokens["setter"], {"amount": rng.randint(1, 200)}, None, kind)
            continue
        read(table)
        if table not in states:
            continue
        tag, rule, token, body = choose(rng, states[table], tokens)
        write("POST", f"/tables/{table}/{rule}", token, body, table, tag)
    api.close()
    record["statuses"] = dict(statuses)
    out.put(record)


# -- the killer ------------------------------------------------------------------------


def killer(
    server: Server, kills: int, seconds: float, rng: random.Random, into: dict[str, Any]
) -> None:
    """SIGKILL and restart the server `kills` times at random over about `seconds`."""
    gap = max(0.2, seconds / max(kills, 1) - 1.0)
    into["restart_seconds"] = []
    for _ in range(kills):
        time.sleep(rng.uniform(0.1, 2 * gap))
        server.kill()
        into["kills"] = into.get("kills", 0) + 1
        into["restart_seconds"].append(round(server.start(), 2))


# -- the checks ------------------------------------------------------------------------


def check_log(url: str, acks: list[dict[str, Any]]) -> dict[str, Any]:
    """Every acknowledged event in the log once, at its position with its hash; every
    event of the log written by exactly one keyed command (every write here has a key;
    a write's seal is its own, at its checkpoint's size), and every client's command
    acknowledged to it; no account overdrawn."""
    import sqlalchemy as sa

    from ledger.books.accounts import CASH
    from ledger.store import db
    from ledger.store.log.checkpoint import Checkpoint, parse_note

    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT position, hash FROM events")).all()
            # The log of significant events is written by no client's command (the
            # server's start, the tokens made, counts of refused writes), each such write
            # ended by its seal.
            own = conn.execute(
                sa.text(
                    "SELECT e.position FROM events e WHERE e.stream = 'club:significant' "
                    "OR (e.type = 'LogSealed' AND EXISTS (SELECT 1 FROM events s WHERE "
                    "s.position = e.position - 1 AND s.stream = 'club:significant'))"
                )
            ).all()
            commands = conn.execute(sa.text("SELECT idempotency_key, response FROM commands")).all()
            accounts = conn.execute(
                sa.text("SELECT account, balance, credit_limit FROM accounts")
            ).all()
    finally:
        engine.dispose()
    hashes = {int(position): digest for position, digest in rows}
    # What each key wrote, by the answer the log keeps under it (a scoped key: the
    # token's id, a colon, the client's key).
    kept: dict[str, set[int]] = {}
    writer: dict[int, str] = {}
    written_twice: list[Any] = []
    for scoped, response in commands:
        key = str(scoped).split(":", 1)[-1]
        receipt = json.loads(response).get("receipt") or {}
        positions = set(receipt.get("positions", []))
        kept[key] = positions
        # The seal that ends the write, the last leaf of the checkpoint it signed.
        seal = {Checkpoint.parse(parse_note(receipt["checkpoint"])[0]).size} if receipt else set()
        for position in positions | seal:
            if writer.setdefault(position, key) != key:
                written_twice.append({"position": position, "keys": [writer[position], key]})
    significant = {int(position) for (position,) in own}
    unwritten = sorted(set(hashes) - set(writer) - significant)  # in the log, no command's
    missing: list[Any] = []
    wrong_hash: list[Any] = []
    answered: dict[str, set[int]] = {}
    for ack in acks:
        positions = set(ack["positions"])
        if answered.setdefault(ack["key"], positions) != positions:
            written_twice.append({"key": ack["key"], "answers": "differ"})
        if kept.get(ack["key"]) != positions:
            missing.append({"key": ack["key"], "answer": sorted(positions)})
        for position in positions:
            if position not in hashes:
                missing.append({"key": ack["key"], "position": position})
            elif ack["hashes"].get(str(position), hashes[position]) != hashes[position]:
                wrong_hash.append({"key": ack["key"], "position": position})
    unacknowledged = sorted(k for k in kept if k.startswith("crash-") and k not in answered)
    overdrawn = [
        {"account": a, "balance": int(b), "credit_limit": int(c)}
        for a, b, c in accounts
        # the club's cash account is the world outside: deposits take it below zero
        if a != CASH and not str(a).startswith("escrow:") and int(b) < -int(c)
    ]
    return {
        "events_in_log": len(hashes),
        "events_acknowledged": sum(len(p) for p in answered.values()),
        "writes_acknowledged": len(answered),
        "missing": missing[:20],
        "wrong_hash": wrong_hash[:20],
        "written_twice": written_twice[:20],
        "written_by_no_command": unwritten[:20],
        "written_unacknowledged": unacknowledged[:20],
        "overdrawn": overdrawn[:20],
        "accounts": len(accounts),
    }


# -- a run -----------------------------------------------------------------------------


@contextlib.contextmanager
def database(kind: str, workdir: Path, postgres_url: str | None) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'crash.sqlite3'}"
        return
    import sqlalchemy as sa

    with contextlib.ExitStack() as stack:
        if postgres_url is None:
            sys.path.insert(0, str(REPO))
            from tests import pgcluster

            sock = stack.enter_context(pgcluster.temporary_cluster({}, workdir))
            postgres_url = pgcluster.url(sock)
        name = f"crash_{os.getpid()}_{int(time.time() * 1000)}"
        admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield postgres_url.replace("/postgres?", f"/{name}?")
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.dispose()


def collect(out: Any, clients: Sequence[Any]) -> list[dict[str, Any]]:
    """Every client's record; an error at once if a client died without one."""
    import queue

    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + ANSWER_WITHIN_S + 60
    while len(records) < len(clients):
        try:
            records.append(out.get(timeout=1))
        except queue.Empty:
            dead = [p.exitcode for p in clients if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                raise SystemExit(f"a client process failed (exit codes {dead})") from None
    return records


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    tables = [f"t{i}" for i in range(args.tables)]
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-crash-")))
        if args.database == "postgres":
            # the cluster's directory must be one the postgres user can enter
            os.chmod(workdir, 0o755)
        url = stack.enter_context(database(args.database, workdir, args.postgres_url))
        setup = setup_token(url)
        server = Server(url, workdir, free_port(), args.workers)
        server.start()
        stack.callback(server.stop)
        set_up(server.port, setup, tables)
        tokens = make_tokens(url, args.processes, workdir / "hazard.key")

        context = multiprocessing.get_context("spawn")
        stop, out = context.Event(), context.Queue()
        clients = [
            context.Process(
                target=client,
                args=(n, server.port, tokens[n], tables, args.seed, stop, out),
                daemon=True,
            )
            for n in range(args.processes)
        ]
        began = time.monotonic()
        for proc in clients:
            proc.start()
        killed: dict[str, Any] = {"kills": 0}
        kill_thread = threading.Thread(
            target=killer, args=(server, args.kills, args.seconds, rng, killed), daemon=True
        )
        kill_thread.start()
        time.sleep(args.seconds)
        kill_thread.join()  # every kill made, and the server up again
        stop.set()
        records = collect(out, clients)
        for proc in clients:
            proc.join(timeout=30)
        elapsed = time.monotonic() - began
        server.stop()

        acks = [a for r in records for a in r["acks"]]
        statuses: Counter[str] = Counter()
        for r in records:
            statuses.update(r["statuses"])
        log = check_log(url, acks)
        verify = server.hazard("verify")
        deep = server.hazard("verify", "--deep")

    unsettled = [u for r in records for u in r["unsettled"]]
    lost = [x for r in records for x in r["lost"]]
    checks = {
        "every acknowledged event present, same position and hash": not (
            log["missing"] or log["wrong_hash"]
        ),
        "every event written once, by one acknowledged write": not (
            log["written_twice"] or log["written_by_no_command"] or log["written_unacknowledged"]
        ),
        "every request answered": not lost,
        "every 409 settled by a retry with the same key": not unsettled,
        "no account overdrawn": not log["overdrawn"],
        "hazard verify (chain, tree, checkpoints)": verify.returncode == 0,
        "hazard verify --deep (the rules hold, read models equal a rebuild)": (
            deep.returncode == 0
        ),
    }
    return {
        "database": args.database,
        "processes": args.processes,
        "workers": args.workers,
        "tables": args.tables,
        "seconds": round(elapsed, 1),
        "seed": args.seed,
        "kills_asked": args.kills,
        "kills_survived": killed.get("kills", 0),
        "restart_seconds": killed.get("restart_seconds", []),
        "requests_by_status": dict(sorted(statuses.items())),
        "requests_answered": sum(statuses.values()),
        "writes_by_kind": dict(Counter(a["what"] for a in acks)),
        "conflicts": sum(r["conflicts"] for r in records),
        "conflicts_settled_by_retry": sum(r["settled"] for r in records),
        "connection_errors": sum(r["connection_errors"] for r in records),
        "writes_cut_off_by_a_kill": sum(r["cut_off"] for r in records),
        "writes_cut_off_then_acknowledged": sum(r["cut_off_acknowledged"] for r in records),
        "log": log,
        "unsettled": unsettled[:20],
        "lost": lost[:20],
        "verify": (verify.stdout + verify.stderr).strip().splitlines()[-3:],
        "verify_deep": (deep.stdout + deep.stderr).strip().splitlines()[-3:],
        "checks": checks,
        "passed": all(checks.values()),
    }


def report(result: dict[str, Any]) -> str:
    r = result
    lines = [
        f"bench.crash on {r['database']}: {r['processes']} client processes, "
        f"hazard serve --workers {r['workers']}, {r['tables']} tables, {r['seconds']} s, "
        f"seed {r['seed']}",
        f"kills survived: {r['kills_survived']} of {r['kills_asked']}"
        + (
            f" (restart {min(r['restart_seconds'])}-{max(r['restart_seconds'])} s)"
            if r["restart_seconds"]
            else ""
        ),
        f"requests answered: {r['requests_answered']}  by status: "
        + ", ".join(f"{k}: {v}" for k, v in r["requests_by_status"].items()),
        "writes acknowledged by kind: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(r["writes_by_kind"].items())),
        f"conflicts (409): {r['conflicts']}, writes settled by a retry with the same key: "
        f"{r['conflicts_settled_by_retry']}",
        f"connection errors (retried): {r['connection_errors']}; writes cut off by a kill "
        f"and sent again: {r['writes_cut_off_by_a_kill']}, "
        f"{r['writes_cut_off_then_acknowledged']} of them then answered 2xx",
        f"events in the log: {r['log']['events_in_log']}, acknowledged to clients: "
        f"{r['log']['events_acknowledged']} in {r['log']['writes_acknowledged']} writes",
        "checks:",
    ]
    lines += [f"  {'PASS' if ok else 'FAIL'}  {name}" for name, ok in r["checks"].items()]
    if not r["passed"]:
        detail = {k: v for k, v in r["log"].items() if isinstance(v, list) and v}
        detail.update({k: r[k] for k in ("unsettled", "lost", "verify", "verify_deep") if r[k]})
        lines.append("details: " + json.dumps(detail, indent=2))
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--postgres-url", help="a PostgreSQL server to make the database in")
    p.add_argument("--processes", type=int, default=4, help="client processes (4)")
    p.add_argument("--workers", type=int, default=2, help="hazard serve's workers (2)")
    p.add_argument("--tables", type=int, default=2, help="tables the clients share (2)")
    p.add_argument("--seconds", type=float, default=30.0, help="how long the clients run (30)")
    p.add_argument("--kills", type=int, default=10, help="SIGKILLs of the server (10)")
    p.add_argument("--seed", type=int, default=15, help="seed of the clients and killer")
    p.add_argument("--json", action="store_true", help="the result as JSON on stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else report(result), flush=True)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
