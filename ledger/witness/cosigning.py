"""The witness: add-checkpoint, a log's newest cosigned checkpoint, and its own key.

Each surface (the HTTP app, the benchmark, the tests) calls `Witness`; none keeps a
copy of its rules. The work is ordered so that the write lock is held only for what
must be atomic: the body is read and the log's signature verified first, then one
IMMEDIATE transaction reads what was last cosigned, judges (ledger.witness.judge),
keeps any evidence, cosigns and stores the new tree.
"""

from __future__ import annotations

import base64
import functools
import logging
import time
from collections.abc import Callable

from ledger.store.log.checkpoint import (
    BadSignature,
    MalformedNote,
    NoteSignature,
    UnverifiedNote,
    open_note,
    parse_note,
)
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import BadKey, Verifier
from ledger.witness import state as stored
from ledger.witness.judge import Cosigned, NotSigned, UnknownLog, judge, status
from ledger.witness.state import Refusal, State
from ledger.witness.submission import Malformed, claimed_origin, read_head, read_submission

log = logging.getLogger("hazard.witness")


@functools.lru_cache(maxsize=256)
def _verifier(vkey: str) -> Verifier | None:
    try:
        return Verifier.parse(vkey)
    except BadKey:
        return None  # a key the state holds but this code cannot read trusts nothing


class Witness:
    def __init__(
        self, state: State, cosigner: Cosigner, clock: Callable[[], float] = time.time
    ) -> None:
        self.state = state
        self.cosigner = cosigner
        self.clock = clock

    def key(self) -> str:
        """This witness's public key, as a vkey."""
        return self.cosigner.key.text()

    def newest(self, hashed_origin: str) -> str | None:
        """The newest checkpoint cosigned for the log whose origin hashes to
        `hashed_origin`: the log's signatures and this witness's cosignature."""
        return self.state.newest_note(hashed_origin)

    def add_checkpoint(self, body: bytes) -> NoteSignature:
        """This witness's cosignature on the checkpoint `body` submits, or the refusal
        (Malformed, UnknownLog, NotSigned, NotAtOld, Unprovable) raised."""
        submission = read_submission(body)
        try:
            text, _ = parse_note(submission.note)
        except MalformedNote as exc:
            raise Malformed(f"the checkpoint is not a signed note: {exc}") from None
        origin = claimed_origin(text)
        keys = self.state.trusted(origin)
        if keys is None:
            raise UnknownLog(f"this witness follows no log {origin[:200]!r}")
        verifiers = [v for v in map(_verifier, keys) if v is not None]
        try:
            note = open_note(submission.note, verifiers)
        except (UnverifiedNote, BadSignature) as exc:
            raise NotSigned(f"no trusted key of {origin} signed it: {exc}") from None
        head = read_head(note.text)
        signed = note.text + "\n" + "".join(s.line() for s in note.signatures)
        cosignature = None
        with self.state.writing() as conn:
            last = stored.cosigned(conn, origin)
            judgement = judge(submission, head, last)
            now = int(self.clock())
            if judgement.breach is not None and judgement.refusal is not None:
                proof = tuple(base64.b64encode(h).decode() for h in submission.proof)
                kept = Refusal(
                    origin, judgement.breach, judgement.reason, status(judgement.refusal),
                    last.note, signed, submission.old, proof, now, now,
                )  # fmt: skip
                stored.keep(conn, kept)
            if judgement.refusal is None:
                # Never back in time, even if the clock is: a later cosignature of a
                # larger tree with an earlier time would read as the older statement.
                at = max(now, last.at, 1)
                cosignature = self.cosigner.cosign(note.text, at)
                newest = Cosigned(head.size, head.root, signed + cosignature.line(), at)
                stored.advance(conn, origin, newest)
        if judgement.refusal is not None:
            if judgement.breach is not None:
                log.warning("refused %s, kept as evidence: %s", origin, judgement.reason)
            raise judgement.refusal
        assert cosignature is not None
        log.info("cosigned %s at size %d", origin, head.size)
        return cosignature
