"""The stored vocabulary: the codec stores every event type there is, table, account and
seal alike, from one list, and the ledger's own events live below the store and the
books."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing

from engine import events as ev
from ledger.books import accounts
from ledger.store import codec, vocabulary
from ledger.store.evenings_events import EveningEvent
from ledger.store.significant_events import SIGNIFICANT_EVENTS


def test_the_codec_stores_exactly_the_stored_events_in_their_order() -> None:
    assert list(codec.EVENT_TYPES.values()) == list(vocabulary.STORED_EVENTS)
    assert all(name == cls.__name__ for name, cls in codec.EVENT_TYPES.items())


def test_stored_events_are_the_table_events_then_the_account_events_then_the_seal() -> None:
    account_events = typing.get_args(vocabulary.AccountEvent)
    assert account_events == vocabulary.ACCOUNT_EVENTS
    # The log's own event, each write's seal (ledger.store.log.sealing), comes last.
    assert (
        ev.TABLE_EVENTS + account_events + (vocabulary.LogSealed,) + vocabulary.CLUB_EVENTS
        == vocabulary.STORED_EVENTS
    )  # then the club's own books': its evenings', its log of significant events'
    assert typing.get_args(EveningEvent) + SIGNIFICANT_EVENTS == vocabulary.CLUB_EVENTS
    shaped_like_events = {
        value
        for value in vars(vocabulary).values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and dataclasses.fields(value)[0].name == "version"
    }
    assert shaped_like_events == {*account_events, vocabulary.LogSealed}


def test_the_books_no_longer_hold_the_account_events() -> None:
    assert [c.__name__ for c in vocabulary.ACCOUNT_EVENTS if hasattr(accounts, c.__name__)] == []
    tree = ast.parse(inspect.getsource(codec))
    imported = {
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not any(name.startswith("ledger.books.accounts") for name in imported)
