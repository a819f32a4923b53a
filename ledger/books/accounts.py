"""Accounts: the money outside the tables, and how table accounts map onto them.

A table's engine names accounts locally ("ann", "setter", "escrow:b12"). The ledger
is one book for the whole club: each player has one account across tables, the
setter (the bank) has one, every bet's escrow is its own account, and deposits and
withdrawals move money to and from `cash`, the world outside. So all balances sum to
zero, always: cash is negative by exactly what the club holds.
"""

from __future__ import annotations

import re
from typing import Any

from engine.money import ESCROW
from engine.state import SETTER
from engine.table import MAX_NAME
from ledger.store import vocabulary as vocab

# Whose money an event moves is the store's to say (its seals commit every account's
# postings: ledger.store.log.heads), so these live beside the events.
from ledger.store.vocabulary import ACCOUNT_PREFIX as ACCOUNT_PREFIX
from ledger.store.vocabulary import CASH as CASH
from ledger.store.vocabulary import TABLE_PREFIX as TABLE_PREFIX
from ledger.store.vocabulary import book_account as book_account
from ledger.store.vocabulary import player_account as player_account
from ledger.store.vocabulary import transfers_of as transfers_of

NAME = rf"^(?!\.+$)[A-Za-z0-9_.-]{{1,{MAX_NAME}}}$"
"""What a player or a table may be called: names appear in account names, streams and
URL paths. Not dots alone: a URL path cannot carry `.` or `..` (clients resolve
`/players/../balance` to `/balance`), and a name none can reach is no use. Anchored,
because the API documents it as a pattern, which is a search. At most the engine's
MAX_NAME, so that every player the ledger takes can sit at a table."""
NAME_RULE = f"1 to {MAX_NAME} letters, digits, _ . -, and not only dots"
"""NAME, in words, for the errors that refuse a name."""

OWN = (SETTER, CASH, ESCROW.rstrip(":"), "bank")
"""The ledger's own accounts (the setter, cash, each bet's escrow) and the setter's other
name in these pages, the bank: what a player may not be called."""
OWN_RULE = f"not one of the ledger's own accounts ({', '.join(OWN)}), in any case or with _ . -"
"""`reserved`, in words."""


def reserved(name: str) -> bool:
    """Whether a player called `name` would read as one of the ledger's own accounts:
    `SETTER`, `Cash` or `es-crow` beside `setter`, `cash` and `escrow:t1:b9` in a
    statement or a transfer. Checked when a player is made, and when a player's token is
    (ledger.web.tokens); a database from before the rule may hold such a player, whose
    account and history stand."""
    return re.sub(r"[_.-]", "", name).casefold() in OWN


PLAYER_RULE = f"{NAME_RULE}, and {OWN_RULE}"
"""What a player may be called, in words."""


def account_stream(account: str) -> str:
    return ACCOUNT_PREFIX + account


def owed(balance: int, credit_limit: int) -> int:
    """What an account stands below its credit limit: only a dispute's adjustment can
    put it there (ledger.books.projections), and the club is owed the difference."""
    return max(0, -(balance + credit_limit))


def transfer_views(stream: str, event: vocab.StoredEvent) -> list[dict[str, Any]]:
    """`transfers_of` as JSON: what the API shows beside an event, and a settlement
    keeps, so that every response names the money in the ledger's accounts."""
    return [
        {"source": t.source, "target": t.target, "amount": t.amount}
        for t in transfers_of(stream, event)
    ]
