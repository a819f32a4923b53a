"""The log as a reader's policy sees it in the database: the newest stored checkpoint
that a quorum of the reader's witnesses cosigned, held to the tree the events give.

A checkpoint signed by the log's key says only what the key's holder says. One that a
quorum of the reader's witnesses cosigned says also that each of them had seen it as
the largest tree of the log, consistent with every tree it saw before. A rewrite made
after they saw it, the tree rebuilt and every checkpoint re-signed with the key, leaves
nothing stored that disagrees with the events, but it parts from what they cosigned:
their cosignatures, kept in `cosignatures`, no longer verify over the checkpoint stored
at that size, nor over the tree the events give there.

So `hazard verify --policy` looks up, in the same snapshot as its pass over the events
and before it, the newest stored checkpoint whose stored cosignatures by the policy's
witnesses make its quorum (`stored`); the pass keeps the events' root at that size;
then `hold` checks that checkpoint: signed by one of the policy's logs, every one of
its cosignatures by the policy's witnesses verifying over it, a quorum of them, and its
root the events' root. Events after it are not witnessed yet: a count, not a failure,
since the ledger pushes its checkpoints to the witnesses a few seconds apart.

The policy is always the caller's (ledger.store.log.policy); nothing here reads one
from the database, whose keeper could name witnesses of their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime

import sqlalchemy as sa

from ledger.store.log.checkpoint import (
    Checkpoint,
    NoteError,
    NoteSignature,
    open_checkpoint,
    parse_note,
)
from ledger.store.log.cosignature import WitnessKey
from ledger.store.log.policy import Policy
from ledger.store.log.witnessed import at as cosigned_at
from ledger.store.log.witnessed import last_cosigned
from ledger.store.schema import checkpoints, cosignatures

PAGE = 200
"""Cosigned sizes read at a time, newest first, looking for the quorum (the newest
nearly always has it: one page)."""


@dataclasses.dataclass(frozen=True)
class Stored:
    """What the database holds of the policy's witnesses, in one snapshot."""

    size: int | None
    """The newest stored checkpoint whose stored cosignatures name a quorum of the
    policy's witnesses (with `quorum none`, the newest stored checkpoint); None when
    there is none."""
    note: str
    """Its stored note with every cosignature line stored for it ("" when None)."""
    newest: Mapping[str, int]
    """Each of the policy's witnesses that cosigned here: the largest size it cosigned."""
    others: int
    """Witness keys the policy does not name that cosigned the newest cosigned
    checkpoint (not counted)."""


def stored(conn: sa.Connection, policy: Policy) -> Stored:
    """The newest stored checkpoint whose stored cosignatures make `policy`'s quorum,
    read in `conn`'s transaction (the pass's snapshot). The cosignatures are not
    verified here: `hold` does, once the events' root is known."""
    names = {w.key.text(): w.name for w in policy.witnesses.values()}
    # One probe of the (size, witness) key per witness, from the newest down: a scan of
    # every cosignature (a GROUP BY) took 2.3 s over 3,000,000 of them on SQLite.
    newest = {w.name: top for w in policy.witnesses.values() if (top := last_cosigned(conn, w.key))}
    latest = sa.select(sa.func.max(cosignatures.c.size)).scalar_subquery()
    others = len(
        {
            vkey
            for vkey in conn.execute(
                sa.select(cosignatures.c.witness).where(cosignatures.c.size == latest)
            ).scalars()
            if vkey not in names
        }
    )
    size = _newest_with_quorum(conn, policy, names, newest)
    found = cosigned_at(conn, size) if size is not None else None
    if found is None:
        return Stored(None, "", newest, others)
    return Stored(size, found.note, newest, others)


