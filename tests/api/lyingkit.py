"""A bank that lies, and who catches it (docs/reliability.md, "A bank that lies").

The club's evening (tests.ledger.tamperkit.play, on attackkit's clock) is played once
per database and pushed by the ledger's own pusher (ledger.pusher) to two real
witnesses (ledger.witness: each with its key and its state in a directory of its own,
its app served over HTTP in a thread of the test); then `hazard watch` runs once
against it and keeps what it verified. That is the honest evening.

Each attack (tests.ledger.attackkit) is made once per database, with the bank's own
key, on a copy of it (a file copied, or CREATE DATABASE ... TEMPLATE), and the evening
goes on with a few more writes, as a bank goes on trading; each test then takes a copy
of that, with copies of the witnesses' and the watcher's files as the honest evening
left them. No player's receipt is kept anywhere.

    evening = Evening.play(Databases(where, server))   # evening_fixture's
    scene = evening.scene(tmp_path, "the consistent rewrite")
    with scene.witnesses_serving() as policy:
        outcomes = scene.push(policy)
    scene.watch()                                # hazard watch, as the watcher ran it
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result
from flask import Flask
from werkzeug.serving import make_server

from ledger.api import create_app
from ledger.books.book import Book
from ledger.cli import main
from ledger.pusher import Outcome, Pusher
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import proofs
from ledger.store.log.policy import Policy
from ledger.store.vocabulary import Deposited
from ledger.witness import home
from ledger.witness.app import create_app as witness_app
from ledger.witness.cosigning import Witness
from ledger.witness.state import origin_hash
from tests.ledger import attackkit
from tests.ledger.cosignkit import unguard_cosignatures
from tests.ledger.tamperkit import Log, play
from tests.signing import ORIGIN, SIGNER, VERIFIER

WITNESSES = {"treasurer": "treasurer.example/witness", "auditor": "auditor.example/witness"}
"""The club's two witnesses, by their names in the policy: their own names."""
MORE = 2
"""Writes the bank makes after an attack: the evening goes on, on the rewritten log."""
LATER = attackkit.EVENING + timedelta(hours=1)
"""When the evening goes on."""
INSIDERS = ("keeps the cosignatures", "drops the cosignatures")
"""What the insider does with the cosignatures the witnesses returned for the honest
log: leaves the rows (they no longer verify over the checkpoints signed again), or
deletes them, so that nothing stored says the witnesses saw another tree."""

_names = itertools.count()


