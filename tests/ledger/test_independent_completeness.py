"""What a file proves whole (docs/export-format.md, "Seals"), held by two checkers at
once: the independent one written from the page alone (tests/ledger/
test_independent_export_check.py) and the ledger's offline verifier. The audit's hidden
exports, made again by a forger who holds the bank's database (tests/ledger/
forgerykit.py: it drops lines and makes skips, header and closing whole again, with head
proofs at any seal it likes), must be rejected by both, at the same line; a file cut
short at an older checkpoint verifies, and says when that checkpoint was issued.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.accounts import transfers_of
from ledger.books.book import Book
from ledger.exports import offline
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store import codec
from ledger.store.eventstore import EventStore
from ledger.store.log.heads import Head, Heads
from ledger.store.vocabulary import Withdrawn
from tests.ledger.exportkit import at, export, play, play_disputes, ticking
from tests.ledger.forgerykit import Log, Records, recorded, refiled
from tests.ledger.independentkit import (
    Checker,
    Rejected,
    head_leaf,
    included,
    mth,
)
from tests.signing import SIGNER, VERIFIER


@dataclass
class Evening:
    """`play`'s evening and t3's disputes, t3 closed after them, then ann's withdrawal of
    1,500, the last write: what the audit's hidden exports hid."""

    log: Log
    key: str
    whole: Records
    """The whole log's export: every event's line, the seals' among them."""

    def file(self, **scope: Any) -> Records:
        return records(export(self.log.engine, scope_of(**scope)))

    def seal_before(self, position: int) -> dict[str, Any]:
        """The line of the last seal before `position`: the end of the write before."""
        return [r for r in self.seals() if r["position"] < position][-1]

    def seals(self) -> Records:
        return [r for r in self.whole if r["record"] == "event" and r["stream"] == "log"]

    def seal_after(self, position: int) -> dict[str, Any]:
        """The line of the first seal at or after `position`: the end of its write."""
        return next(r for r in self.seals() if r["position"] >= position)


@pytest.fixture
def evening(engine: sa.Engine) -> Iterator[Evening]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    play(club)
    play_disputes(club)
    club.command("t3", "croupier:cecil", lambda state, _reads: hz.close(state))
    club.account_command("ann", Withdrawn, 1500, "setter")
    store.close()
    whole = records(export(engine, scope_of(everything=True)))
    yield Evening(Log.of(engine), SIGNER.verifier.text(), whole)


def records(data: bytes) -> Records:
    return [json.loads(line) for line in data.splitlines()]


def events(recs: Records, **where: Any) -> Records:
    return [
        r for r in recs if r["record"] == "event" and all(r.get(k) == v for k, v in where.items())
    ]


def rejected(evening: Evening, data: bytes) -> tuple[Rejected, offline.Disagreement]:
    """Both checkers reject the file, at the same line."""
    with pytest.raises(Rejected) as mine:
        Checker(evening.key).check(data)
    with pytest.raises(offline.Disagreement) as theirs:
        offline.verify(data.splitlines(keepends=True), VERIFIER)
    assert mine.value.line == theirs.value.line, (str(mine.value), str(theirs.value))
    return mine.value, theirs.value


def accepted(evening: Evening, data: bytes) -> tuple[dict[str, Any], offline.Verified]:
    return Checker(evening.key).check(data), offline.verify(
        data.splitlines(keepends=True), VERIFIER
    )


def test_the_checkers_heads_tree_and_inclusion_proofs_are_the_ledgers() -> None:
    """The checker's RFC 9162 root and inclusion check, written from the RFC, against
    the ledger's heads tree for every size up to 40 and every leaf: each proof leads
    to the root, and none proves another leaf or another place."""
    heads = Heads()
    for size in range(1, 41):
        heads.set(Head("stream", f"table:t{size}", size, f"{size:064x}"))
        leaves = [head_leaf(h.view()) for h in heads.heads]
        assert mth(leaves) == heads.root()
        for i in range(size):
            path = heads.prove(i)
            assert included(leaves[i], i, size, path, heads.root())
            assert not included(leaves[i - 1], i, size, path, heads.root()) or size == 1
            assert not included(leaves[i], i + 1, size, path, heads.root())
            if size > 1:
                assert not included(leaves[i], i, size, path[:-1], heads.root())


