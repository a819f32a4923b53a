"""What tests/api/test_service_model.py holds the service to after each step, one
function a check, each failing with what it found.

They read the service two ways on purpose: over the API, as a client sees it (table
states, balances, proofs, exports), and from the database under it (the events, the
read models), so that each is held to the other: a table's state as the API serves it
against its events run through the referee; the accounts against the postings' sum;
every settlement row against the events it names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from engine.referee import Referee
from ledger.books import deep
from ledger.books.accounts import CASH, TABLE_PREFIX, owed
from ledger.exports import offline
from ledger.exports.verdict import Verified
from ledger.store.eventstore import EventStore
from ledger.store.log import check, merkle
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.schema import accounts, adjustments, events, metadata, rounds, settlements
from ledger.web.views import state_view
from tests.api.conftest import Client
from tests.signing import VERIFIER

# -- money ----------------------------------------------------------------------------


def money(store: EventStore, auditor: Client, players: Iterable[str]) -> dict[str, int]:
    """Every account's balance, after checking: they sum to zero (cash stands for the
    world outside, so it is minus what the club holds); escrow never below zero; no
    player and not the setter below minus its credit limit, except by what the API
    shows as `owed`, and that only on an account a dispute's adjustment moved (docs/setter.md,
    "Overdrafts after a dispute"); each balance as GET /players/<p>/balance has it."""
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(accounts)).all()
        adjusted = {
            party
            for (transfers,) in conn.execute(sa.select(adjustments.c.transfers))
            for party in _parties(transfers)
        }
    balances = {row.account: int(row.balance) for row in rows}
    limits = {row.account: int(row.credit_limit) for row in rows}
    assert sum(balances.values()) == 0, f"balances sum to {sum(balances.values())}: {balances}"
    for account, balance in balances.items():
        if account == CASH:
            assert balance <= 0, f"cash is {balance}: the club holds less than nothing"
        elif account.startswith("escrow:"):
            assert balance >= 0, f"{account} holds {balance}"
        elif balance < -limits[account]:
            assert account in adjusted, (
                f"{account} is {balance}, past its credit limit {limits[account]}, and no "
                f"dispute's adjustment moved it"
            )
    for name in [*players, "setter"]:
        account = "setter" if name == "setter" else f"player:{name}"
        shown = auditor.ok("get", f"/players/{name}/balance")
        balance, limit = balances.get(account, 0), limits.get(account, 0)
        assert (shown["balance"], shown["credit_limit"]) == (balance, limit), (name, shown)
        assert shown.get("owed", 0) == owed(balance, limit), (name, shown)
    return balances


def _parties(transfers: str) -> set[str]:
    import json

    return {t[side] for t in json.loads(transfers) for side in ("source", "target")}


def escrow_held(balances: dict[str, int], table: str, state: dict[str, Any]) -> None:
    """What the ledger's escrow accounts of a table hold is what its open bets hold."""
    prefix = f"escrow:{table}:"
    escrow = sum(v for k, v in balances.items() if k.startswith(prefix))
    held = sum(
        (bet["yes_stake"] if bet["yes"] is not None else 0)
        + (bet["no_stake"] if bet["no"] is not None else 0)
        for bet in state["open_bets"]
    )
    assert escrow == held, f"table {table}: escrow {escrow}, open bets hold {held}"


# -- a table's state, from its events ---------------------------------------------------


def replayed(store: EventStore, croupier: Client, table: str) -> dict[str, Any]:
    """The table's state as the API serves it, after checking it is what its events
    make: each event of the stream, read from the database, run through the referee
    (every command re-run, every derived event held to what the engine derives), the
    state it ends at rendered as the API renders one, and compared whole."""
    referee = Referee()
    for event in store.load(TABLE_PREFIX + table):
        referee.check(event)
    referee.finish()
    response = croupier.get(f"/tables/{table}")
    assert response.status_code == 200, response.get_json()
    served: dict[str, Any] = response.get_json()
    assert served == state_view(table, referee.state), f"table {table}: served != replayed"
    assert response.headers["ETag"] == f'"{referee.state.version}"'
    return served


# -- settlements ----------------------------------------------------------------------


