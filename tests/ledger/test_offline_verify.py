"""The offline check (ledger.exports.offline, what `hazard verify FILE` runs: the command
is tests/cli/test_verify.py's): a clean export of each scope verifies
with the right counts and money, on SQLite and PostgreSQL; a tampered copy fails at the
first line that differs, with a reason a person understands. Tampering comes in two
kinds: naive (the event edited, its leaf left: the leaf catches it) and re-hashed (the
leaf and the stream's chain recomputed, so that only the engine's replay of the table,
or the tree at the closing record, can catch it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import engine as hz
from ledger.books.book import Book
from ledger.exports import offline
from ledger.exports.offline.money import MOVES_MONEY
from ledger.exports.scope import scope_of
from ledger.service import Club
from ledger.store.eventstore import EventStore, Recorded
from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, parse_note, sign_checkpoint
from ledger.store.log.keys import Signer
from tests.ledger.exportkit import at, export, money, play, ticking
from tests.ledger.offlinekit import (
    Records,
    document,
    encoded,
    exported_files,
    fails,
    line_of,
    records,
    rehash,
    settled,
)
from tests.signing import ORIGIN, SIGNER, VERIFIER

PLACED = {"CasterStaked", "StakeLaid", "OddsLaid", "SideBetOffered"}


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    play(Club(Book(store)))
    yield store
    store.close()


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def rounds_of(events: list[Recorded], upto: int | None = None) -> int:
    """Rounds a table has finished by version `upto` (all of them by default)."""
    state = hz.fold(r.event() for r in events if upto is None or r.version <= upto)
    return state.wins + state.losses + state.abandoned


# -- clean exports ----------------------------------------------------------------------


def test_the_whole_log_verifies(store: EventStore) -> None:
    log = store.read_all(0, limit=10_000)
    verified = offline.verify(lines_of(export(store.engine, scope_of(everything=True))), VERIFIER)
    assert (verified.first, verified.last, verified.events) == (1, len(log), len(log))
    assert verified.skipped == 0 and verified.checkpoint_size == len(log)
    assert verified.tables == 2
    tables = {s: [r for r in log if r.stream == s] for s in ("table:t1", "table:t2")}
    assert verified.rounds == sum(rounds_of(events) for events in tables.values())
    assert verified.bets == sum(r.type in PLACED for r in log)
    assert verified.settlements == sum(r.type == "BetSettled" for r in log)
    positions = {r.position for r in log}
    assert _figures(verified) == money(store, positions)
    assert verified.money["player:ann"].deposited == 5001
    assert verified.money["player:ann"].net == 5001 + verified.money["player:ann"].paid - (
        verified.money["player:ann"].staked
    )
    assert verified.checkpoints > 40  # every write's checkpoint, checked on the way
    # The whole log, and the key given: only that, without a policy, the file rests on
    # the bank's key alone.
    [alone] = verified.trusted
    assert alone.startswith("the file is checked against the bank's key alone")
    printed = "\n".join(verified.lines())
    assert printed.startswith("verified\n") and "player:ann" in printed


def test_without_a_key_the_files_own_is_said_to_be_trusted(store: EventStore) -> None:
    verified = offline.verify(lines_of(export(store.engine, scope_of(table="t2"))))
    assert verified.key == VERIFIER and not verified.key_given
    assert any("the signing key is the one the file names" in s for s in verified.trusted)


def test_a_table_verifies_with_the_rest_skipped(store: EventStore) -> None:
    log = store.read_all(0, limit=10_000)
    mine = [r for r in log if r.stream == "table:t1"]
    verified = offline.verify(lines_of(export(store.engine, scope_of(table="t1"))), VERIFIER)
    # The table's events, and the seal at the head its closing's proof is against.
    assert (verified.first, verified.last) == (mine[0].position, len(log))
    assert verified.events == len(mine) + 1 and verified.tables == 1
    assert verified.skipped == len(log) - mine[0].position + 1 - len(mine) - 1
    (whole,) = verified.complete
    assert whole.startswith(f"table:t1 (versions 1..{mine[-1].version}), up to checkpoint ")
    assert verified.rounds == rounds_of(mine)
    assert verified.bets == sum(r.type in PLACED for r in mine)
    assert verified.checkpoint_size == len(log)  # the newest, through the consistency proof
    assert _figures(verified) == money(store, {r.position for r in mine})
    said = " ".join(verified.trusted)
    assert f"the {mine[0].position - 1} events before position {mine[0].position}" in said
    assert f"{verified.skipped} positions outside the scope were skipped" in said


def test_a_player_verifies(store: EventStore) -> None:
    log = store.read_all(0, limit=10_000)
    streams = {"account:player:cat", "table:t1", "table:t2"}
    verified = offline.verify(lines_of(export(store.engine, scope_of(player="cat"))), VERIFIER)
    assert verified.events == sum(r.stream in streams for r in log) + 1  # and the head seal
    assert verified.tables == 2
    (whole,) = verified.complete
    assert "account player:cat (" in whole and "account:player:cat (versions 1.." in whole
    assert _figures(verified) == money(store, {r.position for r in log if r.stream in streams})
    assert verified.money["player:cat"].deposited == 5000


def test_a_range_mid_log_starts_from_the_snapshots(store: EventStore) -> None:
    log = store.read_all(0, limit=10_000)
    inside = [r for r in log if at(31) <= r.recorded_at < at(40)]
    data = export(store.engine, scope_of(since=at(31), until=at(40)))
    verified = offline.verify(lines_of(data), VERIFIER)
    # With the event either side of the range, its edges.
    assert (verified.first, verified.last) == (inside[0].position - 1, inside[-1].position + 1)
    assert verified.events == len(inside) and verified.tables == 1
    t1 = [r for r in log if r.stream == "table:t1"]
    start = next(r.version for r in inside if r.stream == "table:t1") - 1
    end = max(r.version for r in inside if r.stream == "table:t1")
    assert verified.rounds == rounds_of(t1, end) - rounds_of(t1, start) == 2
    assert _figures(verified) == money(store, {r.position for r in inside})
    said = " ".join(verified.trusted)
    assert f"table:t1's state at version {start}" in said
    assert "account:player:bob" in said and "taken as given" in said  # its chain, mid-way


def test_nothing_in_the_range_verifies(store: EventStore) -> None:
    verified = offline.verify(lines_of(export(store.engine, scope_of(since="2027-01-01"))))
    # The one line of its body is the event before it, the log's last, an edge.
    assert verified.events == 0 and verified.last == verified.first


def _figures(verified: offline.Verified) -> dict[str, dict[str, int]]:
    return {
        account: offline.figures_view([getattr(m, f) for f in offline.FIGURES])
        for account, m in verified.money.items()
    }


# -- tampering: one export made once, edited in many ways ----------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    yield from exported_files(tmp_path_factory)


def _to_bob(payload: dict[str, Any]) -> None:
    payload["winner"] = payload["transfers"][0]["target"] = "bob"


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    # what is edited: (the edit, the event it is made on (type:bet or position), the
    # engine's words when it is re-hashed)
    "die": (lambda r: r["payload"].update(die2=2), "DiceThrown:20", "decides no bet"),
    "amount": (
        lambda r: r["payload"]["transfers"][0].update(amount=2100),
        "BetSettled:b8",
        "BetSettled b8 pays player ann 2100, but the throw 1+3",
    ),
    "winner": (
        lambda r: _to_bob(r["payload"]),
        "BetSettled:b9",
        "BetSettled b9 pays player bob 800, but the throw 1+3",
    ),
}  # fmt: skip


def edit_target(recs: Records, target: str) -> int:
    kind, _, which = target.partition(":")
    if kind == "DiceThrown":
        return line_of(recs, type=kind, stream="table:t1", version=int(which))
    return line_of(recs, type=kind, bet_id=which)


@pytest.mark.parametrize("scope", ["all", "t1"])
@pytest.mark.parametrize("what", sorted(EDITS))
def test_a_naive_edit_is_caught_by_the_leaf(files: dict[str, bytes], scope: str, what: str) -> None:
    recs = records(files[scope])
    change, target, _ = EDITS[what]
    number = edit_target(recs, target)
    change(recs[number - 1])
    caught = fails(encoded(recs))
    assert caught.line == number
    assert "does not hash to its leaf" in caught.reason


@pytest.mark.parametrize("scope", ["all", "t1"])
@pytest.mark.parametrize("what", sorted(EDITS))
def test_a_rehashed_edit_is_caught_by_the_engine(
    files: dict[str, bytes], scope: str, what: str
) -> None:
    recs = records(files[scope])
    change, target, words = EDITS[what]
    number = edit_target(recs, target)
    change(recs[number - 1])
    rehash(recs, number)
    caught = fails(encoded(recs))
    # The die: the throw is a command's input, so the engine runs it, and the first
    # settlement the file has after it is what no longer follows.
    expected = settled(recs, "b8") if what == "die" else number
    assert caught.line == expected, caught
    assert words in caught.reason and "at table t1" in caught.reason


def test_a_rehashed_deposit_is_caught_by_the_tree(files: dict[str, bytes]) -> None:
    recs = records(files["all"])
    number = line_of(recs, type="Deposited", stream="account:player:bob", version=3)
    recs[number - 1]["payload"]["amount"] = 1000
    rehash(recs, number)
    caught = fails(encoded(recs))
    # The seal its write ended with, right after it, is the first to disagree: bob's
    # account stream's head (and his chain of postings) are not the ones it commits.
    assert recs[caught.line - 1]["stream"] == "log" and caught.line == number + 1
    assert "the seal, or an event before it, was rewritten" in caught.reason


def test_a_rehashed_deposit_in_a_players_statement_is_caught_at_the_closing(
    files: dict[str, bytes],
) -> None:
    recs = records(files["bob"])
    number = line_of(recs, type="Deposited", stream="account:player:bob")
    recs[number - 1]["payload"]["amount"] = 1000
    rehash(recs, number)
    caught = fails(encoded(recs))
    assert caught.line == len(recs)
    assert "the lines build the tree with root" in caught.reason
    recs[-1]["root"] = _root(recs)  # the forger fixes the closing root too
    caught = fails(encoded(recs))
    assert caught.line == len(recs)
    assert caught.reason.startswith(f"closing record (line {len(recs)}): the tree of these")
    assert "does not prove: an event or hash was forged" in caught.reason


def _root(recs: Records) -> str:
    """The root the lines build, as the forger computes it."""
    header = recs[0]
    stack = [bytes.fromhex(h) for h in header["tree_start"]["hashes"]]
    size = header["tree_start"]["size"]

    def push(digest: bytes, width: int) -> None:
        nonlocal size
        n = size // width
        while n & 1:
            digest = merkle.node_hash(stack.pop(), digest)
            n >>= 1
        stack.append(digest)
        size += width

    for r in recs:
        if r["record"] == "event":
            push(bytes.fromhex(r["leaf"]), 1)
        elif r["record"] == "skip":
            for h in r["hashes"]:
                width = size & -size if size else 1 << (r["to"].bit_length() - 1)
                while size + width > r["to"]:
                    width >>= 1
                push(bytes.fromhex(h), width)
    root = stack[-1]
    for left in reversed(stack[:-1]):
        root = merkle.node_hash(left, root)
    return root.hex()


def test_a_deleted_line(files: dict[str, bytes]) -> None:
    lines = lines_of(files["all"])
    recs = records(files["all"])
    number, seal = next(
        (n, r) for n, r in enumerate(recs, 1) if r.get("stream") == "log" and r["position"] >= 30
    )
    at = seal["position"]
    del lines[number - 1]
    caught = fails(lines)
    assert caught.line == number
    # A write's seal, its last event: its checkpoint follows it.
    assert caught.reason == (
        f"a checkpoint of size {at} where the file is at position {at - 1}: position {at} is "
        "missing (a line was deleted?)"
    )
    del lines[number - 1]  # the checkpoint too
    caught = fails(lines)
    assert caught.line == number
    assert caught.reason == (
        f"position {at + 1} follows {at - 1}: position {at} is missing (a line was deleted?)"
    )


def test_two_lines_swapped(files: dict[str, bytes]) -> None:
    lines = lines_of(files["t1"])
    recs = records(files["t1"])
    number = line_of(recs, type="DiceThrown", version=20)
    lines[number - 1], lines[number] = lines[number], lines[number - 1]
    caught = fails(lines)
    assert caught.line == number
    position = recs[number - 1]["position"]
    assert "lines out of order" in caught.reason
    assert f"position {position + 1} comes before {position}" in caught.reason


def test_a_line_added(files: dict[str, bytes]) -> None:
    lines = lines_of(files["all"])
    number = line_of(records(files["all"]), position=12)
    lines.insert(number, lines[number - 1])
    caught = fails(lines)
    assert caught.line == number + 1
    assert caught.reason == "position 12 again: a line was repeated (added)"


def test_a_line_added_at_the_end(files: dict[str, bytes]) -> None:
    recs = records(files["all"])
    extra = dict(recs[-3], position=recs[0]["last"] + 1)
    recs.insert(len(recs) - 1, extra)
    caught = fails(encoded(recs))
    assert caught.line == len(recs) - 1 and "past the header's last" in caught.reason


def test_a_forged_leaf(files: dict[str, bytes]) -> None:
    recs = records(files["t1"])
    number = settled(recs, "b9")
    recs[number - 1]["leaf"] = "ab" * 32
    caught = fails(encoded(recs))
    assert caught.line == number and "does not hash to its leaf" in caught.reason


def test_a_forged_skip_hash(files: dict[str, bytes]) -> None:
    recs = records(files["t1"])
    number = next(n for n, r in enumerate(recs, 1) if r["record"] == "skip")
    recs[number - 1]["hashes"][0] = "cd" * 32
    caught = fails(encoded(recs))
    assert caught.line == len(recs) and "the lines build the tree with root" in caught.reason
    recs[-1]["root"] = _root(recs)
    caught = fails(encoded(recs))
    assert caught.line == len(recs) and "does not prove" in caught.reason


def test_a_skip_of_the_wrong_shape(files: dict[str, bytes]) -> None:
    recs = records(files["t1"])
    number = next(n for n, r in enumerate(recs, 1) if r["record"] == "skip")
    recs[number - 1]["hashes"].append("cd" * 32)
    caught = fails(encoded(recs))
    assert caught.line == number and "complete subtrees" in caught.reason


def test_the_closing_record_removed(files: dict[str, bytes]) -> None:
    lines = lines_of(files["t1"])[:-1]
    caught = fails(lines)
    assert caught.line == len(lines) + 1
    assert "the file ends without its closing record (truncated?)" in caught.reason


def test_the_file_truncated(files: dict[str, bytes]) -> None:
    data = files["all"]
    cut = data[: len(data) * 2 // 3]
    caught = fails(lines_of(cut))
    assert caught.line == cut.count(b"\n") + 1
    assert "the line is cut off" in caught.reason
    whole_lines = cut[: cut.rindex(b"\n") + 1]
    caught = fails(lines_of(whole_lines))
    assert caught.line == whole_lines.count(b"\n") + 1
    assert "without its closing record" in caught.reason


def test_something_after_the_closing_record(files: dict[str, bytes]) -> None:
    lines = [*lines_of(files["t1"]), b"{}\n"]
    caught = fails(lines)
    assert caught.line == len(lines) and "follows the closing record" in caught.reason


def test_a_different_signing_key(files: dict[str, bytes]) -> None:
    other = Signer.generate(ORIGIN)
    caught = fails(lines_of(files["all"]), key=other.verifier)
    assert caught.line == 1
    assert f"header names the key {VERIFIER.text()}, not the key you gave" in caught.reason


def _resign(recs: Records, signer: Signer) -> None:
    for r in recs:
        holder = r if r["record"] == "checkpoint" else r.get("checkpoint")
        if isinstance(holder, dict) and "note" in holder:
            text, _ = parse_note(holder["note"])
            holder["note"] = sign_checkpoint(Checkpoint.parse(text), signer)


def test_a_header_with_another_key_resigned_by_it_is_caught_by_key(
    files: dict[str, bytes],
) -> None:
    other = Signer.generate(ORIGIN)
    recs = records(files["all"])
    recs[0]["key"] = other.verifier.text()
    _resign(recs, other)
    lines = encoded(recs)
    verified = offline.verify(lines)  # consistent in itself: only the key can tell
    assert verified.key == other.verifier
    assert any(other.verifier.text() in s for s in verified.trusted)
    caught = fails(lines, key=VERIFIER)
    assert caught.line == 1 and "not the key you gave" in caught.reason


def test_a_checkpoint_signed_by_another_key(files: dict[str, bytes]) -> None:
    recs = records(files["all"])
    number = next(n for n, r in enumerate(recs, 1) if r["record"] == "checkpoint")
    _resign(recs[number - 1 : number], Signer.generate(ORIGIN))
    caught = fails(encoded(recs))
    assert caught.line == number
    assert f"is not signed by the header's key {VERIFIER.text()}" in caught.reason


def test_a_forged_snapshot(files: dict[str, bytes]) -> None:
    recs = records(files["range"])
    (number,) = [n for n, r in enumerate(recs, 1) if r["record"] == "snapshot"]
    (b9,) = [b for b in recs[number - 1]["state"]["bets"] if b["id"] == "b9"]
    b9["stakes"] = [500, 400]  # the stake laid, raised in the state the file starts from
    caught = fails(encoded(recs))
    assert caught.line == settled(recs, "b9")
    assert "BetSettled b9 pays player ann 800, but the throw 1+3" in caught.reason
    assert "ann is paid 900" in caught.reason


def test_a_snapshots_chain_hash_forged(files: dict[str, bytes]) -> None:
    recs = records(files["range"])
    (number,) = [n for n, r in enumerate(recs, 1) if r["record"] == "snapshot"]
    recs[number - 1]["hash"] = "ef" * 32
    caught = fails(encoded(recs))
    assert caught.line == line_of(recs, stream="table:t1")
    assert "the chain is broken" in caught.reason


def test_a_table_without_its_snapshot(files: dict[str, bytes]) -> None:
    recs = [r for r in records(files["range"]) if r["record"] != "snapshot"]
    caught = fails(encoded(recs))
    assert caught.line == line_of(recs, stream="table:t1")
    assert "no snapshot of the table before it" in caught.reason


def test_a_rule_set_the_header_does_not_hold(files: dict[str, bytes]) -> None:
    recs = records(files["t1"])
    recs[0]["rule_sets"]["english"]["odds_multiple"] = 2
    caught = fails(encoded(recs))
    assert caught.line == line_of(recs, type="TableOpened")
    assert "not the header's" in caught.reason


def test_a_line_that_is_not_json(files: dict[str, bytes]) -> None:
    lines = lines_of(files["t1"])
    lines[3] = b'{"record": "event", oops\n'
    caught = fails(lines)
    assert caught.line == 4 and "not JSON" in caught.reason


def test_a_line_out_of_canonical_form_is_refused(files: dict[str, bytes]) -> None:
    recs = records(files["t1"])
    lines = encoded(recs)
    lines[5] = json.dumps(recs[5], indent=None).encode() + b"\n"  # spaces, same content
    with pytest.raises(offline.Disagreement, match="canonical form") as caught:
        offline.verify(lines, VERIFIER)
    assert caught.value.line == 6


def test_a_key_given_twice_is_refused(files: dict[str, bytes]) -> None:
    """A reader keeping the first value and one keeping the last would see two files."""
    recs = records(files["t1"])
    lines = encoded(recs)
    n = next(i for i, r in enumerate(recs) if r.get("type") == "DiceThrown")
    lines[n] = b'{"payload":{"die1":6,"die2":6},' + lines[n][1:]
    with pytest.raises(offline.Disagreement, match="each given once") as caught:
        offline.verify(lines, VERIFIER)
    assert caught.value.line == n + 1


def test_crlf_and_a_byte_order_mark_say_the_same(files: dict[str, bytes]) -> None:
    lines = [line[:-1] + b"\r\n" for line in lines_of(files["t1"])]
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    assert offline.verify(lines, VERIFIER).events


@pytest.mark.parametrize(
    ("scope", "reason"),
    [
        ({"kind": "all"}, "starts at position|skips|seals go up by one"),
        ({"kind": "table", "table": "t2"}, "holds table:t1"),
        ({"kind": "range"}, "skips"),
        ({"kind": "bogus"}, "kind of"),
    ],
)
def test_a_relabelled_scope_is_refused(
    files: dict[str, bytes], scope: dict[str, Any], reason: str
) -> None:
    recs = records(files["t1"])
    full = {"player": None, "since": None, "table": None, "until": None} | scope
    recs[0] = recs[0] | {"scope": full}
    with pytest.raises(offline.Disagreement, match=reason):
        offline.verify(encoded(recs), VERIFIER)


def test_a_checkpoint_s_time_must_be_the_signed_one(files: dict[str, bytes]) -> None:
    recs = records(files["all"])
    n = next(i for i, r in enumerate(recs) if r["record"] == "checkpoint")
    recs[n] = recs[n] | {"issued_at": "2020-01-01T00:00:00.000000Z"}
    with pytest.raises(offline.Disagreement, match="its signed note") as caught:
        offline.verify(encoded(recs), VERIFIER)
    assert caught.value.line == n + 1


def test_json_nested_too_deeply_is_a_disagreement(files: dict[str, bytes]) -> None:
    lines = lines_of(files["t1"])
    lines[0] = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    with pytest.raises(offline.Disagreement, match="not JSON"):
        offline.verify(lines, VERIFIER)


def test_read_hands_on_each_event_as_the_store_holds_it(
    files: dict[str, bytes], tmp_path: Path
) -> None:
    items = list(offline.read(lines_of(files["all"]), VERIFIER))
    assert isinstance(items[0], offline.Header) and isinstance(items[-1], offline.Closing)
    rows = [i for i in items if isinstance(i, offline.EventLine)]
    for item in rows:
        assert item.row.hashed() == document(records(files["all"])[item.line - 1])
        assert merkle.leaf_hash(item.row.hashed()) == item.leaf
        assert item.event == item.row.event()
    assert [r.row.position for r in rows] == list(range(1, len(rows) + 1))
    checkpoints = [i for i in items if isinstance(i, offline.CheckpointLine)]
    assert checkpoints and all(c.root and c.note for c in checkpoints)


def test_money_skips_only_types_that_move_none(files: dict[str, bytes]) -> None:
    from ledger.books.accounts import transfers_of

    for item in offline.read(lines_of(files["all"])):
        if isinstance(item, offline.EventLine) and item.row.type not in MOVES_MONEY:
            assert transfers_of(item.row.stream, item.event) == ()


def test_a_table_opened_under_the_first_caps_verifies_as_it_was_played(
    engine: sa.Engine,
) -> None:
    """A table opened before players had caps of their own stored limits with no `caps`
    (engine.events.Limits.caps 1). Replayed now, it is judged by the rules it was played
    under: a player holding more open offers than a table opened now allows is no
    disagreement, in the offline check of its export and in the deep check alike."""
    from engine.betting import MAX_BETS_PER_PLAYER
    from ledger.books import deep
    from ledger.store.vocabulary import Deposited
    from tests.engine.tablekit import next_total

    store = EventStore(engine, clock=ticking(), signer=SIGNER)
    club = Club(Book(store))
    for name in ("ann", "bob"):
        club.create_player(name, "setter")
        club.account_command(name, Deposited, 5000, "setter")

    def do(command: Callable[..., list[hz.Event]], new: bool = False) -> None:
        club.command("t9", "croupier", lambda state, _f: command(state), new_table=new)

    do(lambda s: hz.open_table(hz.BUILTIN["english"], hz.Limits(caps=1)), new=True)
    opened = store.read_all(0, limit=100)[-2]  # before its write's seal
    assert opened.type == "TableOpened" and "caps" not in json.loads(opened.payload)["limits"]
    for step in (
        lambda s: hz.seat(s, "ann"),
        lambda s: hz.seat(s, "bob"),
        lambda s: hz.cast_for_caster(s, "ann", 1),
        lambda s: hz.cast_for_caster(s, "bob", 2),
    ):
        do(step)
    for _ in range(MAX_BETS_PER_PLAYER + 1):
        do(lambda s: hz.offer_side_bet(s, "bob", next_total(7), True, 1, 1))
    verified = offline.verify(lines_of(export(store.engine, scope_of(table="t9"))), VERIFIER)
    assert verified.bets == MAX_BETS_PER_PLAYER + 1
    assert list(deep.differences(store)) == []
    store.close()


def _edit_line(lines: list[bytes], kind: bytes, old: bytes, new: bytes) -> list[bytes]:
    """`lines` with `old` replaced by `new` in the first line holding `kind` and `old`."""
    n = next(i for i, line in enumerate(lines) if kind in line and old in line)
    return [*lines[:n], lines[n].replace(old, new, 1), *lines[n + 1 :]]


_ODD_EDITS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "a float in a header": lambda ls: _edit_line(ls, b'"header"', b'"first":1', b'"first":1.0'),
    "1e16 in a checkpoint": lambda ls: _edit_line(
        ls, b'"checkpoint"', b'"size":', b'"size":1e16,"x":'
    ),
    "NaN in a payload": lambda ls: _edit_line(ls, b'"DiceThrown"', b'"die1":', b'"die1":NaN,"x":'),
    "a float in a payload": lambda ls: _edit_line(
        ls, b'"DiceThrown"', b'"die1":', b'"die1":6.0,"x":'
    ),
    "a wide number in a payload": lambda ls: _edit_line(
        ls, b'"DiceThrown"', b'"die1":', b'"die1":' + b"9" * 30 + b',"x":'
    ),
    "a number of 5,000 digits in the closing": lambda ls: _edit_line(
        ls, b'"closing"', b'"size":', b'"size":' + b"9" * 5000 + b',"x":'
    ),
    "an escaped text in an event": lambda ls: _edit_line(
        ls, b'"event"', b'"actor":"', b'"actor":"\\u00e9'
    ),
    "a lone surrogate in an event": lambda ls: _edit_line(
        ls, b'"event"', b'"actor":"', b'"actor":"\\ud800'
    ),
    "a key given twice in a snapshot-less header": lambda ls: _edit_line(
        ls, b'"header"', b'"first":', b'"first":0,"first":'
    ),
}


@pytest.mark.parametrize("what", sorted(_ODD_EDITS))
def test_the_fast_json_gives_the_standard_librarys_verdict(
    files: dict[str, bytes], what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """codec reads and writes JSON with msgspec where it can: on lines that are odd in
    every way msgspec and json differ (floats, NaN, wide numbers, escapes, keys given
    twice), the verdict and its line are the ones json alone gives."""
    from ledger.store import codec

    lines = _ODD_EDITS[what](lines_of(files["t1"]))

    def verdict() -> tuple[int, str] | int:
        try:
            return offline.verify(lines, VERIFIER).events
        except offline.Disagreement as caught:
            return caught.line, caught.reason

    fast = verdict()

    def refuse(*_: object) -> None:
        raise TypeError("msgspec left out")

    monkeypatch.setattr(codec, "_FAST_ENCODE", refuse)
    monkeypatch.setattr(codec, "_FAST_DECODE", refuse)
    assert fast == verdict()