def test_every_honest_file_is_whole_to_both(evening: Evening) -> None:
    scopes: list[dict[str, Any]] = [
        {"everything": True},
        {"table": "t3"},
        {"table": "t1", "since": at(10), "until": at(30)},
        {"player": "bob"},
        {"player": "cat", "since": at(12), "until": at(35)},
        {"since": at(31), "until": at(40)},
        {"until": at(20)},
        {"since": at(60)},
    ]
    for scope in scopes:
        mine, theirs = accepted(evening, export(evening.log.engine, scope_of(**scope)))
        assert mine["complete"] and theirs.complete, scope
        assert mine["issued_at"] == theirs.checkpoint_time


def _tail_hidden(evening: Evening) -> tuple[Records, Records]:
    """t3's export, and its lines up to the end of its first round: its second round,
    its three disputes and its closing are what the forger hides."""
    t3 = evening.file(table="t3")
    second = events(t3, stream="table:t3", type="MainCalled")[1]["version"]
    kept = [r for r in t3 if r["record"] != "event" or r["version"] < second]
    hidden = {r["type"] for r in events(t3) if r["version"] >= second}
    assert {"DisputeOpened", "BetAdjusted", "TableClosed", "DiceThrown"} <= hidden
    return t3, kept


def test_a_tables_export_with_its_tail_hidden_is_rejected(evening: Evening) -> None:
    log = evening.log
    t3, kept = _tail_hidden(evening)
    head = t3[-2]  # the head's seal, which the honest closing proves t3's head at
    assert head["stream"] == "log" and head["position"] == t3[-1]["checkpoint"]["size"]
    last = events(kept, stream="table:t3")[-1]

    # Its proofs as they were: the end seal's head of t3 is past the file's last event.
    data = refiled(log, [*kept[:-1], head, kept[-1]])
    mine, theirs = rejected(evening, data)
    assert mine.line == len(records(data))  # the closing's, which names the heads
    hidden = f"versions {last['version'] + 1}..{events(t3, stream='table:t3')[-1]['version']}"
    assert "table:t3" in str(mine) and f"{hidden} were left out" in theirs.reason

    # The head at the end of the first round is proven at the seal that ended its write,
    # and the file ends there; the closing's checkpoint is still the head's.
    seal = evening.seal_after(last["position"])
    proofs = log.proofs(seal["position"], [("stream", "table:t3")])
    assert proofs["proofs"][0]["head"][2] == last["version"]
    early = [*kept[:-1], seal, kept[-1]]
    data = refiled(log, early, last=seal["position"], heads={"end": proofs})
    mine, theirs = rejected(evening, data)
    assert "not the log's head" in theirs.reason

    # ... and names the seal after it as `next`, as if the file stopped at an `until`.
    after = evening.seal_after(seal["position"] + 1)
    data = refiled(
        log,
        [*early[:-1], after, kept[-1]],
        last=after["position"],
        heads={"end": proofs, "next": after["position"]},
    )
    mine, theirs = rejected(evening, data)
    assert records(data)[mine.line - 1]["position"] == after["position"]

    # The head's proof kept, its head rewritten to where the file stops.
    closing = dict(kept[-1])
    proof = dict(closing["heads"]["end"]["proofs"][0])
    proof["head"] = ["stream", "table:t3", last["version"], last["hash"]]
    closing["heads"] = {"end": {**closing["heads"]["end"], "proofs": [proof]}}
    mine, theirs = rejected(evening, refiled(log, [*kept[:-1], head, closing]))
    assert "does not lead to" in str(mine) and "does not lead to its root" in theirs.reason


