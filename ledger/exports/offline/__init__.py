"""The offline check of an export file (docs/export-format.md): no database, no network.

`read` checks a file line by line and hands on each record only once it is checked, so
that a restore (ledger.exports.restore) can write as it reads and roll back at the
first `Disagreement`; `verify` reads it all and says what was verified, and what was
taken on trust. Memory stays bounded however long the file: of the tree only its
frontier is kept (at most 64 hashes), of each stream its head, of each table its
referee (the table's state), and tallies; never the file.

What is checked, in the order of the format's "What hazard verify checks", and where:

- every line is a JSON object with the right `record`, in the right order (`lines`;
  the header's fields, `header`; an event line's, `events`), the positions of events
  and skips in sequence from `first` to `last` (`tree`);
- each stream's versions go up by one and its hash chain holds (`chains`); each
  event's `leaf` is the hash of its document (`tree`);
- time only goes forward: no event recorded before the file's event before it, no
  checkpoint dated before the events it covers, and in a file with `since`/`until`,
  every event inside them (`times`);
- the tree built from `tree_start`, the leaves and the skipped subtrees has, at each
  `checkpoint` line, the root that checkpoint signs, and at the end the closing root,
  which the consistency proof ties to the closing's signed checkpoint; every signature
  is by the header's key (and that is the key the caller expects, if given) (`tree`);
- every table is replayed through the engine's referee (engine.referee) from its
  opening or its snapshot, which re-runs every command and holds what it derives to
  the file, under the rule set its TableOpened (or snapshot) names, which must be the
  header's (`tables`);
- the closing's counts (`closing`) and money (`money`) are recomputed from the events;
- the closing's cosigned checkpoint is a prefix of its checkpoint and, under the
  reader's policy, holds: the log's signature and a quorum of cosignatures (`witnesses`).

`verify(..., jobs=N)` makes the same check on N processes, each checking the streams
it is given, with the serial check's verdict (`shares`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator

from ledger.exports.offline import disputed, limited, shares
from ledger.exports.offline.lines import Check, Progress
from ledger.exports.verdict import (
    FIGURES,
    CheckpointLine,
    Closing,
    CosignedLine,
    Disagreement,
    EdgeLine,
    EventLine,
    Header,
    Item,
    Money,
    SkipLine,
    Snapshot,
    Verified,
    figures_view,
)
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy

__all__ = [
    "FIGURES",
    "CheckpointLine",
    "Closing",
    "CosignedLine",
    "Disagreement",
    "EdgeLine",
    "EventLine",
    "Header",
    "Item",
    "Money",
    "Progress",
    "SkipLine",
    "Snapshot",
    "Verified",
    "figures_view",
    "read",
    "verify",
]


def read(
    lines: Iterable[bytes], key: Verifier | None = None, policy: Policy | None = None
) -> Iterator[Item]:
    """Check the export `lines` (bytes, with or without their newline) and yield each
    record once it is checked; raise Disagreement at the first line that disagrees.
    With `key`, the file must be signed by it; without, the header's key is used (and
    the caller should say so). With the reader's `policy`, the closing's cosigned
    checkpoint must hold under it (the closing is not handed on otherwise)."""
    return Check(key, policy=policy).run(lines)


def verify(
    lines: Iterable[bytes],
    key: Verifier | None = None,
    progress: Progress | None = None,
    policy: Policy | None = None,
    jobs: int = 1,
) -> Verified:
    """Check the whole file; what was verified, or Disagreement. With `jobs` above 1,
    on that many processes (ledger.exports.offline.shares), with the same verdict: a
    file on disk or lines in memory; lines from a pipe are checked serially, as is a
    file that does not verify, so that its Disagreement is the serial check's."""
    # The cyclic collector held off: a check allocates a row, an event and a table
    # state or two per line, none in a cycle, and the collector's passes over the
    # tables' states cost a tenth of the time. Reference counting frees them as usual.
    was = gc.isenabled()
    gc.disable()
    try:
        if jobs > 1 and not limited.present(lines):  # limits are judged across streams
            verified = shares.verify(lines, key, progress, policy, jobs)
            if verified is not None:
                return verified
        # Read ahead for the tables a dispute comes on: the others' referees keep no
        # rounds to judge one (most of the check's memory in a file of many tables).
        check = Check(key, progress, policy, disputed.tables(lines))
        for _ in check.run(lines):
            pass
    finally:
        if was:
            gc.enable()
    return check.verified()
