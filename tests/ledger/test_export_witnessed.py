"""The export's cosigned checkpoint, on SQLite and PostgreSQL: the closing carries the
newest checkpoint a witness cosigned at or below the file's head, with its cosignatures
and the consistency proof from it to the closing's checkpoint, fixed when the export
begins (the same log with the same cosignatures exports to the same bytes); the offline
check holds it to the reader's policy, and refuses a file whose cosignatures were
stripped or forged; a restore under the policy keeps the cosignatures, and exports again
to the same bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.books import projections
from ledger.exports import jsonl, offline, restore
from ledger.exports.scope import scope_of
from ledger.store import codec
from ledger.store.eventstore import EventStore
from ledger.store.log import check, merkle
from ledger.store.log.checkpoint import (
    Checkpoint,
    NoteSignature,
    open_checkpoint,
    parse_note,
    sign_checkpoint,
)
from ledger.store.log.policy import Policy
from ledger.store.schema import cosignatures
from tests.ledger.cosignkit import (
    AT,
    AUDITOR,
    CHAIR,
    STRANGER,
    TREASURER,
    cosign,
    newest_size,
    policy_text,
    sizes,
)
from tests.ledger.exportkit import evening, export
from tests.ledger.tamperkit import OTHER, Log, unguarded, whole_log_rehashed_and_resigned
from tests.signing import SIGNER, VERIFIER

TWO = Policy.parse(policy_text("2"))
ALL = scope_of(everything=True)


@pytest.fixture
def store(engine: sa.Engine) -> Iterator[EventStore]:
    yield from evening(engine)


def closing(data: bytes) -> dict[str, Any]:
    return json.loads(data.splitlines()[-1])


def with_closing(data: bytes, change: Any) -> list[bytes]:
    """The file with its closing record changed by `change` (a function of the record),
    written back canonically, as a forger who knows the format would."""
    lines = data.splitlines(keepends=True)
    record = json.loads(lines[-1])
    change(record)
    return [*lines[:-1], codec.canonical(record) + b"\n"]


def refused(lines: list[bytes], policy: Policy | None = TWO) -> str:
    with pytest.raises(offline.Disagreement) as caught:
        offline.verify(lines, VERIFIER, policy=policy)
    assert caught.value.line == len(lines)  # at the closing record
    return caught.value.reason


# -- what the export carries ------------------------------------------------------------


def test_the_closing_carries_the_newest_cosigned_checkpoint_and_its_proof(
    store: EventStore,
) -> None:
    assert "cosigned" not in closing(export(store.engine, ALL))  # no witness: as before
    head = newest_size(store.engine)
    older = cosign(store.engine, sizes(store.engine)[-10], TREASURER, AUDITOR)
    newer = cosign(store.engine, sizes(store.engine)[-5], CHAIR)
    data = export(store.engine, ALL)
    c = closing(data)
    assert c["checkpoint"]["size"] == head and c["cosigned"]["size"] == newer != older
    note = c["cosigned"]["note"]
    _, lines = parse_note(note)
    assert [line.name for line in lines] == [VERIFIER.name, CHAIR.name]
    signed, witnessed = (open_checkpoint(n, [VERIFIER]) for n in (c["checkpoint"]["note"], note))
    proof = [bytes.fromhex(h) for h in c["cosigned"]["consistency"]]
    merkle.check_tree(proof, head, signed.root, newer, witnessed.root)
    verified = offline.verify(data.splitlines(), VERIFIER, policy=Policy.parse(policy_text("any")))
    assert verified.witnessed is not None and verified.witnessed.size == newer
    assert dict(verified.witnessed.cosigned) == {"chair": AT}
    # The reader whose quorum the newest does not make is told so, not shown an older one.
    assert "for want of a quorum" in refused(data.splitlines())


def test_an_export_fixes_its_cosigned_checkpoint_when_it_begins(store: EventStore) -> None:
    """Cosignatures arrive after their checkpoint: the file carries those kept when it
    began, so the same log with the same cosignatures exports to the same bytes, and one
    that arrived meanwhile changes only a later export's closing."""
    cosign(store.engine, sizes(store.engine)[-4], TREASURER, AUDITOR)
    before = export(store.engine, ALL)
    assert export(store.engine, ALL) == before
    prepared = jsonl.prepare(store.engine, ALL, key=VERIFIER)
    head = cosign(store.engine, None, TREASURER, AUDITOR)  # the head, cosigned meanwhile
    assert b"".join(prepared.chunks()) == before
    after = export(store.engine, ALL)
    assert after.splitlines()[:-1] == before.splitlines()[:-1]
    assert closing(after)["cosigned"]["size"] == head
    assert closing(after)["cosigned"]["consistency"] == []  # the head itself: no proof
    assert export(store.engine, ALL) == after


