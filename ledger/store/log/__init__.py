"""The tamper-evident log: what lets anyone holding a receipt check that the events
were never changed, dropped or reordered.

- `merkle`: RFC 9162's Merkle tree as arithmetic (standard library only): leaf and
  node hashes, the stored-hash numbering, roots and proofs, and `Frontier`, the
  tree's right edge that every writer and every one-pass verifier keeps.
- `tree`: that tree in the database (`tree_hashes`), grown by every write, and the
  checkpoint each write signs and stores (`checkpoints`).
- `checkpoint`: the signed-note text of a checkpoint (C2SP tlog-checkpoint).
- `keys`: the club's signing key and its public half.
- `cosignature`: a witness's key and its cosignature of a checkpoint (C2SP
  tlog-cosignature, Ed25519 cosignature/v1).
- `policy`: whom a reader trusts: the logs, the witnesses and their quorum (C2SP
  tlog-policy).
- `quorum`: the log as a reader's policy sees it in the database: the newest stored
  checkpoint a quorum of its witnesses cosigned, held to the events' tree.
- `proofs`: inclusion and consistency proofs read from the stored tree.
- `chains`: each stream's hash chain as an auditor reads it, a page at a time, and
  the digest of every chain's head.
- `check`: one pass over the log as stored, re-deriving all of the above
  (`hazard verify`, GET /audit/verify).

Go's golang.org/x/mod/sumdb/tlog is the math (our `merkle`); what it calls the
storage is our `tree`.
"""