def _newest_with_quorum(
    conn: sa.Connection, policy: Policy, names: dict[str, str], newest: Mapping[str, int]
) -> int | None:
    if policy.witnessed(()):  # `quorum none`: any checkpoint the log signed
        return conn.execute(sa.select(sa.func.max(checkpoints.c.size))).scalar()
    # Walking down the cosigned sizes stops where the witnesses who cosigned anything
    # that low can no longer make the quorum: without it, a quorum never reached would
    # read every cosignature, a page at a time.
    keys = {name: vkey for vkey, name in names.items() if name in newest}
    oldest = {
        name: conn.execute(
            sa.select(sa.func.min(cosignatures.c.size)).where(cosignatures.c.witness == vkey)
        ).scalar_one()
        for name, vkey in keys.items()
    }
    column, below = cosignatures.c.size, None
    while policy.witnessed(n for n, first in oldest.items() if below is None or first < below):
        query = sa.select(column).distinct().where(cosignatures.c.witness.in_(sorted(names)))
        if below is not None:
            query = query.where(column < below)
        sizes = conn.execute(query.order_by(column.desc()).limit(PAGE)).scalars().all()
        if not sizes:
            return None
        by_size: dict[int, set[str]] = {}
        for size, vkey in conn.execute(
            sa.select(column, cosignatures.c.witness).where(
                column.in_(sizes), cosignatures.c.witness.in_(sorted(names))
            )
        ):
            by_size.setdefault(int(size), set()).add(names[vkey])
        for size in sizes:
            if policy.witnessed(by_size.get(int(size), ())):
                return int(size)
        below = sizes[-1]
    return None


@dataclasses.dataclass(frozen=True)
class Witnessing:
    """What the policy makes of the database: the checkpoint it accepts, or the
    problem that stops it, and how far the log has run past it."""

    policy: Policy
    size: int | None
    """The witnessed checkpoint's size (None: no stored checkpoint has the quorum)."""
    cosigned: Mapping[str, int]
    """The policy's witnesses whose cosignatures of it verify, each with its time."""
    newest: Mapping[str, int]
    others: int
    head: int
    """Events in the log."""
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def behind(self) -> int:
        """Events after the witnessed checkpoint: not witnessed yet."""
        return self.head - self.size if self.size is not None else self.head

    def lines(self, source: str) -> list[str]:
        """What `hazard verify --policy` prints of it; `source` says where the policy
        was read."""
        out = [f"policy: {source} asks for {self.policy.describe()}"]
        out.append("witnesses: " + said(self.policy, self.newest, self.others))
        if self.problem is not None:
            out.append(f"problem under the policy: {self.problem}")
            return out
        assert self.size is not None
        by = f"cosigned by {times(self.cosigned)}" if self.cosigned else "(no witness asked)"
        out.append(
            f"witnessed: the checkpoint of size {self.size}, {by}; its root is the "
            f"events' tree's at {self.size}"
        )
        if self.behind > 0:
            out.append(
                f"warning: the {self.behind} events after it (positions {self.size + 1}.."
                f"{self.head}) are not witnessed yet: signed by the log's key alone (the "
                "ledger pushes to its witnesses seconds apart; a count that keeps growing "
                "is a witness down)"
            )
        return out


def hold(found: Stored, policy: Policy, root: bytes | None, head: int) -> Witnessing:
    """Check the checkpoint `found` under `policy`, against `root`, the root the events
    give at its size (None when they give none: fewer events than its size), in a log
    of `head` events."""

    def judged(problem: str | None, cosigned: Mapping[str, int] | None = None) -> Witnessing:
        return Witnessing(
            policy, found.size, cosigned or {}, found.newest, found.others, head, problem
        )

    if found.size is None:
        return judged(want_of_quorum(policy, "no stored checkpoint is"))
    size, note = found.size, found.note
    where = f"the witnessed checkpoint of size {size}"
    try:
        checkpoint = open_checkpoint(note, [log.key for log in policy.logs])
    except NoteError as exc:
        return judged(f"{where} is not signed by the policy's log key: {exc}")
    bad = _not_verifying(policy, note)
    if bad:
        return judged(_not_the_one_cosigned(size, bad, checkpoint, root))
    verdict = policy.verify(note)
    if not verdict.quorum:  # the lines stored make it, so one was dropped: never here
        return judged(want_of_quorum(policy, f"{where} is not"), verdict.cosigned)
    if root is None and size > head:
        return judged(
            f"{where} ({times(verdict.cosigned)}) is past the log's end: the log has "
            f"{head} events, {size - head} fewer than its witnesses saw (cut after they "
            "saw it)",
            verdict.cosigned,
        )
    if root is None:
        return judged(
            f"{where} is within the events an incremental run did not read again, and "
            "the stored tree does not prove its root against the tree verified then: "
            "run without --state",
            verdict.cosigned,
        )
    if checkpoint.root != root:
        return judged(
            f"{where} has root {checkpoint.root.hex()}, which {_names(verdict.cosigned)} "
            f"cosigned, but the events give {root.hex()} at {size}: the log was changed "
            "after the witnesses saw it",
            verdict.cosigned,
        )
    return judged(None, verdict.cosigned)


