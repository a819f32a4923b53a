"""`hazard witness`: a small service that someone other than the bank runs, which
cosigns the club's checkpoints (C2SP tlog-witness, tlog-cosignature) and refuses any
that contradict what it cosigned before.

A cosignature says: "as of this time, this is the largest tree of this log I have seen,
and every tree I saw before is a prefix of it". With a few witnesses run by people the
bank does not control, the bank can no longer show two histories, or go back on one,
without one of them refusing and keeping both signed checkpoints as evidence.

    submission  the body of an add-checkpoint request, read strictly
    judge       the spec's checks, in its order; the breaches a refusal may prove
    state       the SQLite file: logs followed, their keys, the newest tree cosigned,
                the evidence; check-and-update in one IMMEDIATE transaction
    cosigning   Witness: ties them together, with the cosigner's key
    evidence    what was refused, printed whole
    home        the witness's directory: its key file and its state
    app         the HTTP surface (Flask), and nothing but the protocol
    server      `hazard witness serve`, under gunicorn

It stands on the log's own package (ledger.store.log: signed notes, the Merkle proofs,
the cosignature format) and nothing of the ledger's database.
"""
