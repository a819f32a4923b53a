"""The one place that wires the store together from configuration.

The embedded default (SQLite, no server to install) upgrades its own schema, so that
`hazard serve` on a fresh machine just works. Any other database must be upgraded on
purpose with `hazard db upgrade`; until then, this refuses to start and says so.

The key that signs the log's checkpoints is a file (HAZARD_KEY, or hazard.key here):
a store opened without one reads, but refuses to write (every write hands out a
signed checkpoint). `hazard key create` makes one; `hazard serve` makes one on a log
that has never been signed, and refuses a key other than the one that signed it.

The club's witnesses are a policy file (HAZARD_POLICY, C2SP tlog-policy) whose log is
the service's own key; the app pushes its checkpoints to those with a URL, every
HAZARD_WITNESS_INTERVAL seconds at most (ledger.pusher).
"""

from __future__ import annotations

import os
from pathlib import Path

from ledger import pusher
from ledger.books.book import Book
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import keys, proofs
from ledger.store.log.checkpoint import NoteError, open_checkpoint
from ledger.store.log.policy import Policy

KEY_ENV = "HAZARD_KEY"
DEFAULT_KEY = "hazard.key"
DEFAULT_ORIGIN = "hazard.local/ledger"
"""The log's name in its checkpoints (and its key's name) unless `--name` says another:
a club that publishes its checkpoints should give its own, such as club.example/hazard."""


def key_path() -> Path:
    """Where the signing key is: HAZARD_KEY, or hazard.key here."""
    return Path(os.environ.get(KEY_ENV) or DEFAULT_KEY)


def load_key(path: Path | None = None) -> keys.Signer | None:
    """The signing key at `path` (default: key_path()), or None if there is no file
    there; a file that is there but unusable (open to others, not a key) is BadKey."""
    path = path if path is not None else key_path()
    if not path.exists():
        return None
    return keys.load_signer(path)


def ensure_key(store: EventStore, origin: str = DEFAULT_ORIGIN) -> str | None:
    """Make sure `store` can sign, as `hazard serve` starts: a log never signed gets a
    new key at key_path() (its verifier key is returned, to print); a log already
    signed needs the key that signed it, and is refused (keys.BadKey) otherwise,
    because checkpoints under two keys would leave a reader unsure which to trust."""
    path = Path(store.key_path) if store.key_path else key_path()
    newest = proofs.latest_note(store.engine)
    if store.signer is None:
        if newest is not None:
            raise keys.BadKey(
                f"no signing key at {path}, but the log's checkpoints are signed: point "
                f"{KEY_ENV} at the key that signed them"
            )
        made = keys.create_key(path, origin)
        store.signer = keys.load_signer(path)
        return made
    if newest is not None:
        try:
            open_checkpoint(newest, [store.signer.verifier])
        except NoteError:
            raise keys.BadKey(
                f"the key at {path} ({store.signer.verifier.text()}) did not sign the "
                f"log's newest checkpoint: point {KEY_ENV} at the key that did"
            ) from None
    return None


def open_book(url: str | None = None, must_exist: bool = False) -> Book:
    """The book on `url`. With `must_exist`, an SQLite file that is not there is
    refused (db.NoDatabase) rather than made: what every command but `hazard serve`
    and `hazard db upgrade` wants."""
    url = url or db.database_url()
    if must_exist:
        db.require_exists(url)
    engine = db.make_engine(url)
    if url.startswith("sqlite"):
        db.upgrade(engine)
    else:
        try:
            db.require_current(engine)
        except db.SchemaBehind:
            engine.dispose()  # no pooled connection outlives the refusal
            raise
    path = key_path()
    try:
        signer = load_key(path)
    except keys.BadKey:
        engine.dispose()
        raise
    return Book(EventStore(engine, signer=signer, key_path=str(path)))


def witnesses(
    store: EventStore,
    path: str | None = None,
    interval: str | float | None = None,
    observe: pusher.Observer | None = None,
    timeout: float = pusher.TIMEOUT_S,
) -> tuple[Policy | None, pusher.Pusher | None]:
    """The club's policy (`path`, default HAZARD_POLICY), refused (PolicyError) unless
    its log is `store`'s key, and a pusher to its witnesses that have a URL, not yet
    started (None when there are none). `interval` defaults to HAZARD_WITNESS_INTERVAL."""
    if path is None:
        path = os.environ.get(pusher.POLICY_ENV)
    policy = pusher.policy_for(path, store.signer.verifier if store.signer else None)
    if interval is None:
        interval = os.environ.get(pusher.INTERVAL_ENV)
    seconds = pusher.interval_setting(None if interval is None else str(interval))
    if not pusher.pushed_to(policy):
        return policy, None
    assert policy is not None
    return policy, pusher.Pusher(store, policy, seconds, timeout, observe)
