"""One run of a watcher: the newest cosigned checkpoint checked under the reader's
policy, and against everything the watcher holds (what it found is said in words by
ledger.watch.evidence).

A log that only grows never signs two trees of one size. So every comparison comes
down to two signed checkpoints of one size: the one the watcher holds (a receipt, or
the newest it verified before) and the one the ledger serves today for that size,
which the ledger must prove its newest extends (RFC 9162 consistency proofs). Their
roots differ: the bank signed two histories, and the two notes are the proof. The
roots agree and the proof holds: consistent. The ledger answers that it has no
checkpoint of the held one's size: denied, and the held note, signed by the log's key,
is the evidence that the size existed, for a log keeps every checkpoint it signs (a log
restored from a backup cut short of it answers so). The roots agree and the proof does
not verify: not proven, which an honest log never is.

A fork needs no witness: when the ledger serves no newest checkpoint the policy accepts
(the witnesses refused a rewritten log, so nothing of it is cosigned), what the watcher
holds is still held to the newest checkpoint the log signed alone, and a contradiction
is a fork all the same.

Where history was changed is told by the receipts that still agree: a receipt known to
be a prefix of the contradicted one, whose tree the newest still extends, puts the
first change after it. Which receipts are known prefixes of which the watcher learnt
itself, on earlier runs (`Receipt.checked_with`); a receipt it never checked before
bounds nothing, and no bound is claimed from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ledger.store.log import merkle
from ledger.store.log.checkpoint import BadSignature, Checkpoint, NoteError, open_checkpoint
from ledger.store.log.policy import Policy
from ledger.watch.evidence import Denial, Fork, Held, Outcome, Verdict, denied, forked
from ledger.watch.sources import Consistency, NotHeld, Report, Source, SourceError
from ledger.watch.state import State

MAX_REPORTS = 1_000
"""The most gossip reports one run reads (a proof for each new size): the rest are
read by the next."""


@dataclasses.dataclass(frozen=True)
class Agrees:
    """The ledger's checkpoint of the held one's size is the held one, and its newest
    extends it (or it extends the newest)."""


@dataclasses.dataclass(frozen=True)
class Contradicted:
    """The ledger's own checkpoint of the held one's size has another root."""

    other: str
    """The ledger's note of that size."""
    tied: bool
    """Whether the ledger proved that its newest is consistent with `other`."""
    proof: tuple[bytes, ...] = ()


@dataclasses.dataclass(frozen=True)
class Denied:
    """The ledger answered that it has no checkpoint of the held one's size, which the
    held one, signed by its log, proves it signed: `answer`, its words."""

    answer: str


@dataclasses.dataclass(frozen=True)
class Unproven:
    """The ledger did not prove the held one consistent with its newest, nor that it
    signed another: `why`, in words."""

    why: str


Status = Agrees | Contradicted | Denied | Unproven


class _Stop(Exception):
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict


def _hash(digest: bytes) -> str:
    return digest.hex()[:16] + "…"


def watch(state: State, source: Source, policy: Policy, report: bool = False) -> Verdict:
    """Check the ledger at `source` against `state` under `policy` (the reader's own,
    never one the ledger names), and say what was found; with `report`, tell the
    ledger's gossip which checkpoint was verified."""
    try:
        return _Run(state, source, policy).run(report)
    except _Stop as stop:
        return stop.verdict
    except (SourceError, NotHeld) as e:
        return Verdict(Outcome.UNCHECKED, (f"could not check: {e}",))