def test_a_table_cut_at_an_older_checkpoint_says_when_it_was_issued(evening: Evening) -> None:
    """The forger's only way to a file that verifies: the log as it stood at the seal it
    proves, which the verdict dates."""
    log = evening.log
    t3, kept = _tail_hidden(evening)
    seal = evening.seal_after(events(kept, stream="table:t3")[-1]["position"])
    proofs = log.proofs(seal["position"], [("stream", "table:t3")])
    data = refiled(
        log,
        [*kept[:-1], seal, kept[-1]],
        last=seal["position"],
        checkpoint=seal["position"],
        heads={"end": proofs},
    )
    mine, theirs = accepted(evening, data)
    issued = log.checkpoints[seal["position"]]["issued_at"]
    assert mine["issued_at"] == theirs.checkpoint_time == issued < t3[-1]["checkpoint"]["issued_at"]
    assert any(f"issued {issued}" in line for line in theirs.lines())


def test_a_table_stripped_of_its_seals_is_rejected_and_relabelled_proves_nothing(
    evening: Evening,
) -> None:
    """A forger who drops the seals and the head proofs has a format 2 file without
    them, which both checkers reject; one who also calls it format 1 (the format before
    seals) has a file that verifies, and both say it proves nothing whole: the verdict
    prints that on its `complete:` line, where an honest file prints what it proves."""
    log = evening.log
    _, kept = _tail_hidden(evening)
    last = events(kept, stream="table:t3")[-1]["position"]
    stripped = refiled(log, kept, last=last, heads=None)
    rejected(evening, stripped)
    recs = records(stripped)
    recs[0]["format_version"] = 1
    mine, theirs = accepted(evening, refiled(log, recs))
    assert mine["complete"] == []
    (said,) = theirs.complete
    assert said.startswith("nothing proven: the file is in format 1")
    assert any("format 1" in t and "proves nothing" in t for t in theirs.trusted)


def test_a_players_statement_without_the_table_where_he_lost_is_rejected(
    evening: Evening,
) -> None:
    bob = evening.file(player="bob")
    lost = _net(bob, "player:bob", "table:t2")
    assert lost < 0
    kept = [r for r in bob if r.get("stream") != "table:t2"]
    closing = dict(kept[-1])
    end = closing["heads"]["end"]
    closing["heads"] = {
        "end": {**end, "proofs": [p for p in end["proofs"] if p["head"][1] != "table:t2"]}
    }
    data = refiled(evening.log, [*kept[:-1], closing])
    assert records(data)[-1]["money"]["player:bob"] != bob[-1]["money"]["player:bob"]
    mine, theirs = rejected(evening, data)
    assert mine.line == len(records(data))
    assert "player:bob" in str(mine) and "1 were left out" in theirs.reason


def _net(recs: Records, account: str, stream: str) -> int:
    """What the stream's events in the file moved into `account` less what they moved
    out of it."""
    net = 0
    for r in events(recs, stream=stream):
        for t in transfers_of(stream, recorded(r).event()):
            net += (t.target == account) * t.amount - (t.source == account) * t.amount
    return net


def test_a_players_statement_without_her_own_withdrawal_is_rejected(evening: Evening) -> None:
    log = evening.log
    ann = evening.file(player="ann")
    (withdrawal,) = events(ann, type="Withdrawn")
    own = events(ann, stream="account:player:ann")
    assert own[-1] is withdrawal  # her stream ends with it: nothing after it shows the gap
    kept = [r for r in ann if r is not withdrawal]
    mine, theirs = rejected(evening, refiled(log, kept))
    assert "player:ann" in str(mine) and "player:ann" in theirs.reason

    # Proven at the seal before it, with the head's checkpoint: not the log's head.
    seal = evening.seals()[-2]
    assert seal["position"] < withdrawal["position"]
    wanted = [("account", "player:ann"), *{("stream", r["stream"]) for r in events(kept)}]
    proofs = log.proofs(seal["position"], wanted)
    before = [r for r in kept[:-1] if r.get("stream") != "log"]
    early = [*before, seal, kept[-1]]
    rejected(evening, refiled(log, early, last=seal["position"], heads={"end": proofs}))

    # At that seal's own checkpoint: ann's statement as it stood then, dated so.
    data = refiled(
        log, early, last=seal["position"], checkpoint=seal["position"], heads={"end": proofs}
    )
    found, verified = accepted(evening, data)
    assert found["issued_at"] == verified.checkpoint_time < ann[-1]["checkpoint"]["issued_at"]


