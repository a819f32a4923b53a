"""The offline check's per-line shortcuts give what the long way gives: the seals'
heads folded a batch at a time (and ahead of a seal) as each change moved one at a
time, and the accounts a table's event posts to as the money's tally finds them as
`transfers_of` names them."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from ledger.books.book import Book
from ledger.exports import offline
from ledger.exports.offline import complete
from ledger.exports.offline.lines import Check
from ledger.exports.offline.money import MOVES_MONEY, Tally
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore
from ledger.store.log import heads as hd
from ledger.store.log.heads import Heads
from ledger.store.vocabulary import TABLE_PREFIX, transfers_of
from tests.ledger.exportkit import export, play, play_disputes, ticking
from tests.ledger.offlinekit import encoded, fails, records, rehash
from tests.signing import SIGNER, VERIFIER

_STREAMS = ["table:t1", "table:t2", "account:player:ann", "account:player:bob", hd.SEALS]
_ACCOUNTS = ["player:ann", "player:bob", "setter", "cash", "escrow:t1:b1"]


@st.composite
def _rows(draw: Any) -> list[hd._Posting]:
    """Events in position order: streams stepping up a version at a time, some opening
    an account, some posting to accounts (escrows among them, which have no head)."""
    versions: Counter[str] = Counter()
    rows = []
    for position in range(1, draw(st.integers(0, 40)) + 1):
        stream = draw(st.sampled_from(_STREAMS))
        versions[stream] += 1
        opened = stream.startswith("account:") and versions[stream] == 1
        accounts = draw(st.lists(st.sampled_from(_ACCOUNTS), max_size=4))
        digest = hashlib.sha256(f"{position}".encode()).hexdigest()
        type_ = hd.OPENED if opened else "Deposited"
        rows.append(hd._Posting(position, stream, versions[stream], type_, digest, accounts))
    return rows


@given(_rows(), st.integers(0, 40))
def test_heads_folded_a_batch_at_a_time_are_the_heads_moved_one_change_at_a_time(
    rows: list[hd._Posting], cut: int
) -> None:
    batched, stepped = Heads(), Heads()
    moved = []
    for batch in (rows[:cut], rows[cut:]):  # two seals' worth
        moved = hd.apply(batched, batch, hd._posted)
        last: dict[tuple[str, str], hd.Head] = {}
        for _position, kind, name, count, digest in hd.changes(batch, hd._posted):
            if hd.move(stepped, kind, name, count, digest):
                last[(kind, name)] = stepped.heads[stepped.index[(kind, name)]]
        # apply returns each head that moved, as it ends, in the order first moved
        assert moved == list(last.values())
        assert batched.heads == stepped.heads and batched.index == stepped.index
        assert batched.root() == stepped.root()


def test_the_tallys_accounts_are_the_accounts_each_table_event_posts_to(
    engine: sa.Engine,
) -> None:
    """What Tally.count hands the completeness check (the seals' heads, a player's
    chain) instead of its working them out again: `transfers_of`'s accounts but
    escrows, for every money-moving event of tables played, disputed and adjusted."""
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    store.close()
    tally, seen = Tally(), Counter[str]()
    for item in offline.read(export(engine, scope_of(everything=True)).splitlines()):
        if not isinstance(item, offline.EventLine):
            continue
        row, event = item.row, item.event
        if row.type not in MOVES_MONEY or not row.stream.startswith(TABLE_PREFIX):
            continue
        posted = tally.count(row.stream, event)
        expected = {
            a
            for t in transfers_of(row.stream, event)
            for a in (t.source, t.target)
            if not a.startswith("escrow:")
        }
        assert posted is not None and set(posted) == expected, (row.position, row.type)
        seen[row.type] += 1
    # stakes, settlements and a dispute's party-to-party adjustment among them
    assert {"CasterStaked", "StakeLaid", "BetSettled", "BetAdjusted"} <= set(seen), seen


def _whole_log(engine: sa.Engine, seals: bool) -> list[bytes]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    store.seals = seals
    play(Club(Book(store)))
    store.close()
    return export(engine, scope_of(everything=True)).splitlines()


def test_a_whole_log_with_no_seal_keeps_few_events_for_one(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log from before seals, exported whole in format 2: its check folds the heads
    ahead of a seal that never comes, rather than keep every event to the end."""
    lines = _whole_log(engine, seals=False)
    assert b'"format_version":2' in lines[0] and not any(b'"stream":"log"' in x for x in lines)
    monkeypatch.setattr(complete, "FOLD_AHEAD", 4)
    check, kept = Check(VERIFIER), 0
    for _ in check.run(lines):
        assert check.complete is not None
        kept = max(kept, len(check.complete.pending.rows))
    assert check.verified().events > 40 and kept == 3


def test_heads_folded_ahead_of_a_seal_are_the_ones_it_commits(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole log's seals held to heads folded a few events at a time: the same
    verdict as folded at each seal, and a seal that commits other heads still named."""
    lines = _whole_log(engine, seals=True)
    whole = offline.verify(lines, VERIFIER)
    for every in (1, 2, 3, 7):
        monkeypatch.setattr(complete, "FOLD_AHEAD", every)
        assert offline.verify(lines, VERIFIER) == whole
    recs = records(b"\n".join(lines))
    number = max(i for i, r in enumerate(recs, 1) if r.get("stream") == hd.SEALS)
    recs[number - 1]["payload"]["heads"] += 1
    rehash(recs, number)  # as a forger would: its leaf and chain agree with it
    found = fails(encoded(recs))
    assert found.line == number and "was rewritten" in str(found), found