def policy_text(keys: dict[str, str], urls: dict[str, str] | None = None) -> str:
    """The club's policy (C2SP tlog-policy): the log's key, the two witnesses (with
    the URLs in `urls` of those the ledger is to push to), and one of them, at least,
    to cosign. The readers' (`hazard watch`, `hazard verify`) is the same, without URLs."""
    lines = [f"log {VERIFIER.text()}"]
    for name, key in keys.items():
        url = f" {urls[name]}" if urls and name in urls else ""
        lines.append(f"witness {name} {key}{url}")
    lines += [f"group club 1 {' '.join(keys)}", "quorum club"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def serving(app: WSGIApplication) -> Iterator[str]:
    """`app` over HTTP on a port of its own, in threads of the test: its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def hazard(*args: str, url: str | None = None) -> Result:
    """A `hazard` command, on the database at `url` when given."""
    env = {"DATABASE_URL": url} if url is not None else {}
    return CliRunner().invoke(main, list(args), env=env)


# -- where the databases are ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Databases:
    """Where this database kind's copies go: a folder of SQLite files, or the session's
    PostgreSQL cluster (`server`, its admin URL)."""

    where: Path
    server: str | None = None

    def new(self) -> str:
        """A new, empty database's URL."""
        if self.server is None:
            return f"sqlite:///{self.where / f'ledger-{next(_names)}.sqlite3'}"
        name = f"lying_{os.getpid()}_{next(_names)}"
        self._admin(f'CREATE DATABASE "{name}"')
        return self.server.replace("/postgres?", f"/{name}?")

    def copy(self, url: str) -> str:
        """A copy of the database at `url`, which nothing may hold open meanwhile."""
        if self.server is None:
            to = self.where / f"ledger-{next(_names)}.sqlite3"
            shutil.copyfile(sa.make_url(url).database or "", to)
            return f"sqlite:///{to}"
        name = f"lying_{os.getpid()}_{next(_names)}"
        self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{sa.make_url(url).database}"')
        return self.server.replace("/postgres?", f"/{name}?")

    def drop(self, url: str) -> None:
        if self.server is not None:
            self._admin(f'DROP DATABASE IF EXISTS "{sa.make_url(url).database}" WITH (FORCE)')

    def _admin(self, statement: str) -> None:
        assert self.server is not None
        admin = sa.create_engine(self.server, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
        with admin.connect() as conn:
            conn.exec_driver_sql(statement)
        admin.dispose()


# -- the honest evening, and the attacks made on copies of it ---------------------------


def evening_fixture(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Evening]:
    """What a module's `evening` fixture (module-scoped, on `sqlite` and `postgres`)
    yields: the honest evening on that database, closed after."""
    server = request.getfixturevalue("postgres_server") if request.param == "postgres" else None
    played = Evening.play(Databases(tmp_path_factory.mktemp(f"evening-{request.param}"), server))
    yield played
    played.close()


@dataclasses.dataclass
class Evening:
    """The honest evening on one database kind, what saw it, and the attacked copies
    made so far (each made once, its `hazard verify --deep` kept)."""

    databases: Databases
    url: str
    where: Path
    """Its witnesses' directories, `witnesses/<name>`, and the watcher's state."""
    keys: dict[str, str]
    """Each witness's public key, by name."""
    size: int
    note: str
    """The newest checkpoint the bank signed, as the witnesses cosigned it and the
    watcher verified it (the bank's signature only)."""
    attacked: dict[tuple[str, bool], tuple[str, Result]] = dataclasses.field(default_factory=dict)
    """Each attack's copy, by the attack and whether the evening went on after it: its
    URL, and `hazard verify --deep` on it."""

    @classmethod
    def play(cls, databases: Databases) -> Evening:
        where = databases.where / "honest"
        where.mkdir()
        url = databases.new()
        engine = db.make_engine(url)
        db.upgrade(engine)
        store = EventStore(engine, clock=attackkit.clock(), signer=SIGNER)
        try:
            play(store)
            keys = {
                name: home.init(where / "witnesses" / name, own, VERIFIER).key.text()
                for name, own in WITNESSES.items()
            }
            evening = cls(databases, url, where, keys, 0, "")
            with evening.witnesses_in(where) as policy:
                pushed = _push(store, policy)
            assert all(o.state.value == "ok" for o in pushed.values()), pushed
            latest = proofs.latest_note(engine)
            assert latest is not None
            evening.note, evening.size = latest, max(o.cosigned_size for o in pushed.values())
            (where / "club.policy").write_text(policy_text(keys))
            first = hazard(
                "watch", "--database-url", url, "--policy", str(where / "club.policy"),
                "--state", str(where / "hazard-watch.json"),
            )  # fmt: skip
            assert first.exit_code == 0, first.output
            assert f"now holds the checkpoint of size {evening.size}" in first.output
        finally:
            store.close()
            engine.dispose()  # a template must have no connections when it is copied
        return evening

    def close(self) -> None:
        for url in [self.url, *(url for url, _ in self.attacked.values())]:
            self.databases.drop(url)

    @contextlib.contextmanager
    def witnesses_in(self, where: Path) -> Iterator[Policy]:
        """The witnesses whose directories are in `where`, served, and the club's
        policy naming them at their URLs."""
        with contextlib.ExitStack() as stack:
            urls = {
                name: stack.enter_context(serving(witness_app(witness(where, name))))
                for name in self.keys
            }
            yield Policy.parse(policy_text(self.keys, urls))

    def attack(self, name: str, goes_on: bool = True) -> tuple[str, Result]:
        """The copy `name` was made on (made now, the first time), the evening gone on
        after it by MORE writes unless not `goes_on`, and `hazard verify --deep` on it."""
        if (name, goes_on) not in self.attacked:
            url = self.databases.copy(self.url)
            engine = db.make_engine(url)
            try:
                attackkit.ATTACKS[name](Log(engine, self.size, self.note, self.where))
                store = EventStore(engine, clock=attackkit.clock(LATER), signer=SIGNER)
                club = Club(Book(store))
                for _ in range(MORE if goes_on else 0):
                    club.account_command("cat", Deposited, 25, "setter")
                store.close()
            finally:
                engine.dispose()
            self.attacked[name, goes_on] = (url, hazard("verify", "--deep", url=url))
        return self.attacked[name, goes_on]

    def scene(
        self,
        where: Path,
        attack: str | None = None,
        insider: str = INSIDERS[0],
        goes_on: bool = True,
    ) -> Scene:
        """A copy of the log `attack` left (the honest one for None), gone on after it
        unless not `goes_on`, with the cosignatures as `insider` left them, and copies
        of the witnesses' and the watcher's files as the honest evening left them, in
        `where`."""
        url = self.databases.copy(self.attack(attack, goes_on)[0] if attack else self.url)
        shutil.copytree(self.where / "witnesses", where / "witnesses")
        shutil.copyfile(self.where / "hazard-watch.json", where / "hazard-watch.json")
        shutil.copyfile(self.where / "club.policy", where / "club.policy")
        scene = Scene(self, url, where, db.make_engine(url), insider)
        if not scene.kept_cosignatures:
            scene.drop_cosignatures()
        return scene


def witness(where: Path, name: str) -> Witness:
    """The real witness `name` of the witnesses in `where`: its key and its state."""
    folder = where / "witnesses" / name
    return Witness(home.open_state(folder), home.load_cosigner(folder))


def _push(store: EventStore, policy: Policy, *names: str) -> dict[str, Outcome]:
    """One push of the newest checkpoint to each witness (of `names`, when given), by
    the ledger's own pusher."""
    pusher = Pusher(store, policy)
    try:
        return {name: pusher.push(policy.witnesses[name]) for name in names or policy.witnesses}
    finally:
        pusher.stop()


def one_board(view: WSGIApplication, board: WSGIApplication) -> WSGIApplication:
    """`view`'s log with `board`'s gossip. A bank that splits its log serves each view
    to the readers it tells apart; the gossip is where readers compare what they were
    shown, and it catches the split only where they read one board. Here they do."""

    def front(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        gossip = str(environ.get("PATH_INFO", "")).startswith("/log/gossip")
        return (board if gossip else view)(environ, start_response)

    return front


@dataclasses.dataclass
class Scene:
    """One test's copy of the evening, attacked or not, and of the files of those who
    saw the honest one."""

    evening: Evening
    url: str
    where: Path
    engine: sa.Engine
    insider: str = INSIDERS[0]
    _stores: list[EventStore] = dataclasses.field(default_factory=list)

    @property
    def kept_cosignatures(self) -> bool:
        return self.insider == INSIDERS[0]

    @property
    def policy(self) -> str:
        return str(self.where / "club.policy")

    @property
    def state(self) -> str:
        return str(self.where / "hazard-watch.json")

    def store(self) -> EventStore:
        store = EventStore(self.engine, clock=attackkit.clock(LATER + timedelta(hours=1)),
                           signer=SIGNER)  # fmt: skip
        self._stores.append(store)
        return store

    def write(self) -> None:
        """The bank takes one more write."""
        Club(Book(self.store())).account_command("cat", Deposited, 25, "setter")

    def newest(self) -> str:
        """The newest checkpoint the bank signs now."""
        note = proofs.latest_note(self.engine)
        assert note is not None
        return note

    def checkpoint(self, size: int) -> str:
        """The bank's checkpoint of `size` now."""
        with self.engine.connect() as conn:
            return proofs.checkpoint(conn, size).note

    def drop_cosignatures(self) -> None:
        with self.engine.begin() as conn:
            unguard_cosignatures(conn)
            conn.exec_driver_sql("DELETE FROM cosignatures")

    def held(self, name: str) -> str | None:
        """The newest checkpoint the witness `name` cosigned, as its state holds it."""
        found = witness(self.where, name)
        try:
            return found.newest(origin_hash(ORIGIN))
        finally:
            found.state.close()

    @contextlib.contextmanager
    def witnesses_serving(self) -> Iterator[Policy]:
        """This scene's copies of the witnesses, served, and the club's policy naming
        them at their URLs (what the ledger pushes by)."""
        with self.evening.witnesses_in(self.where) as policy:
            yield policy

    def push(self, policy: Policy, *names: str) -> dict[str, Outcome]:
        """One push by the ledger's pusher of the newest checkpoint to each witness (of
        `names`, when given)."""
        return _push(self.store(), policy, *names)

    def evidence(self, name: str) -> Result:
        return hazard("witness", "evidence", "--dir", str(self.where / "witnesses" / name))

    def watch(self, *args: str) -> Result:
        """`hazard watch` as the watcher ran it on the honest evening: its policy, its
        state; on this database unless `--url` is given."""
        given = args if "--url" in args else ("--database-url", self.url, *args)
        return hazard("watch", *given, "--policy", self.policy, "--state", self.state)

    def verify(self, *args: str) -> Result:
        return hazard("verify", *args, url=self.url)

    def app(self, **settings: Any) -> Flask:
        """The ledger's app on this database (no witness pushed to unless told)."""
        return create_app(book=Book(self.store()), TESTING=True,
                          **{"HAZARD_POLICY": "", **settings})  # fmt: skip

    def close(self) -> None:
        for store in self._stores:
            store.close()
        self.engine.dispose()
        self.evening.databases.drop(self.url)
