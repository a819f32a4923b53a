"""What a forger who holds the bank's database can make of an honest export file: drop
lines, and make everything the verifier recomputes consistent again: the skips over
what it dropped, the header's first and last and tree start, and the closing's counts,
money, root and consistency proof, its head proofs (taken at any seal it likes, proven
in that seal's heads tree) and its checkpoint (any the log signed). What it cannot do is
make a seal commit other heads, nor a checkpoint sign another tree, without a new
signature on a log that readers' receipts and witnesses already hold otherwise: so it
uses only the seals and checkpoints the log has. Shared by the tests that hold the
offline verifier and the independent checker to what docs/export-format.md says a file
proves whole."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import engine as hz
from ledger.exports.offline.money import Tally
from ledger.store import codec, snapshots
from ledger.store.eventstore import Recorded
from ledger.store.log import merkle, sealing, tree

Records = list[dict[str, Any]]
KEEP: Any = object()
"""`refiled`'s `heads`: the closing's head proofs as they were."""


@dataclass
class Log:
    """The database the forger reads: every event's leaf, and every checkpoint signed."""

    engine: sa.Engine
    leaves: list[bytes]
    """By position - 1."""
    checkpoints: dict[int, dict[str, Any]]
    """By size, as a closing's `checkpoint`: issued_at, note, size."""

    @classmethod
    def of(cls, engine: sa.Engine) -> Log:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT * FROM events ORDER BY position"))
            leaves = [tree.leaf(Recorded(**r._mapping)) for r in rows]
            signed = conn.execute(sa.text("SELECT size, issued_at, note FROM checkpoints"))
            checkpoints = {
                int(s): {"issued_at": str(i), "note": str(n), "size": int(s)} for s, i, n in signed
            }
        return cls(engine, leaves, checkpoints)

    def frontier(self, size: int, start: int = 0) -> merkle.Frontier:
        """The tree of the leaves from `start` (0: the first) to `size`."""
        frontier = merkle.Frontier()
        for leaf in self.leaves[start:size]:
            frontier.append(leaf)
        return frontier

    def subtree(self, level: int, number: int) -> bytes:
        start = number << level
        return self.frontier(start + (1 << level), start).root()

    def consistency(self, size: int, signed: int) -> list[str]:
        if not 0 < size < signed:
            return []
        with self.engine.connect() as conn:
            return [h.hex() for h in merkle.prove_tree(signed, size, tree.reader(conn))]

    def snapshot(self, stream: str, version: int) -> dict[str, Any]:
        """A table's `snapshot` line at `version`: its state folded from its events."""
        with self.engine.connect() as conn:
            sql = "SELECT * FROM events WHERE stream = :s AND version <= :v ORDER BY version"
            rows = conn.execute(sa.text(sql), {"s": stream, "v": version})
            upto = [Recorded(**r._mapping) for r in rows]
        state = hz.fold(r.event() for r in upto)
        return {
            "hash": upto[-1].hash,
            "position": upto[-1].position,
            "record": "snapshot",
            "state": json.loads(snapshots.encode_state(state)),
            "stream": stream,
            "version": version,
        }

    def proofs(self, position: int, wanted: list[tuple[str, str]]) -> dict[str, Any]:
        """The head proofs of `wanted` (kind, name) at the seal at `position`, those it
        has, as a closing's `heads` gives them."""
        with self.engine.connect() as conn:
            at = sealing.heads_at(conn, position)
        listed = []
        for key in wanted:
            i = at.index.get(key)
            if i is not None:
                path = [h.hex() for h in at.prove(i)]
                listed.append({"head": at.heads[i].view(), "index": i, "path": path})
        return {"position": position, "proofs": listed}


def is_body(r: dict[str, Any]) -> bool:
    return r["record"] in ("event", "edge")


def refiled(
    log: Log,
    recs: Records,
    *,
    first: int | None = None,
    last: int | None = None,
    checkpoint: int | None = None,
    heads: Any = KEEP,
) -> bytes:
    """The file `recs` (header, snapshots, body, closing), whose lines the forger has
    dropped or added, made whole again: its event and edge lines between `first` and
    `last` (by default the header's) in position order, each checkpoint line after the
    line at its size, skips over every position no line holds, the header's tree
    start, and the closing recomputed, at the checkpoint of size `checkpoint` (by
    default its own) and with the head proofs `heads` (by default its own; None: none)."""
    header, closing = dict(recs[0]), dict(recs[-1])
    first = header["first"] if first is None else first
    last = header["last"] if last is None else last
    held = sorted(
        (r for r in recs if is_body(r) and first <= r["position"] <= last),
        key=lambda r: r["position"],
    )
    signed = {r["size"]: r for r in recs if r["record"] == "checkpoint"}
    body: Records = []
    size, skipped = first - 1, 0
    tally, types = Tally(), dict[str, int]()
    for r in held:
        if r["position"] > size + 1:
            body.append(_skip(log, size, r["position"] - 1))
            skipped += r["position"] - 1 - size
        body.append(r)
        size = r["position"]
        if size in signed:
            body.append(signed[size])
        if r["record"] == "event":
            types[r["type"]] = types.get(r["type"], 0) + 1
            tally.count(r["stream"], recorded(r).event())
    if size < last:
        body.append(_skip(log, size, last))
        skipped += last - size
    start = log.frontier(first - 1)
    header.update(
        first=first,
        last=last,
        tree_start={"hashes": [h.hex() for h in start.hashes], "size": start.size},
    )
    checkpoint_at = closing["checkpoint"] if checkpoint is None else log.checkpoints[checkpoint]
    closing.update(
        checkpoint=checkpoint_at,
        consistency=log.consistency(last, checkpoint_at["size"]),
        events=sum(types.values()),
        money=tally.view(),
        root=log.frontier(last).root().hex(),
        size=last,
        skipped=skipped,
        types=dict(sorted(types.items())),
    )
    if heads is not KEEP:
        closing.pop("heads", None)
        if heads is not None:
            closing["heads"] = heads
    if closing.get("cosigned", {}).get("size", 0) > checkpoint_at["size"]:
        del closing["cosigned"]
    snapshots = [r for r in recs if r["record"] == "snapshot"]
    lines = [header, *snapshots, *body, closing]
    return b"".join(codec.canonical(r) + b"\n" for r in lines)


def _skip(log: Log, size: int, to: int) -> dict[str, Any]:
    hashes = [log.subtree(level, n).hex() for level, n in merkle.cover(size, to)]
    return {"from": size + 1, "hashes": hashes, "record": "skip", "to": to}


def recorded(r: dict[str, Any]) -> Recorded:
    """An event line as the row the store keeps."""
    fields = {k: r[k] for k in Recorded._fields if k != "payload"}
    return Recorded(**fields, payload=codec.canonical(r["payload"]).decode())
