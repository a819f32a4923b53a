"""The verifiable export (ledger.exports.jsonl), on SQLite and PostgreSQL: each scope's
file has the lines docs/export-format.md says, every hash in it recomputes, its tree
ties to the signed checkpoint, skipped positions are the right subtrees, a partial
export starts from the table's true state, and the same log exports to the same bytes
however it is paged, even while it is written to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.book import Book
from ledger.exports import jsonl
from ledger.exports.scope import NotFound, ScopeError, scope_of
from ledger.service import Club
from ledger.store import codec, db, snapshots
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import merkle
from ledger.store.vocabulary import Deposited
from tests.ledger.exportkit import WRITES, all_events, at, evening, export, money
from tests.ledger.formatkit import check
from tests.signing import VERIFIER


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    yield from evening(engine)


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
    # The table's events, and the seal at the log's head, which its closing's head
    # proof is against: the file runs to the head, t1 closed long before.
    head = log[-1]
    assert head.stream == "log" and mine[-1].position < head.position
    assert read.header["first"] == mine[0].position and read.header["last"] == head.position
    assert [e["position"] for e in read.events] == [r.position for r in [*mine, head]]
    assert read.skips and not read.checkpoints and not read.snapshots
    skipped = {p for s in read.skips for p in range(s["from"], s["to"] + 1)}
    assert skipped == {r.position for r in log if mine[0].position < r.position < head.position
                       and r.stream != "table:t1"}  # fmt: skip
    assert read.closing["consistency"] == []  # the file ends at the head's checkpoint
    (proof,) = read.closing["heads"]["end"]["proofs"]
    assert proof["head"] == ["stream", "table:t1", mine[-1].version, mine[-1].hash]
    assert read.closing["heads"]["end"]["position"] == head.position
    assert read.closing["money"] == money(store, {r.position for r in mine})


def test_a_player_has_their_account_and_their_tables(store: EventStore) -> None:
    log = all_events(store)
    for name, tables in (("cat", {"table:t1", "table:t2"}), ("ann", {"table:t1"})):
        read = check(export(store.engine, scope_of(player=name)), log)
        streams = {f"account:player:{name}"} | tables
        assert [e["position"] for e in read.events] == [
            r.position for r in log if r.stream in streams
        ] + [log[-1].position]  # and the seal at the head, its proofs' end
        assert {e["stream"] for e in read.events} == streams | {"log"}
        proven = [p["head"][:2] for p in read.closing["heads"]["end"]["proofs"]]
        assert ["account", f"player:{name}"] in proven
        assert sorted(["stream", s] for s in streams) == sorted(
            p for p in proven if p[0] == "stream"
        )
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
    # Each cut proven by the event on its other side: the seal of the write before, the
    # first event of the write after.
    before, after = log[inside[0].position - 2], log[inside[-1].position]
    assert [e["position"] for e in read.edges] == [before.position, after.position]
    assert before.stream == "log" and before.recorded_at < at(20) <= after.recorded_at
    assert read.header["tree_start"]["size"] == before.position - 1
    assert read.checkpoints and all(
        before.position <= c["size"] <= inside[-1].position for c in read.checkpoints
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
    # The seal before `since` that the head proofs start from, then the table's events.
    start, first = read.events[:2]
    assert (
        start["stream"] == "log" and start["position"] == read.closing["heads"]["start"]["position"]
    )
    assert start["recorded_at"] < middle.recorded_at and first["position"] == middle.position


def test_nothing_in_range_still_ties_to_the_log(store: EventStore) -> None:
    log = all_events(store)
    # A range after the last event: the file is its leading edge, the log's last seal.
    read = check(export(store.engine, scope_of(since="2027-01-01")), log)
    assert read.header["first"] == read.header["last"] == len(log)
    assert [e["position"] for e in read.edges] == [len(log)] and not read.events
    assert not read.snapshots and read.closing["money"] == {}
    # A table after its last event: nothing of it, and its head unmoved since the last
    # seal before `since`, which is the head's, at the end of the file.
    read = check(export(store.engine, scope_of(table="t2", since="2027-01-01")), log)
    assert [e["stream"] for e in read.events] == ["log"] and not read.snapshots
    heads = read.closing["heads"]
    assert heads["start"]["position"] == heads["end"]["position"] == len(log)
    assert heads["start"]["proofs"] == heads["end"]["proofs"]
    assert read.closing["money"] == {}


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


def test_from_the_first_position_the_tables_come_from_their_openings(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file from position 1 finds its tables along the index of their openings, not
    by a scan of the events: the same tables at every size of the log, and the same
    bytes as with the scan."""
    log = all_events(store)
    with store.engine.connect() as conn:
        for last in range(0, len(log) + 1):
            tables, rule_sets = jsonl._openings(conn, last)
            assert tables == jsonl._tables_between(conn, 1, last)
            assert rule_sets == jsonl._opened_rules(conn, list(tables))
    scopes = [scope_of(everything=True), scope_of(until=at(30)), scope_of(until=at(1))]
    fast = [export(store.engine, s) for s in scopes]
    # The scan, and the rule sets read again by stream (`None`: `_write` reads them).
    monkeypatch.setattr(
        jsonl, "_openings", lambda conn, last: (jsonl._tables_between(conn, 1, last), None)
    )
    assert fast == [export(store.engine, s) for s in scopes]


