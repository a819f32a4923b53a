"""The club: the one place that runs an engine command against a table, records the
events, posts the money and answers. The commands (ledger.commands) decide what to run
and as whom; every surface calls them, and they call this.

Every write follows one path (`Club.command`): in a unit of work (ledger.unit_of_work:
a write transaction in which appends are serialised, so nothing moves under it) read
the table's current state, check the caller's If-Match version, let the engine decide,
and record the events with their postings and read models. The idempotency key and
the response are stored in the same transaction, so a repeat is answered from the
store and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

import engine as hz
from engine import serverdice
from ledger.books import limits, projections
from ledger.books.accounts import (
    NAME,
    PLAYER_RULE,
    TABLE_PREFIX,
    account_stream,
    player_account,
    reserved,
    transfer_views,
)
from ledger.books.book import Book
from ledger.house import House
from ledger.store import seeds, snapshots
from ledger.store.eventstore import Recorded, Refused
from ledger.store.vocabulary import AccountOpened, CreditLimitSet, Deposited, Withdrawn
from ledger.unit_of_work import UnitOfWork

WRITE_EVENTS = 50
"""The most events a write's answer lists: a throw, a departure or a closing may close
every open bet of the table (up to engine.betting.MAX_OPEN_BETS), one event each. The
answer counts them all (`event_count`; the receipt has every position) and says where
the rest are read (`next_events`: the table's replay from the last one listed)."""

Funds = Callable[[str], int]
"""What a player has free to stake: balance plus credit, read in the write transaction."""


class Reads:
    """What a command may read in its write transaction besides the table. Called with a
    player's name, it is `Funds`; `server_seed()` is the secret seed of the caster's turn
    at a server-dice table, which the throw draws its dice from."""

    def __init__(self, club: Club, conn: sa.Connection, stream: str, state: hz.TableState):
        self._club, self._conn, self._stream, self._state = club, conn, stream, state

    def __call__(self, name: str) -> int:
        return self._club.free_funds(self._conn, name)

    @property
    def conn(self) -> sa.Connection:
        """The write transaction: what a command reads besides the table, it reads here."""
        return self._conn

    @property
    def stream(self) -> str:
        return self._stream

    def server_seed(self) -> bytes:
        commitment = self._state.commitment
        seed = seeds.of_turn(self._conn, self._stream, commitment) if commitment else None
        if seed is None:
            raise SeedUnavailable(
                "the server seed of this caster's turn is not in this database (a table "
                "restored from an export, which never carries seeds, cannot go on with the "
                "turn it was in)"
            )
        return seed


Decide = Callable[[hz.TableState, Reads], list[hz.Event]]


class StaleVersion(Refused):
    """If-Match named a version the table has moved on from."""

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(f"the table is at version {current}, not {expected} as expected")
        self.expected, self.current = expected, current


class NotFound(Refused):
    """No such table or player."""


class Forbidden(Refused):
    """The caller's role or identity does not allow this, as the table stands."""


class AlreadyExists(Refused):
    """A table or player by that name is already there."""


class InvalidName(Refused):
    """A name no player or table may have; `field` is the request's field that gave it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


class InvalidAmount(Refused):
    """Amounts are whole, positive numbers of minor units."""


class SeedUnavailable(Refused):
    """A server-dice table's turn needs its seed, and this database does not hold it."""


def is_name(text: str) -> bool:
    """Whether `text` could name a table or a player. Any other names nothing, and is
    not looked up: PostgreSQL refuses a NUL in a parameter rather than find no row."""
    return re.fullmatch(NAME, text) is not None


def table_stream(table_id: str) -> str:
    return TABLE_PREFIX + table_id


def event_view(row: Recorded) -> dict[str, Any]:
    """An appended event as the API shows it: the stored record (its payload in the
    table's own account names, as hashed) and the money it moved in the ledger's."""
    return {
        "position": row.position,
        "stream": row.stream,
        "version": row.version,
        "type": row.type,
        "payload": json.loads(row.payload),
        "actor": row.actor,
        "recorded_at": row.recorded_at,
        "hash": row.hash,
        "transfers": transfer_views(row.stream, row.event()),
    }


class Club:
    def __init__(self, book: Book, house: House | None = None) -> None:
        self.book = book
        self.house = house if house is not None else House()
        """The club's settings: its zone (whose calendar day stands in for an evening)
        and the cooling-off before a raised limit binds."""
        self.store = book.store
        self._states: dict[str, hz.TableState] = {}
        self._states_lock = threading.Lock()

    # -- table state ------------------------------------------------------------------

    def state(self, table_id: str, conn: sa.Connection | None = None) -> hz.TableState:
        """The table's current state: the newest state this process has folded, brought
        up to the stream's head (in `conn`'s transaction when given)."""
        if not is_name(table_id):
            raise NotFound(f"there is no table {table_id!r}")
        stream = table_stream(table_id)
        with self._states_lock:
            cached = self._states.get(stream)
        head = (
            self.store.stream_version(conn, stream)
            if conn is not None
            else self.store.version(stream)
        )
        if cached is not None and cached.version == head:
            state = cached
        elif cached is not None and cached.version < head:
            state = hz.fold(self.store.load(stream, after_version=cached.version), cached)
        else:
            state = snapshots.load(self.store, stream)
        if state.phase is hz.Phase.NEW:
            raise NotFound(f"there is no table {table_id!r}")
        self._remember(stream, state)
        return state

    def _remember(self, stream: str, state: hz.TableState) -> None:
        with self._states_lock:
            known = self._states.get(stream)
            if known is None or known.version < state.version:
                self._states[stream] = state

    # -- writes -----------------------------------------------------------------------

    def command(
        self,
        table_id: str,
        actor: str,
        decide: Decide,
        *,
        if_match: int | None = None,
        key: str | None = None,
        request: Mapping[str, Any] | None = None,
        new_table: bool = False,
        players: Sequence[str] = (),
        respond: Callable[[], Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Run one engine command against a table and record what it decides.

        `players` are the players the command names, who must have accounts. `respond`
        gives more of the answer, once the command has decided (what a dispute's
        opening says of the round): it is stored with the rest, so a repeat gets it too."""
        stream = table_stream(table_id)
        uow = UnitOfWork(self.store, key, {"table": table_id, "actor": actor, **(request or {})})
        if (earlier := uow.earlier()) is not None:
            return earlier
        with uow:
            if new_table:
                if self.store.stream_version(uow.conn, stream):
                    raise AlreadyExists(f"there is already a table {table_id!r}")
                before = hz.INITIAL
            else:
                before = self.state(table_id, uow.conn)
            if if_match is not None and if_match != before.version:
                raise StaleVersion(if_match, before.version)
            self._require_players(uow.conn, players)
            events = decide(before, Reads(self, uow.conn, stream, before))
            # A player's own limits, in this transaction at the time the log records.
            limits.check_stakes(uow.conn, stream, events, uow.now, self.house.zone)
            if events:  # a client seed logged for a throw: that throw comes next, alone
                serverdice.require_draw_next(before, events[0])
            events = self._seal_turn(uow.conn, stream, before, events)
            rows, state = uow.play(stream, before, events, actor, key)
            more = dict(respond()) if respond is not None else {}
            uow.commit(
                {"table": table_id, "version": state.version, **_page(table_id, rows), **more}
            )
        if uow.committed:  # not when a racing first attempt won: its state is not ours
            self._remember(stream, state)
        return uow.answer

    def _seal_turn(
        self, conn: sa.Connection, stream: str, before: hz.TableState, events: list[hz.Event]
    ) -> list[hz.Event]:
        """At a server-dice table, a command that ends the caster's turn reveals its seed,
        and one that gives a caster the dice commits to a new one: 32 bytes from
        `secrets`, kept in `server_seeds` in this transaction (engine.serverdice.seal)."""
        ends, begins = serverdice.turn_change(before, events)
        if not (ends or begins):
            return events
        revealed = Reads(self, conn, stream, before).server_seed().hex() if ends else None
        seed = secrets.token_bytes(serverdice.SEED_BYTES) if begins else None
        commitment = hashlib.sha256(seed).hexdigest() if seed is not None else None
        sealed = serverdice.seal(before, events, revealed, commitment)
        if seed is not None:
            seeds.keep(conn, stream, sealed[-1].version, seed)
        return sealed

    def _require_players(self, conn: sa.Connection, names: Sequence[str]) -> None:
        for name in names:
            if name != hz.SETTER and not self.store.stream_version(
                conn, account_stream(player_account(name))
            ):
                raise NotFound(f"there is no player {name!r}: create the player first")

    # -- players and accounts ---------------------------------------------------------

    def create_player(self, name: str, actor: str, key: str | None = None) -> dict[str, Any]:
        if not is_name(name) or reserved(name):
            raise InvalidName("name", f"a player's name is {PLAYER_RULE}")
        stream = account_stream(player_account(name))
        uow = UnitOfWork(self.store, key, {"create-player": name, "actor": actor})
        if (earlier := uow.earlier()) is not None:
            return earlier
        with uow:
            if self.store.stream_version(uow.conn, stream):
                raise AlreadyExists(f"there is already a player {name!r}")
            event = AccountOpened(version=1, account=player_account(name))
            rows = uow.record(stream, 0, [event], actor)
            uow.commit({"player": name, "version": 1, "events": _views(rows)})
        return uow.answer

    def account_command(
        self,
        name: str,
        kind: type[Deposited | Withdrawn | CreditLimitSet],
        amount: int,
        actor: str,
        key: str | None = None,
    ) -> dict[str, Any]:
        if not is_name(name):
            raise NotFound(f"there is no player {name!r}")
        account = player_account(name)
        stream = account_stream(account)
        field = "limit" if kind is CreditLimitSet else "amount"
        if type(amount) is not int or amount < (0 if field == "limit" else 1):
            raise InvalidAmount(f"{field} must be a whole, positive number of minor units")
        request = {"account": name, "kind": kind.__name__, field: amount, "actor": actor}
        uow = UnitOfWork(self.store, key, request)
        if (earlier := uow.earlier()) is not None:
            return earlier
        with uow:
            version = self.store.stream_version(uow.conn, stream)
            if not version and name != hz.SETTER:
                raise NotFound(f"there is no player {name!r}")
            if kind is Deposited:
                limits.check_deposit(uow.conn, account, amount, uow.now)
            event = kind(version=version + 1, account=account, **{field: amount})
            rows = uow.record(stream, version, [event], actor)
            uow.commit({"player": name, "version": version + 1, "events": _views(rows)})
        return uow.answer

    def standing(self, conn: sa.Connection, name: str) -> tuple[int, int]:
        """A player's (balance, credit limit), as the ledger stands in `conn`."""
        account = player_account(name)
        return projections.standings(conn, [account]).get(account, (0, 0))

    def free_funds(self, conn: sa.Connection, name: str) -> int:
        """A player's balance plus their credit limit: what they may still stake."""
        return max(0, sum(self.standing(conn, name)))

    def player_exists(self, name: str) -> bool:
        if not is_name(name):
            return False
        return name == hz.SETTER or bool(self.store.version(account_stream(player_account(name))))


def _views(rows: Sequence[Recorded]) -> list[dict[str, Any]]:
    return [event_view(r) for r in rows]


def _page(table_id: str, rows: Sequence[Recorded]) -> dict[str, Any]:
    """A table write's events, as its answer lists them: the first WRITE_EVENTS, how
    many there are, and where the rest are read (None: there are none)."""
    shown = rows[:WRITE_EVENTS]
    rest = len(rows) > len(shown)
    return {
        "events": _views(shown),
        "event_count": len(rows),
        "next_events": f"/tables/{table_id}/replay?after={shown[-1].position}" if rest else None,
    }
