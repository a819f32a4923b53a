"""The key the tests sign with: one for the whole session, so that every store, app
and `hazard` subprocess a test starts speaks for the same log."""

from __future__ import annotations

from ledger.store.log.keys import Signer

ORIGIN = "test.hazard/ledger"
SIGNER = Signer.generate(ORIGIN)
VERIFIER = SIGNER.verifier
