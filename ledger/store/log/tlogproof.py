"""A receipt to check offline: one event's inclusion proof as a C2SP tlog-proof file.

    c2sp.org/tlog-proof@v1
    extra <base64 of the bytes the event's leaf covers: codec.frame>
    index <the record's number: position - 1>
    <the inclusion path, a base64 hash a line, the leaf's sibling first (RFC 9162 2.1.3)>

    <the checkpoint's signed note, with the witnesses' cosignatures>

The checkpoint is the newest one witnesses cosigned, when its tree holds the event:
its reader checks the log's signature and the cosignatures against their own policy,
then SHA-256(0x00 || extra) up the path to the checkpoint's root, with no server and
no database. An event written since the last cosignature is proved in the newest
checkpoint instead, which the log alone has signed yet (the reader's policy then finds
no quorum, and says so); a file taken again later holds a cosigned one.

`extra` is not trusted by the format (anyone could change it): it is the event, to
read, and what the leaf is recomputed from, so that a changed extra fails the proof.
"""

from __future__ import annotations

import base64

import sqlalchemy as sa

from ledger.store.log import merkle, proofs, tree, witnessed

HEADER = "c2sp.org/tlog-proof@v1"


def text(frame: bytes, index: int, path: list[bytes], note: str) -> str:
    """The tlog-proof of record `index`, whose leaf covers `frame`, in the tree of the
    signed `note`, by the inclusion `path`."""
    lines = [HEADER, f"extra {base64.b64encode(frame).decode()}", f"index {index}"]
    lines += [base64.b64encode(h).decode() for h in path]
    return "\n".join(lines) + "\n\n" + note


def of(conn: sa.Connection, position: int) -> str:
    """The tlog-proof of the event at `position` (NoEvent past the log's end), in the
    newest cosigned checkpoint that holds it, or else the newest checkpoint."""
    found = proofs.event(conn, position)
    cosigned = witnessed.newest(conn)
    if cosigned is not None and cosigned.size >= position:
        size, note = cosigned.size, cosigned.note
    else:
        newest = proofs.latest(conn)
        size, note = newest.size, newest.note
    path = merkle.prove_record(size, position - 1, tree.reader(conn))
    return text(found.hashed(), position - 1, path, note)