def settlements_traced(store: EventStore, auditor: Client) -> int:
    """Every settlement row names its own event (a BetSettled or BetVoided of its bet,
    in its table's stream) and the events it came from: each exists, in the same
    stream, and no later than the settlement but within the write that made it; its round
    is the round the rounds read model puts that position in. The API serves the same
    rows. Returns how many there are."""
    import json

    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(settlements).order_by(settlements.c.position)).all()
        by_position = {
            r.position: r
            for r in conn.execute(
                sa.select(
                    events.c.position,
                    events.c.stream,
                    events.c.type,
                    events.c.payload,
                    events.c.recorded_at,
                )
            )
        }
        spans = conn.execute(sa.select(rounds)).all()
    for row in rows:
        own = by_position.get(row.position)
        assert own is not None, f"settlement at {row.position}: no such event"
        assert own.stream == row.stream, f"settlement at {row.position}: in {own.stream}"
        assert own.type in ("BetSettled", "BetVoided"), (row.position, own.type)
        assert json.loads(own.payload)["bet_id"] == row.bet_id, row.position
        sources = json.loads(row.sources)
        assert row.position in sources, f"settlement at {row.position}: not among its sources"
        for source in sources:
            event = by_position.get(source)
            assert event is not None, f"settlement at {row.position}: source {source} missing"
            assert event.stream == row.stream, (row.position, source, event.stream)
            # A command may void bets before the event that decides it (a pass: the
            # round's bets voided, then DicePassed), so a source may come after the
            # settlement, but only within the same write.
            if source > row.position:
                assert event.recorded_at == own.recorded_at and all(
                    by_position[p].stream == row.stream for p in range(row.position, source)
                ), (
                    f"settlement at {row.position} ({own.type} {own.payload}) comes from a "
                    f"later event at {source} ({event.type}) of another write"
                )
        [span] = [
            s
            for s in spans
            if s.stream == row.stream and s.first_position <= row.position <= s.last_position
        ] or [None]
        assert span is not None and span.round == row.round, (
            f"settlement at {row.position} says round {row.round}; the rounds read model "
            f"says {getattr(span, 'round', None)}"
        )
    served = []
    after: int | None = None
    while True:
        query: dict[str, Any] = {"limit": 500, **({"after": after} if after else {})}
        page = auditor.ok("get", "/settlements", query_string=query)
        served += [item["position"] for item in page["items"]]
        after = page.get("next_after")
        if after is None or not page["items"]:
            break
    assert served == [r.position for r in rows], "GET /settlements disagrees with its rows"
    return len(rows)


# -- nothing left behind ----------------------------------------------------------------


def footprint(store: EventStore) -> dict[str, Any]:
    """Everything a write could leave: each table's row count, the log's head and the
    accounts. A refused request must leave it as it was."""
    with store.engine.connect() as conn:
        counts = {
            table.name: conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in metadata.sorted_tables
            if table.name != "tokens"  # a token is made by the test, not by a request
        }
        head = conn.execute(sa.select(sa.func.max(events.c.position))).scalar_one()
        money = sorted(tuple(r) for r in conn.execute(sa.select(accounts)).all())
    return {"counts": counts, "head": head, "accounts": money}


# -- receipts and proofs ------------------------------------------------------------------


def checkpoint_size(note: str) -> int:
    return open_checkpoint(note, [VERIFIER]).size


def included(client: Client, position: int, size: int) -> dict[str, Any]:
    """The event at `position` is in the signed tree of `size`, by an inclusion proof
    from the API checked with ledger.store.log.merkle against the signed root; the
    event, as the proof shows it to `client` (one that may see it)."""
    body = client.ok(
        "get", "/log/proofs/inclusion", query_string={"position": position, "size": size}
    )
    checkpoint = open_checkpoint(body["checkpoint"]["checkpoint"], [VERIFIER])
    assert checkpoint.size == size == body["tree_size"]
    leaf = hashlib.sha256(b"\x00" + body["record"].encode()).digest()
    assert body["leaf_hash"] == leaf.hex()
    proof = [bytes.fromhex(h) for h in body["proof"]]
    merkle.check_record(proof, size, checkpoint.root, position - 1, leaf)
    event: dict[str, Any] = body["event"]
    assert event["position"] == position
    return event


def consistent(client: Client, note: str, newest: str) -> None:
    """The receipt's checkpoint `note` is a prefix of the newest checkpoint, by a
    consistency proof from the API, both signatures checked with the log's key."""
    old = open_checkpoint(note, [VERIFIER])
    new = open_checkpoint(newest, [VERIFIER])
    if old.size == new.size:
        assert old.root == new.root, f"two roots for the tree of {old.size}"
        return
    query = {"from": old.size, "to": new.size}
    body = client.ok("get", "/log/proofs/consistency", query_string=query)
    assert body["old"]["checkpoint"] == note, "the log's checkpoint is not the receipt's"
    assert body["new"]["checkpoint"] == newest
    proof = [bytes.fromhex(h) for h in body["proof"]]
    merkle.check_tree(proof, new.size, new.root, old.size, old.root)


# -- the whole log ------------------------------------------------------------------------


def log_checked(store: EventStore) -> int:
    """`hazard verify`'s check: positions, hash chains, the tree, every checkpoint's
    signature and root. Returns the log's size."""
    with store.engine.connect() as conn, conn.begin():
        check.snapshot(conn)
        report = check.check_log(conn, VERIFIER)
    assert report.ok, [str(f) for f in report.findings]
    assert report.unsigned == report.differ == 0
    return report.size


def deep_checked(store: EventStore) -> None:
    """`hazard verify --deep`'s check: every read model is a rebuild from the events."""
    found = list(deep.differences(store))
    assert not found, [str(d) for d in found]


def export_verified(client: Client, query: dict[str, Any]) -> Verified:
    """GET /export as JSON Lines, checked offline as `hazard verify FILE --key` does."""
    response = client.get("/export", query_string=query)
    assert response.status_code == 200, response.get_json()
    return offline.verify(response.get_data().splitlines(), key=VERIFIER)
