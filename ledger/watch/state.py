"""What a watcher remembers between runs, in one JSON file (default hazard-watch.json).

    {"format": "hazard-watch/1",
     "newest": "<the newest cosigned checkpoint it verified, as a signed note>",
     "receipts": [{"name": "deposit.txt", "text": "<the note, or the tlog-proof>",
                   "checked_with": 80}, ...],
     "gossip_after": 12}

`checked_with` is how far each receipt is known to agree with what the watcher holds,
which spares a request on every run for receipts settled long ago: a receipt no larger
than it is a prefix of the newest held (proven when the watcher held a checkpoint of
that size, which the newest extends); a larger one extends the newest held's first
`checked_with` events. Null: not checked yet. `gossip_after` is the last report of the
ledger's gossip checked.

Nothing here is trusted on reading: every note is checked against the reader's policy
on every run. The file is written whole or not at all (a temporary file beside it,
fsynced, renamed over it), so a crash leaves the old state or the new one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ledger.store.log.checkpoint import Checkpoint, NoteError, parse_note
from ledger.store.log.tlogproof import HEADER, TlogProof, TlogProofError

FORMAT = "hazard-watch/1"
MAX_STATE = 64 << 20
"""The largest state file read: thousands of receipts, far from a memory hazard."""


class StateError(ValueError):
    """A state file that is not one this watcher wrote; the message says what is wrong."""


class ReceiptError(ValueError):
    """A receipt that is neither a checkpoint note nor a tlog-proof."""


@dataclasses.dataclass(frozen=True)
class Receipt:
    """A signed checkpoint handed to the watcher: a write's receipt (the note) or a
    tlog-proof file, kept as it was given."""

    name: str
    text: str
    checked_with: int | None = None

    @property
    def is_proof(self) -> bool:
        return self.text.startswith(HEADER)

    @property
    def note(self) -> str:
        """The signed checkpoint it holds."""
        return TlogProof.parse(self.text).note if self.is_proof else self.text

    def checkpoint(self) -> Checkpoint:
        """Its checkpoint, read for form only: the policy's keys are checked on use."""
        return Checkpoint.parse(parse_note(self.note)[0])

    @classmethod
    def read(cls, name: str, data: bytes) -> Receipt:
        """A receipt from a file's bytes; ReceiptError when it is neither kind."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ReceiptError(f"{name} is not UTF-8 text") from None
        if not text.startswith(HEADER):
            # A note ends with one newline; `jq -r` or an editor may have added more.
            text = text.rstrip("\r\n") + "\n"
        receipt = cls(name, text)
        try:
            receipt.checkpoint()
        except (NoteError, TlogProofError) as e:
            raise ReceiptError(
                f"{name} is neither a signed checkpoint nor a tlog-proof: {e}"
            ) from None
        return receipt

    def view(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class State:
    newest: str | None = None
    receipts: tuple[Receipt, ...] = ()
    gossip_after: int = 0

    def text(self) -> str:
        data = {
            "format": FORMAT,
            "newest": self.newest,
            "receipts": [r.view() for r in self.receipts],
            "gossip_after": self.gossip_after,
        }
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def parse(cls, text: str) -> State:
        try:
            data = json.loads(text)
        except ValueError as e:
            raise StateError(f"not JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StateError(f"its format is not {FORMAT!r}")
        newest = data.get("newest")
        receipts = data.get("receipts")
        after = data.get("gossip_after")
        if newest is not None and not isinstance(newest, str):
            raise StateError("`newest` is not a note")
        if not isinstance(receipts, list) or not isinstance(after, int) or after < 0:
            raise StateError("`receipts` is not a list, or `gossip_after` not a count")
        try:
            if newest is not None:
                Checkpoint.parse(parse_note(newest)[0])
            kept = tuple(_receipt(r) for r in receipts)
        except (NoteError, TlogProofError, TypeError, KeyError) as e:
            raise StateError(f"a checkpoint in it does not read: {e}") from None
        return cls(newest, kept, after)


def _receipt(data: Any) -> Receipt:
    if not isinstance(data, dict) or set(data) != {"name", "text", "checked_with"}:
        raise TypeError("a receipt is {name, text, checked_with}")
    name, text, checked = data["name"], data["text"], data["checked_with"]
    if not isinstance(name, str) or not isinstance(text, str):
        raise TypeError("a receipt's name and text are strings")
    if checked is not None and (not isinstance(checked, int) or checked < 1):
        raise TypeError("a receipt's checked_with is a size or null")
    receipt = Receipt(name, text, checked)
    receipt.checkpoint()
    return receipt


def load(path: Path) -> State:
    """The state an earlier run saved at `path`; an empty one when there is no file."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_STATE + 1)
    except FileNotFoundError:
        return State()
    except OSError as e:
        raise StateError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > MAX_STATE:
        raise StateError(f"{path} is larger than a watcher's state ({MAX_STATE >> 20} MiB)")
    try:
        return State.parse(data.decode("utf-8"))
    except (StateError, UnicodeDecodeError) as e:
        raise StateError(
            f"{path} is not a watcher's state, or it was damaged ({e}). It is left as it "
            "is: restore it from a copy, or move it aside to start again (a new state "
            "trusts the first checkpoint it sees)"
        ) from None


def save(path: Path, state: State) -> None:
    """Write `state` to `path` whole or not at all: a temporary file in the same
    directory, fsynced, renamed over it, and the directory fsynced."""
    directory = path.resolve().parent
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(state.text())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # a platform that cannot open a directory: the rename is done
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