# -- the offline check under a policy ---------------------------------------------------


def test_a_table_s_file_holds_under_the_policy_and_says_what_is_not_witnessed(
    store: EventStore,
) -> None:
    head = newest_size(store.engine)
    size = cosign(store.engine, sizes(store.engine)[-7], TREASURER, CHAIR)
    data = export(store.engine, scope_of(table="t1"))
    verified = offline.verify(data.splitlines(), VERIFIER, policy=TWO)
    assert verified.witnessed is not None and verified.witnessed.size == size
    assert verified.policy == "2 of treasurer, auditor, chair"
    printed = "\n".join(verified.lines())
    assert f"witnessed: the checkpoint of size {size}, cosigned by chair at " in printed
    assert f"the file's checkpoint of size {head} is consistent with it" in printed
    assert verified.last > size  # t1 plays on after the witnesses' last push
    assert f"positions {size + 1}..{verified.last} are after the checkpoint the witnesses " in (
        printed
    )
    alone = offline.verify(data.splitlines(), VERIFIER)
    assert alone.witnessed is None and alone.policy is None
    assert any(
        s.startswith("the file is checked against the bank's key alone") for s in (alone.trusted)
    )


def test_a_file_whose_cosignatures_were_stripped_or_forged_fails_under_the_policy(
    store: EventStore,
) -> None:
    size = cosign(store.engine, None, TREASURER, AUDITOR)
    data = export(store.engine, ALL)
    assert offline.verify(data.splitlines(), VERIFIER, policy=TWO).witnessed is not None

    def strip(c: dict[str, Any]) -> None:
        del c["cosigned"]

    stripped = with_closing(data, strip)
    assert refused(stripped).startswith(
        "for want of a quorum: the closing record carries no checkpoint cosigned by 2 of "
        "treasurer, auditor, chair, as the policy asks (no witness had cosigned"
    )
    offline.verify(stripped, VERIFIER)  # without a policy: the bank's key alone, as before

    def lines_kept(keep: Any) -> Any:
        def change(c: dict[str, Any]) -> None:
            text, lines = parse_note(c["cosigned"]["note"])
            c["cosigned"]["note"] = text + "\n" + "".join(s.line() for s in lines if keep(s))

        return change

    one_left = with_closing(data, lines_kept(lambda s: s.name != AUDITOR.name))
    assert refused(one_left) == (
        f"for want of a quorum: the closing record's cosigned checkpoint, of size {size}, is "
        "not cosigned by 2 of treasurer, auditor, chair, as the policy asks: of your "
        "policy's witnesses it carries treasurer"
    )

    def forged(c: dict[str, Any]) -> None:
        text, lines = parse_note(c["cosigned"]["note"])
        bad = [
            NoteSignature(s.name, s.key_id, s.signature[:-1] + bytes([s.signature[-1] ^ 1]))
            if s.name == AUDITOR.name
            else s
            for s in lines
        ]
        c["cosigned"]["note"] = text + "\n" + "".join(s.line() for s in bad)

    reason = refused(with_closing(data, forged))
    assert reason.startswith(
        "the closing record's cosigned checkpoint does not hold under your policy: the "
        f"cosignature by {AUDITOR.name}+{AUDITOR.key.key_id:08x} does not verify over it"
    )

    def stranger(c: dict[str, Any]) -> None:
        """The treasurer's line swapped for one by a key of the same name."""
        text, lines = parse_note(c["cosigned"]["note"])
        swapped = [STRANGER.cosign(text, AT) if s.name == TREASURER.name else s for s in lines]
        c["cosigned"]["note"] = text + "\n" + "".join(s.line() for s in swapped)

    assert "it carries auditor" in refused(with_closing(data, stranger))


def test_a_cosigned_checkpoint_not_in_the_file_s_log_fails_with_or_without_a_policy(
    store: EventStore,
) -> None:
    head = newest_size(store.engine)
    cosign(store.engine, sizes(store.engine)[-6], TREASURER, AUDITOR)
    data = export(store.engine, ALL)

    def proof_changed(c: dict[str, Any]) -> None:
        first = bytes.fromhex(c["cosigned"]["consistency"][0])
        c["cosigned"]["consistency"][0] = bytes([first[0] ^ 1, *first[1:]]).hex()

    for policy in (TWO, None):
        reason = refused(with_closing(data, proof_changed), policy)
        assert f"is not a prefix of the closing's checkpoint of size {head}" in reason

    def another_key(c: dict[str, Any]) -> None:
        text, _ = parse_note(c["cosigned"]["note"])
        signature = OTHER.sign(text.encode())
        line = NoteSignature(VERIFIER.name, OTHER.key_id, signature).line()
        c["cosigned"]["note"] = text + "\n" + line

    assert "is not signed by the header's key" in refused(with_closing(data, another_key))

    def sized_otherwise(c: dict[str, Any]) -> None:
        c["cosigned"]["size"] += 1

    assert "its line says" in refused(with_closing(data, sized_otherwise))


