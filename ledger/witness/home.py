"""A witness's directory: its key and its state, side by side.

    hazard-witness/            mode 0700
        witness.key            the cosigner's secret, mode 0600, never overwritten
        witness.sqlite3        what it follows and cosigned (ledger.witness.state)

`hazard witness init` makes it; every other command opens it. The directory is
HAZARD_WITNESS_DIR, or `--dir`, or hazard-witness in the working directory.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import BadKey, Verifier, read_secret, write_secret
from ledger.witness.state import State, StateError

DIR_ENV = "HAZARD_WITNESS_DIR"
DEFAULT_DIR = "hazard-witness"
KEY_FILE = "witness.key"
STATE_FILE = "witness.sqlite3"
DEFAULT_PORT = 7380
"""Where `hazard witness serve` listens unless told otherwise."""


class NoWitness(Exception):
    """No witness where one was looked for, or one half made; the message says where."""


def directory(given: str | Path | None = None) -> Path:
    """The witness's directory: `given`, else HAZARD_WITNESS_DIR, else hazard-witness."""
    return Path(given or os.environ.get(DIR_ENV) or DEFAULT_DIR)


def init(where: Path, name: str, log: Verifier, origin: str | None = None) -> Cosigner:
    """A new witness in `where`: a key named `name`, and a state that follows the log
    `origin` (default: the key's name, as the log signs under its origin) trusting `log`."""
    if (where / KEY_FILE).exists() or (where / STATE_FILE).exists():
        raise NoWitness(f"{where} already holds a witness; a witness's key is never replaced")
    cosigner = Cosigner.generate(name)  # the name is checked before anything is made
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    State.create(where / STATE_FILE).follow(origin or log.name, log.text(), int(time.time()))
    write_secret(where / KEY_FILE, cosigner.text())
    return cosigner


def load_cosigner(where: Path) -> Cosigner:
    """The witness's key in `where`, refused if others may read it."""
    if not where.is_dir():
        raise NoWitness(f"no witness at {where}: make one with `hazard witness init`")
    path = where / KEY_FILE
    text = read_secret(path)
    try:
        return Cosigner.parse(text)
    except BadKey as exc:
        raise BadKey(f"{path}: {exc}") from None


def open_state(where: Path) -> State:
    """The witness's state in `where` (opened on its first use, in each thread)."""
    path = where / STATE_FILE
    if not path.is_file():
        raise NoWitness(f"no witness's state at {path}: make one with `hazard witness init`")
    state = State(path)
    try:
        state.connection()  # refused now, with a clear message, if it is not a witness's
    except StateError as exc:
        raise NoWitness(str(exc)) from None
    finally:
        state.close()  # no connection may cross a fork into a server's worker
    return state
