"""The verifiable export (ledger.exports.jsonl), on SQLite and PostgreSQL: each scope's
file has the lines docs/export-format.md says, every hash in it recomputes, its tree
ties to the signed checkpoint, skipped positions are the right subtrees, a partial
export starts from the table's true state, and the same log exports to the same bytes
however it is paged, even while it is written to."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.book import Book
from ledger.exports import jsonl
from ledger.exports.scope import NotFound, Scope, ScopeError, scope_of
from ledger.service import Club
from ledger.store import codec, snapshots
from ledger.store.eventstore import GENESIS, EventStore, Recorded
from ledger.store.log import merkle
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.vocabulary import Deposited
from tests.engine.tablekit import NICK_FIRST, next_total
from tests.signing import SIGNER, VERIFIER

START = "2026-11-23T14:00:00.000000Z"


def ticking() -> Any:
    """A clock a second on at each write, from START: times a test can name."""
    seconds = count()

    def now() -> str:
        n = next(seconds)
        return f"2026-11-23T14:{n // 60:02d}:{n % 60:02d}.000000Z"

    return now


def at(write: int) -> str:
    """The time `ticking` gives the write numbered `write` (from 0)."""
    return f"2026-11-23T14:{write // 60:02d}:{write % 60:02d}.000000Z"


def play(club: Club) -> None:
    """Two tables played side by side, with deposits between: t1 as test_deep plays it,
    t2 a round of its own between t1's commands. ann plays at t1 only, cat at both."""
    club.account_command(hz.SETTER, Deposited, 100_000, "setter")
    for name in ("ann", "bob", "cat"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")

    def do(table: str, command: Any, *args: Any, new: bool = False) -> None:
        club.command(table, "croupier", lambda state, _f: command(state, *args), new_table=new)

    t2 = iter(
        [
            (lambda s: hz.open_table(hz.BUILTIN["english"]), True),
            (lambda s: hz.seat(s, "cat"), False),
            (lambda s: hz.seat(s, "bob"), False),
            (lambda s: hz.cast_for_caster(s, "cat", 1), False),
            (lambda s: hz.cast_for_caster(s, "bob", 6), False),
            (lambda s: hz.call_main(s, 7), False),
            (lambda s: hz.stake(s, 300), False),
            (lambda s: hz.lay(s, "bob", 100), False),
        ]
    )

    def other() -> None:
        step = next(t2, None)
        if step is not None:
            do("t2", step[0], new=step[1])

    do("t1", lambda s: hz.open_table(hz.BUILTIN["english"]), new=True)
    for command, *args in [
        (hz.seat, "ann"),
        (hz.seat, "bob"),
        (hz.cast_for_caster, "ann", 1),
        (hz.cast_for_caster, "bob", 6),
        (hz.call_main, 7),
        (hz.stake, 1000),
        (hz.lay, "bob", 400),
        (hz.lay, "bob", 100),
        (hz.refuse, "b10"),
        (hz.cover, 4000),
        (hz.offer_side_bet, "bob", next_total(7), True, 100, 500),
        (hz.accept_side_bet, "b13", "setter"),
        (hz.offer_side_bet, "ann", NICK_FIRST, True, 200, 200, "bob"),
        (hz.throw, 2, 2),
        (hz.lay_odds, "ann", "chance", 500),
        (hz.throw, 1, 3),
        (hz.call_main, 6),
        (hz.seat, "cat"),
        (hz.lay, "cat", 300),
        (hz.cover, 4000),
        (hz.throw, 1, 1),
        (hz.leave, "ann"),
        (hz.call_main, 5),
        (hz.stake, 200),
    ]:
        do("t1", command, *args)
        other()
        if command is hz.throw:
            club.account_command("bob", Deposited, 10, "setter")
    do("t1", hz.close)
    club.account_command("ann", Deposited, 1, "setter")  # the log goes on past t1


WRITES = 45
"""How many writes `play` makes (each one checkpoint), to name times mid-log."""


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


def export(engine: sa.Engine, scope: Scope) -> bytes:
    prepared = jsonl.prepare(engine, scope, key=VERIFIER)
    return b"".join(prepared.chunks())


def all_events(store: EventStore) -> list[Recorded]:
    return store.read_all(0, limit=100_000)


def subtree(leaves: list[bytes]) -> bytes:
    """MTH of a list of leaf hashes (RFC 9162, 2.1.1), from the events themselves."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return merkle.node_hash(subtree(leaves[:k]), subtree(leaves[k:]))


@dataclass
class Read:
    """A file read and checked line by line, as the format page says."""

    header: dict[str, Any]
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    skips: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    closing: dict[str, Any] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def check(data: bytes, log: list[Recorded]) -> Read:
    """Everything the format promises, recomputed; `log` is the store's events, to
    hold skipped subtrees to the tree of the events themselves."""
    assert data.endswith(b"\n")
    lines = [json.loads(line) for line in data.split(b"\n")[:-1]]
    for raw, line in zip(data.split(b"\n"), lines, strict=False):
        assert codec.canonical(line) == raw, "every line is canonical"
    read = Read(lines[0])
    assert read.header["record"] == "header"
    assert read.header["format"] == "hazard-export" and read.header["format_version"] == 1
    assert read.header["key"] == VERIFIER.text() and read.header["origin"] == VERIFIER.name
    first, last = read.header["first"], read.header["last"]
    start = read.header["tree_start"]
    assert start["size"] == first - 1 and len(start["hashes"]) == (first - 1).bit_count()
    stack = [bytes.fromhex(h) for h in start["hashes"]]
    size = first - 1
    heads: dict[str, tuple[int, str]] = {}
    leaves = [merkle.leaf_hash(row.hashed()) for row in log]

    def push(digest: bytes, level: int) -> None:
        number = size >> level
        while number & 1:
            digest = merkle.node_hash(stack.pop(), digest)
            number >>= 1
        stack.append(digest)

    for line in lines[1:]:
        kind = line["record"]
        read.order.append(kind)
        if kind == "snapshot":
            assert not read.events and not read.skips
            read.snapshots.append(line)
            heads[line["stream"]] = (line["version"], line["hash"])
        elif kind == "event":
            document = {
                k: v for k, v in line.items() if k not in ("record", "leaf", "hash", "prev_hash")
            }
            data_ = codec.canonical(document)
            assert line["leaf"] == hashlib.sha256(b"\x00" + data_).hexdigest()
            assert line["hash"] == codec.chain_hash(line["prev_hash"], data_)
            version, head = heads.get(line["stream"], (0, GENESIS))
            if line["stream"] in heads or line["version"] == 1:
                assert line["version"] == version + 1 and line["prev_hash"] == head
            heads[line["stream"]] = (line["version"], line["hash"])
            assert line["position"] == size + 1
            push(bytes.fromhex(line["leaf"]), 0)
            size += 1
            read.events.append(line)
        elif kind == "skip":
            assert line["from"] == size + 1 and line["to"] >= line["from"]
            for digest in line["hashes"]:
                width = size & -size if size else 1 << 62
                while size + width > line["to"]:
                    width >>= 1
                assert bytes.fromhex(digest) == subtree(leaves[size : size + width])
                push(bytes.fromhex(digest), width.bit_length() - 1)
                size += width
            assert size == line["to"]
            read.skips.append(line)
        elif kind == "checkpoint":
            assert read.order[-2] == "event" and line["size"] == size
            signed = open_checkpoint(line["note"], [VERIFIER])
            assert signed.size == size and signed.root == subtree(leaves[:size])
            read.checkpoints.append(line)
        else:
            assert kind == "closing" and line is lines[-1]
            read.closing = line
    closing = read.closing
    assert size == last == closing["size"]
    root = subtree(leaves[:last]) if last else merkle.EMPTY_ROOT
    folded = stack[-1] if stack else merkle.EMPTY_ROOT
    for left in reversed(stack[:-1]):
        folded = merkle.node_hash(left, folded)
    assert closing["root"] == folded.hex() == root.hex()
    assert closing["events"] == len(read.events)
    assert closing["skipped"] == sum(s["to"] - s["from"] + 1 for s in read.skips)
    assert closing["events"] + closing["skipped"] == last - first + 1
    assert closing["types"] == dict(Counter(e["type"] for e in read.events))
    signed = open_checkpoint(closing["checkpoint"]["note"], [VERIFIER])
    assert signed.size == closing["checkpoint"]["size"] == len(log)
    proof = [bytes.fromhex(h) for h in closing["consistency"]]
    if last == signed.size:
        assert proof == [] and signed.root == root
    else:
        merkle.check_tree(proof, signed.size, signed.root, last, root)
    return read


def money(store: EventStore, positions: set[int]) -> dict[str, dict[str, int]]:
    """The closing's money, from the postings of `positions` (the read model)."""
    out: dict[str, Counter[str]] = {}
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT position, account, amount, counterparty FROM postings"))
        for position, account, amount, other in rows:
            if position not in positions or account == "cash" or account.startswith("escrow:"):
                continue
            figures = out.setdefault(account, Counter())
            if other == "cash":
                figures["deposited" if amount > 0 else "withdrawn"] += abs(amount)
            elif other.startswith("escrow:"):
                figures["paid" if amount > 0 else "staked"] += abs(amount)
            else:  # party to party: a dispute's adjustment
                figures["adjusted"] += amount
    keys = ("deposited", "paid", "staked", "withdrawn")
    return {
        a: {k: f[k] for k in keys} | ({"adjusted": f["adjusted"]} if f["adjusted"] else {})
        for a, f in sorted(out.items())
    }


def test_the_whole_log(store: EventStore) -> None:
    log = all_events(store)
    read = check(export(store.engine, scope_of(everything=True)), log)
    assert read.header["first"] == 1 and read.header["last"] == len(log)
    assert read.header["scope"] == {
        "kind": "all", "player": None, "since": None, "table": None, "until": None
    }  # fmt: skip
    assert read.header["tree_start"] == {"hashes": [], "size": 0}
    assert list(read.header["rule_sets"]) == ["english"]
    assert read.header["rule_sets"]["english"] == hz.BUILTIN["english"].to_mapping()
    assert not read.snapshots and not read.skips
    assert [e["position"] for e in read.events] == [r.position for r in log]
    with store.engine.connect() as conn:
        sizes = [s for (s,) in conn.execute(sa.text("SELECT size FROM checkpoints ORDER BY size"))]
    assert [c["size"] for c in read.checkpoints] == sizes and len(sizes) == WRITES
    assert read.closing["consistency"] == []
    assert read.closing["money"] == money(store, {r.position for r in log})
    assert read.closing["money"]["player:ann"]["deposited"] == 5001
    assert "cash" not in read.closing["money"]
    assert not any(a.startswith("escrow:") for a in read.closing["money"])


@pytest.mark.parametrize("scope", [{"everything": True}, {"table": "t1"}, {"player": "bob"}])
def test_the_exports_own_frame_and_frontier_are_codec_and_merkle(
    store: EventStore, scope: dict[str, Any]
) -> None:
    """The export's hot loop writes codec.frame, merkle.leaf_hash and
    merkle.Frontier.append out by hand, for speed: held to them here, line by line, from
    the header's tree_start through every event and skip to the closing's root."""
    lines = [json.loads(line) for line in export(store.engine, scope_of(**scope)).splitlines()]
    start = lines[0]["tree_start"]
    frontier = merkle.Frontier(start["size"], [bytes.fromhex(h) for h in start["hashes"]])
    quoted = codec.Quoted()
    for line in lines[1:]:
        if line["record"] == "event":
            columns = {name: line[name] for name in Recorded._fields}
            row = Recorded(**{**columns, "payload": codec.canonical(line["payload"]).decode()})
            leaf = merkle.leaf_hash(codec.frame(quoted, *row[:9]))
            assert line["leaf"] == leaf.hex()
            frontier.append(leaf)
        elif line["record"] == "skip":
            subtrees = merkle.cover(line["from"] - 1, line["to"])
            for (level, _), digest in zip(subtrees, line["hashes"], strict=True):
                frontier.append_subtree(level, bytes.fromhex(digest))
        elif line["record"] == "checkpoint":
            assert frontier.size == line["size"]
    assert frontier.size == lines[-1]["size"]
    assert frontier.root().hex() == lines[-1]["root"]


def test_a_table_skips_the_rest_as_subtrees(store: EventStore) -> None:
    log = all_events(store)
    read = check(export(store.engine, scope_of(table="t1")), log)
    mine = [r for r in log if r.stream == "table:t1"]
    assert read.header["first"] == mine[0].position and read.header["last"] == mine[-1].position
    assert [e["position"] for e in read.events] == [r.position for r in mine]
    assert read.skips and not read.checkpoints and not read.snapshots
    skipped = {p for s in read.skips for p in range(s["from"], s["to"] + 1)}
    assert skipped == {r.position for r in log if mine[0].position < r.position < mine[-1].position
                       and r.stream != "table:t1"}  # fmt: skip
    assert read.closing["consistency"]  # t1 closed, and bob's deposit came after
    assert read.closing["money"] == money(store, {r.position for r in mine})


def test_a_player_has_their_account_and_their_tables(store: EventStore) -> None:
    log = all_events(store)
    for name, tables in (("cat", {"table:t1", "table:t2"}), ("ann", {"table:t1"})):
        read = check(export(store.engine, scope_of(player=name)), log)
        streams = {f"account:player:{name}"} | tables
        assert [e["position"] for e in read.events] == [
            r.position for r in log if r.stream in streams
        ]
        assert {e["stream"] for e in read.events} == streams
        assert read.header["scope"]["player"] == name
        assert read.closing["money"][f"player:{name}"]["deposited"] == 5000 + (name == "ann")


def test_same_log_same_bytes_however_paged(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    scopes = [
        scope_of(everything=True),
        scope_of(table="t1"),
        scope_of(player="cat"),
        scope_of(player="bob", since=at(10), until=at(30)),
        scope_of(since=at(20), until=at(40)),
    ]
    before = [export(store.engine, s) for s in scopes]
    assert before == [export(store.engine, s) for s in scopes]
    monkeypatch.setattr(jsonl, "BATCH", 3)
    monkeypatch.setattr(jsonl, "CHUNK", 100)
    prepared = jsonl.prepare(store.engine, scopes[0], key=VERIFIER)
    pieces = list(prepared.chunks())
    assert len(pieces) > 10 and b"".join(pieces) == before[0]
    assert before == [export(store.engine, s) for s in scopes]
    monkeypatch.setattr(jsonl, "MERGED", 1)  # a player's streams read in position order
    assert before == [export(store.engine, s) for s in scopes]


def test_a_time_range_starts_from_each_tables_state(store: EventStore) -> None:
    log = all_events(store)
    read = check(export(store.engine, scope_of(since=at(20), until=at(40))), log)
    inside = [r for r in log if at(20) <= r.recorded_at < at(40)]
    assert [e["position"] for e in read.events] == [r.position for r in inside]
    assert not read.skips
    assert read.header["tree_start"]["size"] == inside[0].position - 1
    assert read.checkpoints and all(
        inside[0].position <= c["size"] <= inside[-1].position for c in read.checkpoints
    )
    assert {s["stream"] for s in read.snapshots} == {"table:t1", "table:t2"}
    for snap in read.snapshots:
        stream = [r for r in log if r.stream == snap["stream"]]
        before = stream[snap["version"] - 1]
        assert (snap["position"], snap["hash"]) == (before.position, before.hash)
        state = hz.fold(r.event() for r in stream[: snap["version"]])
        assert snap["state"] == json.loads(snapshots.encode_state(state))
        first = next(e for e in read.events if e["stream"] == snap["stream"])
        assert first["version"] == snap["version"] + 1 and first["prev_hash"] == snap["hash"]
    assert read.header["rule_sets"] == {"english": hz.BUILTIN["english"].to_mapping()}


def test_a_table_since_a_time_uses_the_cached_snapshot_state_as_the_fold(
    store: EventStore,
) -> None:
    log = all_events(store)
    stream = [r for r in log if r.stream == "table:t1"]
    middle = next(r for r in stream if r.recorded_at >= stream[20].recorded_at)
    snapshots.save(store, "table:t1", hz.fold(r.event() for r in stream[:12]))
    read = check(export(store.engine, scope_of(table="t1", since=middle.recorded_at)), log)
    (snap,) = read.snapshots
    assert snap["version"] == middle.version - 1
    state = hz.fold(r.event() for r in stream[: snap["version"]])
    assert snap["state"] == json.loads(snapshots.encode_state(state))
    assert read.events[0]["position"] == middle.position


def test_nothing_in_range_still_ties_to_the_log(store: EventStore) -> None:
    log = all_events(store)
    for scope in (scope_of(table="t2", since="2027-01-01"), scope_of(since="2027-01-01")):
        read = check(export(store.engine, scope), log)
        assert read.header["first"] == len(log) + 1 and read.header["last"] == len(log)
        assert not read.events and not read.snapshots and read.closing["money"] == {}


def test_no_such_table_or_player(store: EventStore) -> None:
    for scope in (scope_of(table="t9"), scope_of(player="zed")):
        with pytest.raises(NotFound):
            jsonl.prepare(store.engine, scope, key=VERIFIER)


def test_an_empty_log_has_nothing_to_export(engine: sa.Engine) -> None:
    with pytest.raises(NotFound):
        jsonl.prepare(engine, scope_of(everything=True), key=VERIFIER)


@pytest.mark.parametrize(
    ("asked", "field"),
    [
        ({"table": "t1", "player": "ann"}, "player"),
        ({"table": "t1", "everything": True}, "all"),
        ({"everything": True, "since": "2026-01-01"}, "since"),
        ({}, "scope"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-30"}, "since"),
        ({"until": "2026-01-01T25:00"}, "until"),
        ({"since": "2026-01-02", "until": "2026-01-01"}, "until"),
        ({"since": "2026-01-01T10:00+01:00", "until": "2026-01-01T09:00Z"}, "until"),
        ({"table": "../etc"}, "table"),
        ({"player": "a" * 65}, "player"),
    ],
)
def test_scopes_that_cannot_be(asked: dict[str, Any], field: str) -> None:
    with pytest.raises(ScopeError) as caught:
        scope_of(**asked)
    assert caught.value.field == field


def test_times_are_held_as_recorded_at_is_written() -> None:
    assert scope_of(since="2026-11-23").since == "2026-11-23T00:00:00.000000Z"
    assert scope_of(since="2026-11-23T15:02:11+01:00").since == "2026-11-23T14:02:11.000000Z"
    assert scope_of(until="2026-11-23T14:02:11.5").until == "2026-11-23T14:02:11.500000Z"
    assert scope_of(table="t1", until="2026-11-23T14:02Z").filename("jsonl") == (
        "hazard-table-t1-to-20261123T140200Z.jsonl"
    )


def test_a_key_that_did_not_sign_the_log_is_refused(store: EventStore) -> None:
    from ledger.store.log.keys import Signer

    with pytest.raises(ValueError, match="did not sign"):
        jsonl.prepare(
            store.engine, scope_of(everything=True), key=Signer.generate("x.y/z").verifier
        )


def test_writes_during_an_export_are_not_in_it(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "BATCH", 5)
    monkeypatch.setattr(jsonl, "CHUNK", 200)
    log = all_events(store)
    whole = export(store.engine, scope_of(everything=True))
    club = Club(Book(store))
    for scope in (scope_of(everything=True), scope_of(player="bob")):
        prepared = jsonl.prepare(store.engine, scope, key=VERIFIER)
        chunks = prepared.chunks()
        got = [next(chunks)]
        club.account_command("bob", Deposited, 7, "setter")  # while it is being read
        got.extend(chunks)
        data = b"".join(got)
        check(data, log)
        if scope.kind == "all":
            assert data == whole
        log = all_events(store)
        whole = export(store.engine, scope_of(everything=True))


def test_closing_early_ends_the_read(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "CHUNK", 100)
    pool = store.engine.pool
    held = pool.checkedout()  # type: ignore[attr-defined]  # the store's idle writers
    prepared = jsonl.prepare(store.engine, scope_of(everything=True), key=VERIFIER)
    chunks = prepared.chunks()
    next(chunks)
    assert pool.checkedout() == held  # type: ignore[attr-defined]  # none between pages
    chunks.close()  # the client went away
    with pytest.raises(RuntimeError, match="closed"):
        next(prepared.chunks())
    prepared.close()  # twice is fine


def test_the_header_key_is_the_signing_keys_by_default(store: EventStore) -> None:
    prepared = jsonl.prepare(store.engine, scope_of(table="t2"))
    header = json.loads(next(prepared.chunks()).split(b"\n")[0])
    prepared.close()
    assert header["key"] == VERIFIER.text()
