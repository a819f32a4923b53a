"""The store layer: the event log, its schema and encoding, snapshots and idempotency
keys. It imports the engine and nothing else of the ledger."""