def test_the_whole_logs_header_reads_each_table_opening_once(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a whole log's first line, the only events read are the tables' openings,
    each once, in one pass along their index: the header's tables and rule sets from the
    same rows (the tables first, then their openings again by stream, read each twice,
    and held the first byte of a 10^7-event log to 410 ms; docs/performance.md)."""
    with store.engine.connect() as conn:
        opened = conn.execute(
            sa.text("SELECT COUNT(*) FROM events WHERE type = 'TableOpened'")
        ).scalar_one()
    assert opened >= 2
    rows: list[int] = []
    fetch = db.fetch

    def counted(conn: sa.Connection, sql: str, params: Any = ()) -> list[Any]:
        found = fetch(conn, sql, params)
        if " FROM events " in sql + " ":
            rows.append(len(found))
        return found

    monkeypatch.setattr(db, "fetch", counted)
    chunks = jsonl.prepare(store.engine, scope_of(everything=True), key=VERIFIER).chunks()
    next(chunks)
    chunks.close()
    assert sum(rows) == opened and len(rows) == 1


@pytest.mark.parametrize("scope", [{"everything": True}, {"table": "t1"}, {"since": at(20)}])
def test_the_header_is_handed_on_before_an_event_is_read(
    store: EventStore, monkeypatch: pytest.MonkeyPatch, scope: dict[str, Any]
) -> None:
    """The first bytes a client gets are the header (and the tables' snapshots), sent
    before the body's first page is read: the time to the first byte is the head's
    reads, however long the log or slow its first page."""
    whole = export(store.engine, scope_of(**scope))
    read: list[str] = []
    pages = jsonl._Body._pages

    def counted(body: Any) -> Iterator[list[Any]]:
        read.append("page")
        yield from pages(body)

    monkeypatch.setattr(jsonl._Body, "_pages", counted)
    chunks = jsonl.prepare(store.engine, scope_of(**scope), key=VERIFIER).chunks()
    first = next(chunks)
    assert read == []
    lines = [json.loads(line) for line in first.splitlines()]
    assert lines[0]["record"] == "header"
    assert {line["record"] for line in lines[1:]} <= {"snapshot"}
    assert first + b"".join(chunks) == whole


@pytest.mark.parametrize("scope", [{"everything": True}, {"table": "t1"}, {"player": "cat"}])
def test_every_line_is_the_canonical_form_of_what_it_says(
    store: EventStore, scope: dict[str, Any]
) -> None:
    """The lines written by hand around the stored payload text (the export's hot loop)
    are byte for byte what the canonical encoder makes of them, as every other line is."""
    lines = export(store.engine, scope_of(**scope)).splitlines(keepends=True)
    assert len(lines) > 10
    for line in lines:
        assert codec.canonical(json.loads(line)) + b"\n" == line
