"""The books layer: accounts, postings, balances and the read models built from the
events. It imports the engine and the store, never the service or the API."""