class _Run:
    def __init__(self, state: State, source: Source, policy: Policy) -> None:
        self.state = state
        self.source = source
        self.policy = policy
        self.logs = [log.key for log in policy.logs]
        self.asked: dict[tuple[int, int], Consistency | NotHeld] = {}
        self.said: list[str] = []

    # -- the newest, and what is held ------------------------------------------------

    def newest(self) -> Held:
        note = self.source.cosigned()
        what = "the newest cosigned checkpoint"
        if note is None and self.policy.witnessed(()):
            note, what = self.source.latest(), "the newest checkpoint"
        if note is None:
            raise _Stop(Verdict(Outcome.UNCHECKED, (
                f"could not check: {self.source.where} has no cosigned checkpoint yet; "
                f"the policy asks {self.policy.describe()}",
            )))  # fmt: skip
        try:
            verdict = self.policy.verify(note)
        except BadSignature as e:
            raise _Stop(Verdict(Outcome.UNCHECKED, (
                f"could not check: {what} does not verify: {e}. The note was changed "
                "after it was signed, or a signature line was forged; it is not trusted",
                "", note.rstrip("\n"),
            ))) from None  # fmt: skip
        except NoteError as e:
            raise _Stop(Verdict(Outcome.UNCHECKED, (
                f"could not check: {what} is not signed by the policy's log: {e}",
            ))) from None  # fmt: skip
        size = verdict.checkpoint.size
        names = ", ".join(sorted(verdict.cosigned))
        if not verdict.quorum:
            has = f"cosignatures from {names} only" if names else "no cosignature by its witnesses"
            raise _Stop(Verdict(Outcome.UNCHECKED, (
                f"no quorum: the newest checkpoint (size {size}) has {has}; the policy asks "
                f"{self.policy.describe()}",
            )))  # fmt: skip
        by = f", cosigned by {names}" if names else ""
        self.said.append(
            f"newest: size {size}, root {_hash(verdict.checkpoint.root)}, signed by "
            f"{verdict.checkpoint.origin}{by} (the policy asks {self.policy.describe()})"
        )
        return Held(what, note, verdict.checkpoint)

    def held(self) -> tuple[Held | None, list[Held]]:
        newest = None
        if self.state.newest is not None:
            newest = self.open_held(
                "the checkpoint this watcher verified before", self.state.newest
            )
        receipts = [
            self.open_held(f"receipt {r.name}", r.note, index)
            for index, r in enumerate(self.state.receipts)
        ]
        return newest, receipts

    def open_held(self, what: str, note: str, receipt: int | None = None) -> Held:
        try:
            checkpoint = open_checkpoint(note, self.logs)
        except NoteError as e:
            raise _Stop(Verdict(Outcome.UNCHECKED, (
                f"could not check: {what} is not signed by the policy's log ({e}); was it "
                "kept under another policy?",
            ))) from None  # fmt: skip
        return Held(f"{what}, of size {checkpoint.size}", note, checkpoint, receipt)

    # -- comparing one held checkpoint with the newest --------------------------------

    def consistency(self, old: int, new: int) -> Consistency:
        found = self.asked.get((old, new))
        if found is None:
            try:
                found = self.source.consistency(old, new)
            except NotHeld as e:
                found = e
            self.asked[(old, new)] = found
        if isinstance(found, NotHeld):
            raise found
        return found

    def served(self, note: str, size: int) -> Checkpoint:
        """A checkpoint the ledger served for `size`, signed by the policy's log."""
        try:
            checkpoint = open_checkpoint(note, self.logs)
        except NoteError as e:
            raise SourceError(
                f"{self.source.where} served a checkpoint of size {size} that is not signed "
                f"by the policy's log: {e}"
            ) from None
        if checkpoint.size != size:
            raise SourceError(
                f"{self.source.where} served a checkpoint of size {checkpoint.size} when "
                f"asked for size {size}"
            )
        return checkpoint

    def compare(self, item: Held, newest: Held) -> Status:
        size, n = item.size, newest.size
        if size == n:
            if item.checkpoint.root == newest.checkpoint.root:
                return Agrees()
            return Contradicted(newest.note, tied=True)
        old, new = sorted((size, n))
        try:
            answer = self.consistency(old, new)
        except NotHeld as e:
            # The newest is a checkpoint the ledger has just served: the size it lacks
            # is the held one's.
            return Denied(str(e))
        served_old, served_new = self.served(answer.old, old), self.served(answer.new, new)
        served_n, served = (served_new, served_old) if size < n else (served_old, served_new)
        if served_n.root != newest.checkpoint.root:
            # The ledger's own checkpoint of the newest's size is another tree.
            other = answer.new if size < n else answer.old
            raise _Stop(self.forked(Fork(
                newest, Held(f"the ledger's checkpoint of size {n}", other, served_n),
            )))  # fmt: skip
        try:
            merkle.check_tree(list(answer.proof), new, served_new.root, old, served_old.root)
            tied = True
        except merkle.MerkleError:
            tied = False
        if served.root != item.checkpoint.root:
            other = answer.old if size < n else answer.new
            return Contradicted(other, tied, answer.proof)
        if tied:
            return Agrees()
        return Unproven(
            f"its consistency proof between sizes {old} and {new} does not verify, so it "
            f"did not prove the newest consistent with {item.what}"
        )

    # -- the run ----------------------------------------------------------------------

    def run(self, report: bool) -> Verdict:
        try:
            newest = self.newest()
        except _Stop as stop:
            if stop.verdict.outcome is Outcome.UNCHECKED:
                self.signed_alone(stop.verdict)
            raise
        before, receipts = self.held()
        everything = ([before] if before is not None else []) + receipts
        self.same_sizes(everything)
        # A receipt known to be a prefix of `before` needs no request while `before`
        # agrees: the newest extends `before`, and so it.
        settled = {
            i
            for i, item in enumerate(everything)
            if item.receipt is not None and before is not None
            and item.size <= (self.state.receipts[item.receipt].checked_with or 0)
        }  # fmt: skip
        status: dict[int, Status] = {
            i: self.compare(item, newest) for i, item in enumerate(everything) if i not in settled
        }
        if any(isinstance(s, Contradicted) for s in status.values()):
            for i in settled:  # where it changed: every checkpoint held has a say
                try:
                    status[i] = self.compare(everything[i], newest)
                except SourceError as e:  # the fork stands; this one bounds nothing
                    status[i] = Unproven(str(e))
            raise _Stop(self.forked(self.bound(everything, status, newest, before)))
        self.denials(everything, status, newest)
        unproven = [
            f"  {everything[i].what}: {s.why}" for i, s in status.items() if isinstance(s, Unproven)
        ]
        after, unproven_reports = self.gossip(newest, everything)
        unproven += unproven_reports
        if unproven:
            return self.not_proven(unproven)
        self.said += self.consistent(newest, before, receipts, len(settled))
        if report:
            try:
                self.source.report(newest.note)
                self.said.append("reported: the ledger's gossip lists this checkpoint")
            except (SourceError, NotHeld) as e:
                self.said.append(f"not reported: {e}")
        kept = self.kept(newest, before, everything, settled)
        return Verdict(
            Outcome.CONSISTENT, tuple(self.said), dataclasses.replace(kept, gossip_after=after)
        )

    def signed_alone(self, unchecked: Verdict) -> None:
        """No newest checkpoint the policy accepts (none cosigned, no quorum, or a
        cosignature that does not verify): the run could not check. A fork needs no
        witness, though: two checkpoints of one size signed by the log prove it. So
        what this watcher holds is held to the newest checkpoint the log signed, and
        one it contradicts stops the run as a fork (a rewrite the witnesses refused,
        shown to a watcher that saw the history they cosigned); one of a size the
        log says it has no checkpoint of is evidence too (a log cut short of it); one
        it cannot prove consistent with it, as an honest log always can, is not proven;
        short of that, `unchecked` stands."""
        if self.state.newest is None and not self.state.receipts:
            return
        try:
            note = self.source.latest()
            checkpoint = open_checkpoint(note or "", self.logs)
            before, receipts = self.held()
        except (SourceError, NotHeld, NoteError, _Stop):
            return
        what = "the newest checkpoint the log signed (no quorum cosigned it)"
        newest = Held(what, note or "", checkpoint)
        everything = ([before] if before is not None else []) + receipts
        reason = unchecked.lines[0].removeprefix("could not check: ")
        self.said = [
            f"not accepted under the policy: {reason}",
            f"what this watcher holds is held to {what}: a fork needs no witness",
        ]
        self.same_sizes(everything)
        status: dict[int, Status] = {}
        for i, item in enumerate(everything):
            try:
                status[i] = self.compare(item, newest)
            except SourceError:
                return
        if any(isinstance(s, Contradicted) for s in status.values()):
            raise _Stop(self.forked(self.bound(everything, status, newest, before)))
        self.denials(everything, status, newest)  # a log cut short of what is held, say
        unproven = [
            f"  {everything[i].what}: {s.why}" for i, s in status.items() if isinstance(s, Unproven)
        ]
        if unproven:  # no honest log fails to prove it
            raise _Stop(self.not_proven(unproven))

    def denials(self, everything: list[Held], status: dict[int, Status], newest: Held) -> None:
        """Stop the run on the held checkpoints whose size the ledger denies having: the
        notes, signed by its log, are the evidence. Every note held of such a size is,
        a receipt settled on an earlier run and not asked about again among them."""
        answers = {everything[i].size: s.answer for i, s in status.items() if isinstance(s, Denied)}
        found = [
            Denial(tuple(h for h in everything if h.size == size), answer)
            for size, answer in sorted(answers.items())
        ]
        if found:
            raise _Stop(denied(found, newest, self.said))

    def not_proven(self, unproven: list[str]) -> Verdict:
        return Verdict(Outcome.UNPROVEN, (
            *self.said,
            "NOT PROVEN: the ledger did not prove that its newest checkpoint is "
            "consistent with what this watcher holds:",
            *unproven,
            "An honest log can always prove it: hold it suspect until it does.",
        ))  # fmt: skip

    @staticmethod
    def consistent(
        newest: Held, before: Held | None, receipts: list[Held], settled: int
    ) -> list[str]:
        if before is None:
            said = [
                f"first run: nothing was held; this watcher now holds the checkpoint of size "
                f"{newest.size}"
            ]
        elif before.size == newest.size:
            said = [f"consistent: it is {before.what}"]
        elif before.size < newest.size:
            said = [f"consistent: it extends {before.what}"]
        else:
            said = [
                f"consistent, and older: it is a prefix of {before.what}, which this watcher keeps"
            ]
        if receipts:
            sizes = ", ".join(str(r.size) for r in sorted(receipts, key=lambda r: r.size))
            said.append(
                f"receipts: {len(receipts)}, each consistent with it (sizes {sizes}; "
                f"{len(receipts) - settled} checked now, the others on earlier runs)"
            )
        return said

    def same_sizes(self, items: Iterable[Held]) -> None:
        """Two checkpoints of one size with two roots, among those at hand, fork."""
        seen: dict[int, Held] = {}
        for item in items:
            other = seen.setdefault(item.size, item)
            if other.checkpoint.root != item.checkpoint.root:
                raise _Stop(self.forked(Fork(other, item)))

    def kept(
        self, newest: Held, before: Held | None, everything: list[Held], settled: set[int]
    ) -> State:
        """The state after a consistent run: the larger of the newest and what was
        held, and each receipt marked with how far it is now known to agree: all of
        it, when it is a prefix of what is kept; the newest's size, when it extends
        the newest."""
        keep = newest if before is None or newest.size >= before.size else before
        marks = {
            item.receipt: keep.size if i in settled or item.size <= newest.size else newest.size
            for i, item in enumerate(everything)
            if item.receipt is not None
        }
        receipts = tuple(
            dataclasses.replace(r, checked_with=marks[i]) for i, r in enumerate(self.state.receipts)
        )
        return State(keep.note, receipts, self.state.gossip_after)

    # -- a fork: where it is, and the words ---------------------------------------------

    def bound(
        self, everything: list[Held], status: dict[int, Status], newest: Held, before: Held | None
    ) -> Fork:
        """The fork of the smallest contradicted checkpoint held, and the positions the
        first change lies in: after the largest held checkpoint known to be its prefix
        that still agrees with the newest, and no later than its own size."""
        contradicted = [
            (item, s) for item, s in ((everything[i], status[i]) for i in status)
            if isinstance(s, Contradicted)
        ]  # fmt: skip
        item, found = min(contradicted, key=lambda pair: pair[0].size)
        assert isinstance(found, Contradicted)
        other_cp = open_checkpoint(found.other, self.logs)
        other = Held(f"the ledger's checkpoint of size {item.size} today", found.other, other_cp)
        if item.size == newest.size:
            other = newest
        agreeing = [
            everything[i]
            for i, s in status.items()
            if isinstance(s, Agrees) and everything[i].size < min(item.size, newest.size + 1)
        ]
        below = [h for h in agreeing if found.tied and self.prefix(h, item, before)]
        still = max(below, key=lambda h: h.size, default=None)
        first = 1 if still is None else still.size + 1
        tied_newest = newest if found.tied and item.size != newest.size else None
        loose = len(agreeing) - len(below) if found.tied else 0
        return Fork(item, other, tied_newest, found.proof, (first, item.size), still, loose)

    def prefix(self, a: Held, x: Held, before: Held | None) -> bool:
        """Whether this watcher knows held `a` to be a prefix of held `x` (a smaller),
        from its own earlier runs: both within what it held, or `x` proven to extend
        a tree at least as large as `a` within it."""
        if before is None:
            return False

        def within(h: Held) -> int | None:
            """How much of `before` h is known to contain: all of h if inside it."""
            if h.receipt is None:
                return h.size if h is before else None
            checked = self.state.receipts[h.receipt].checked_with
            return checked if checked is not None else None

        reach_a, reach_x = within(a), within(x)
        if reach_a is None or reach_x is None or a.size > reach_a:
            return False  # `a` is not known to be inside `before`
        return a.size <= reach_x  # `x` contains before's first reach_x events

    def forked(self, fork: Fork) -> Verdict:
        return forked(fork, self.said)

    # -- gossip -------------------------------------------------------------------------

    def gossip(self, newest: Held, everything: list[Held]) -> tuple[int, list[str]]:
        """Read the reports after those checked before: a fork among them, or with what
        is held or the newest, stops the run. Returns the id to read after next time
        (not past a report larger than the newest, which the next run checks again)
        and what was not proven."""
        after = self.state.gossip_after
        reports: list[Report] = []
        cursor: int | None = after
        while cursor is not None and len(reports) < MAX_REPORTS:
            page, cursor = self.source.gossip(cursor)
            reports += page
        opened: dict[int, Held] = {}
        for report in reports:
            try:
                checkpoint = open_checkpoint(report.note, self.logs)
            except NoteError:
                continue  # another log's, or none's: not this log's history
            by = f", by {report.reported_by!r}" if report.reported_by else ""
            what = f"report {report.id} to the ledger's gossip{by}, of size {checkpoint.size}"
            opened[report.id] = Held(what, report.note, checkpoint)
        self.same_sizes([*everything, *opened.values()])
        unproven: list[str] = []
        for held in {(h.size, h.checkpoint.root): h for h in opened.values()}.values():
            found = self.compare(held, newest)
            if isinstance(found, Contradicted):
                other_cp = open_checkpoint(found.other, self.logs)
                other = Held(
                    f"the ledger's checkpoint of size {held.size} today", found.other, other_cp
                )
                raise _Stop(self.forked(Fork(held, other)))
            if isinstance(found, Denied):
                raise _Stop(denied([Denial((held,), found.answer)], newest, self.said))
            if isinstance(found, Unproven):
                unproven.append(f"  {held.what}: {found.why}")
        if reports:
            ignored = len(reports) - len(opened)
            note = f" ({ignored} not signed by the policy's log, passed over)" if ignored else ""
            self.said.append(
                f"gossip: {len(reports)} new report(s), each consistent with the newest{note}"
            )
        for report in reports:
            if report.id in opened and opened[report.id].size > newest.size:
                break
            after = report.id
        return after, unproven