def test_a_fork_the_witnesses_cosigned_is_not_the_file_s_log(store: EventStore) -> None:
    """A cosigned note of the right size but another root (a fork the witnesses saw):
    signed by the bank, cosigned, and not in the file's log."""
    size = cosign(store.engine, sizes(store.engine)[-6], TREASURER, AUDITOR)
    data = export(store.engine, ALL)

    def forked(c: dict[str, Any]) -> None:
        text, _ = parse_note(c["cosigned"]["note"])
        fork = Checkpoint.parse(text)
        other = Checkpoint(fork.origin, fork.size, bytes(32), fork.extensions)
        note = sign_checkpoint(other, SIGNER)
        cosigned = [w.cosign(other.text(), AT) for w in (TREASURER, AUDITOR)]
        c["cosigned"]["note"] = note + "".join(s.line() for s in cosigned)

    assert f"of size {size}, is not a prefix" in refused(with_closing(data, forked))


def test_an_export_of_the_insider_s_rewrite_fails_under_the_policy(
    store: EventStore, tmp_path: Path
) -> None:
    """The bank's key, an amount changed, the tree, every checkpoint and the read models
    made again: the file checks out on the bank's key alone, but its witnesses cosigned
    another tree."""
    size = cosign(store.engine, None, TREASURER, AUDITOR)
    log = Log(store.engine, size, "", tmp_path)
    with unguarded(log) as conn:
        whole_log_rehashed_and_resigned(log, conn, SIGNER)
    projections.rebuild(store)
    data = export(store.engine, ALL)
    offline.verify(data.splitlines(), VERIFIER)
    reason = refused(data.splitlines())
    assert reason.endswith(
        "does not verify over it: the witnesses cosigned another checkpoint of that size (the "
        "log rewritten and signed again after they saw it), or the line was forged"
    )


# -- a restore under the policy ---------------------------------------------------------


def _cosignature_rows(engine: sa.Engine) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        query = sa.select(cosignatures.c.size, cosignatures.c.witness, cosignatures.c.line)
        return [tuple(r) for r in conn.execute(query.order_by(cosignatures.c.witness))]


def test_a_restore_under_the_policy_keeps_the_cosignatures_and_exports_the_same_bytes(
    store: EventStore, target: sa.Engine
) -> None:
    cosign(store.engine, sizes(store.engine)[-3], TREASURER, AUDITOR, STRANGER)
    data = export(store.engine, ALL)
    restored = restore.restore(target, data.splitlines(), VERIFIER, policy=TWO)
    assert restored.cosignatures == ["treasurer", "auditor"]
    kept = [r for r in _cosignature_rows(store.engine) if r[1] != STRANGER.key.text()]
    assert _cosignature_rows(target) == kept  # the stranger's: no key to check it with
    again = export(target, ALL)  # the same file, but for the stranger's line
    assert again.splitlines()[:-1] == data.splitlines()[:-1]
    assert closing(again)["cosigned"]["note"] == _note_without(
        closing(data)["cosigned"]["note"], STRANGER
    )
    assert check.verify(target, VERIFIER, policy=TWO).ok


def test_a_restore_of_every_cosignature_exports_the_same_bytes(
    store: EventStore, target: sa.Engine
) -> None:
    cosign(store.engine, sizes(store.engine)[-3], TREASURER, AUDITOR)
    data = export(store.engine, ALL)
    restore.restore(target, data.splitlines(), VERIFIER, policy=TWO)
    assert export(target, ALL) == data


def test_a_restore_without_a_policy_keeps_no_cosignature_and_a_bad_one_writes_nothing(
    store: EventStore, target: sa.Engine
) -> None:
    cosign(store.engine, None, TREASURER)
    data = export(store.engine, ALL)
    with pytest.raises(offline.Disagreement, match="for want of a quorum"):
        restore.restore(target, data.splitlines(), VERIFIER, policy=TWO)
    with target.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one() == 0
    restored = restore.restore(target, data.splitlines(), VERIFIER)
    assert restored.cosigned is not None and restored.cosignatures == []
    assert _cosignature_rows(target) == []


def _note_without(note: str, witness: Any) -> str:
    text, lines = parse_note(note)
    return text + "\n" + "".join(s.line() for s in lines if s.key_id != witness.key.key_id)