def test_a_whole_log_with_its_checkpoint_lines_removed_is_rejected(evening: Evening) -> None:
    whole = evening.whole
    lines = [codec.canonical(r) + b"\n" for r in whole]
    checkpoints = [n for n, r in enumerate(whole) if r["record"] == "checkpoint"]
    middle = checkpoints[len(checkpoints) // 2]
    assert whole[middle - 1]["stream"] == "log"
    mine, theirs = rejected(evening, b"".join(lines[:middle] + lines[middle + 1 :]))
    assert mine.line == theirs.line == middle  # the seal's line, numbered from 1
    assert "checkpoint" in theirs.reason and "missing" in theirs.reason
    bare = b"".join(line for n, line in enumerate(lines) if n not in set(checkpoints))
    mine, theirs = rejected(evening, bare)
    first_seal = whole.index(evening.seals()[0]) + 1
    assert mine.line == theirs.line == first_seal


def test_a_whole_log_cut_short_at_an_older_checkpoint_says_when_it_was_issued(
    evening: Evening,
) -> None:
    whole = evening.whole
    sizes = [r["size"] for r in whole if r["record"] == "checkpoint"]
    older = sizes[len(sizes) // 2]
    data = refiled(evening.log, whole, last=older, checkpoint=older)
    mine, theirs = accepted(evening, data)
    issued = evening.log.checkpoints[older]["issued_at"]
    assert issued < whole[-1]["checkpoint"]["issued_at"]
    assert mine["issued_at"] == theirs.checkpoint_time == issued
    assert any(f"issued {issued}" in line for line in theirs.lines())


def test_a_whole_log_cut_short_cannot_claim_a_later_checkpoint(evening: Evening) -> None:
    """Cut at an older seal but closed by the head's checkpoint, with the consistency
    proof from the cut to it: the file does not hold every seal up to its checkpoint,
    which a whole log must ("all holds every event and every seal"), and its verdict
    would date it by the newest checkpoint."""
    whole = evening.whole
    sizes = [r["size"] for r in whole if r["record"] == "checkpoint"]
    data = refiled(evening.log, whole, last=sizes[len(sizes) // 2])
    mine, theirs = rejected(evening, data)
    assert mine.line == theirs.line == len(records(data))


def test_a_range_whose_edge_is_dropped_or_moved_is_rejected(evening: Evening) -> None:
    log = evening.log
    since, until = at(31), at(40)
    span = evening.file(since=since, until=until)
    leading, trailing = (r for r in span if r["record"] == "edge")
    assert leading["recorded_at"] < since <= trailing["recorded_at"]
    inside = events(span)

    # Dropped: the range then starts, or stops, with nothing to prove its cut.
    for dropped, bounds in (
        (leading, {"first": leading["position"] + 1}),
        (trailing, {"last": trailing["position"] - 1}),
    ):
        data = refiled(log, [r for r in span if r is not dropped], **bounds)
        mine, theirs = rejected(evening, data)
        assert mine.line == theirs.line == len(records(data))

    # Moved in: the last write inside the range stands as its cut (its first event as
    # the edge), recorded before until.
    last_write = _write(inside, inside[-1])
    moved = {**last_write[0], "record": "edge"}
    recs = [moved if r is last_write[0] else r for r in span if r is not trailing]
    data = refiled(log, recs, last=moved["position"])
    mine, _ = rejected(evening, data)
    assert records(data)[mine.line - 1] == moved

    # ... or the first write inside it (its seal as the edge, its table's snapshot made
    # again to follow it), recorded at since.
    first_write = _write(inside, inside[0])
    moved = {**first_write[-1], "record": "edge"}
    remade = {
        r["stream"]: log.snapshot(r["stream"], r["version"])
        for r in first_write
        if r["stream"].startswith("table:")
    }
    assert set(remade) <= {r["stream"] for r in span if r["record"] == "snapshot"}
    recs = [
        remade.get(r["stream"], r) if r["record"] == "snapshot" else r
        for r in span
        if r is not leading and not any(r is w for w in first_write[:-1])
    ]
    data = refiled(
        log, [moved if r is first_write[-1] else r for r in recs], first=moved["position"]
    )
    mine, _ = rejected(evening, data)
    assert records(data)[mine.line - 1] == moved

    # Moved out: the write before the range is taken into it, recorded before since.
    taken = _write(evening.whole, leading)
    assert not any(r["stream"].startswith("table:") for r in taken)  # no snapshot to remake
    earlier = {**evening.seal_before(taken[0]["position"]), "record": "edge"}
    recs = [
        span[0],
        earlier,
        *taken,
        *(r for r in span[1:] if r is not leading),
    ]
    data = refiled(log, recs, first=earlier["position"])
    mine, _ = rejected(evening, data)
    assert records(data)[mine.line - 1] == taken[0]


def _write(recs: Records, one: dict[str, Any]) -> Records:
    """The event lines (and edges) of `one`'s write: those recorded at its time."""
    return [
        r
        for r in recs
        if r["record"] in ("event", "edge") and r["recorded_at"] == one["recorded_at"]
    ]


def test_a_range_without_since_or_until_holds_the_log_from_its_start_or_to_its_head(
    evening: Evening,
) -> None:
    """A range with no `since` starts at position 1, and one with no `until` runs to its
    closing checkpoint: neither has an edge there, and neither may stop short. An event
    written as an edge would drop out of the range's counts and money (here the setter's
    first deposit, 100,000), and a range cut short would be held whole to a checkpoint it
    does not reach."""
    log = evening.log
    early = evening.file(until=at(20))
    first = events(early)[0]
    assert first["position"] == 1 and first["type"] == "Deposited"
    data = refiled(log, [{**r, "record": "edge"} if r is first else r for r in early])
    assert records(data)[-1]["money"]["setter"]["deposited"] == 0
    mine, theirs = rejected(evening, data)
    assert mine.line == theirs.line == 2

    late = evening.file(since=at(60))
    last = events(late)[-1]
    data = refiled(log, [{**r, "record": "edge"} if r is last else r for r in late])
    mine, _ = rejected(evening, data)
    assert records(data)[mine.line - 1]["position"] == last["position"]

    # Started late: the tables' snapshots made again where the file now starts.
    start = events(early)[len(events(early)) // 2]["position"]
    begun: dict[str, int] = {}
    for r in events(early):
        if r["position"] >= start and r["stream"].startswith("table:"):
            begun.setdefault(r["stream"], r["version"])
    remade = [log.snapshot(s, v - 1) for s, v in begun.items() if v > 1]
    assert remade
    data = refiled(log, [early[0], *remade, *early[1:]], first=start)
    mine, theirs = rejected(evening, data)
    assert mine.line == theirs.line == len(records(data))

    # Cut short, closed by the same checkpoint through a consistency proof.
    data = refiled(log, late, last=events(late)[len(events(late)) // 2]["position"])
    mine, theirs = rejected(evening, data)
    assert mine.line == theirs.line == len(records(data))


def test_a_statement_whose_start_seal_is_after_since_is_rejected(evening: Evening) -> None:
    """The start seal is the last recorded before `since`: one after it would let the
    file leave out what came between."""
    log = evening.log
    since, until = at(12), at(35)
    cat = evening.file(player="cat", since=since, until=until)
    heads = cat[-1]["heads"]
    (start,) = (r for r in cat if r.get("position") == heads["start"]["position"])
    later = evening.seal_after(next(r for r in events(cat) if r["stream"] != "log")["position"])
    assert start["recorded_at"] < since <= later["recorded_at"]
    wanted = [(p["head"][0], p["head"][1]) for p in heads["start"]["proofs"]]
    closing = {**cat[-1], "heads": {**heads, "start": log.proofs(later["position"], wanted)}}
    data = refiled(log, [*(r for r in cat[:-1] if r is not start), later, closing])
    mine, _ = rejected(evening, data)
    assert records(data)[mine.line - 1] == later
