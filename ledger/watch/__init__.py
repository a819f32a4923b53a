"""A client that remembers: `hazard watch`, after Go's sumdb client.

The go command keeps the last tree it saw of the checksum database, checks on every
fetch that the new tree extends it, and on a fork stops and prints both signed notes.
A watcher does the same for the club's log, with more to remember: the newest
checkpoint it verified (cosigned by the quorum of the reader's own policy), and every
receipt handed to it, a write's checkpoint or a tlog-proof. Each run it fetches the
newest cosigned checkpoint, checks it under the policy, proves that it is consistent
with everything held, compares the checkpoints others reported, and keeps the newest.
When the log signed two histories, it prints the two notes that cannot both be true,
and names where history was changed, to the range the receipts prove and no closer.
When the ledger says it has no checkpoint of a size the log signed (a log restored
from a backup cut short), it prints the note held that proves the size existed.

- `state`: the file it remembers in, written atomically.
- `sources`: where it reads the log (the ledger over HTTP, or a database).
- `verdicts`: one run's check of the ledger against what is held.
- `evidence`: what a run found, and a fork's or a denial's proof, in words.
- `receipts`: receipts handed to the watcher, and a tlog-proof checked alone.
"""