def _not_verifying(policy: Policy, note: str) -> list[tuple[str, WitnessKey, NoteSignature]]:
    """Each cosignature line in `note` by one of the policy's witnesses that does not
    verify over it: (the witness's name, its key, the line)."""
    text, signatures = parse_note(note)
    return [
        (witness.name, witness.key, line)
        for witness in policy.witnesses.values()
        for line in signatures
        if witness.key.matches(line) and witness.key.timestamp(text, line) is None
    ]


def _not_the_one_cosigned(
    size: int,
    bad: list[tuple[str, WitnessKey, NoteSignature]],
    stored: Checkpoint,
    root: bytes | None,
) -> str:
    """Why the witnesses' cosignatures of size `size` do not verify over the stored
    checkpoint: they cosigned another tree of that size (or the events' own, with the
    stored checkpoint's other lines changed)."""
    who = ", ".join(sorted({name for name, _, _ in bad}))
    head = (
        f"the checkpoint of size {size} that {who} cosigned is not the one stored: their "
        "cosignatures do not verify over it"
    )
    if root is None:
        return f"{head} (and the events' root at {size} is not known here)"
    text = dataclasses.replace(stored, root=root).text()
    if all(key.timestamp(text, line) is not None for _, key, line in bad):
        return (
            f"{head}, but they do over the tree the events give at {size}: the stored "
            "checkpoint was signed again, with other lines"
        )
    return (
        f"{head}, nor over the tree the events give at {size} (root {root.hex()}): they "
        f"cosigned another tree of {size} events, which the events no longer give. The log "
        "was rewritten and its checkpoints signed again after the witnesses saw it (or "
        "their cosignatures were altered)"
    )


def want_of_quorum(policy: Policy, what: str) -> str:
    """The failure for want of a quorum, in words: `what` (`no stored checkpoint is`)
    cosigned by what the policy asks."""
    return f"for want of a quorum: {what} cosigned by {policy.describe()}, as the policy asks"


def said(policy: Policy, newest: Mapping[str, int], others: int) -> str:
    """Which of the policy's witnesses cosigned what: `treasurer up to size 120,
    auditor nothing`."""
    parts = [
        f"{name} up to size {newest[name]}" if name in newest else f"{name} nothing"
        for name in policy.witnesses
    ]
    text = ", ".join(parts) if parts else "the policy names none"
    if others:
        text += (
            f" ({others} other witness key(s) cosigned the newest cosigned checkpoint too: the "
            "policy does not name them)"
        )
    return text


def times(cosigned: Mapping[str, int]) -> str:
    """`treasurer at 2026-11-23T14:02:11Z, auditor at ...`"""
    return ", ".join(f"{name} at {utc(at)}" for name, at in sorted(cosigned.items()))


def utc(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(cosigned: Mapping[str, int]) -> str:
    return ", ".join(sorted(cosigned)) or "no witness"


def newest_within(conn: sa.Connection, size: int) -> tuple[int, str] | None:
    """The newest stored checkpoint of at most `size` events that any witness cosigned,
    as (its size, its note with every cosignature line stored for it): what an export
    fixed at the head `size` carries for its readers' policies."""
    newest = conn.execute(
        sa.select(sa.func.max(cosignatures.c.size)).where(cosignatures.c.size <= size)
    ).scalar()
    found = cosigned_at(conn, int(newest)) if newest is not None else None
    return None if found is None else (found.size, found.note)
