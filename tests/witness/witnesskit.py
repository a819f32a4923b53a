"""A log for a witness to follow, in memory: its key, its tree and its signed
checkpoints, and the add-checkpoint bodies it sends (made with the project's own log
code; tests/witness/test_independent_client.py makes its own from the specs alone).

    log = Log.new()
    body = log.push(old=0, size=5)          # the body of a POST /add-checkpoint
"""

from __future__ import annotations

import base64
import dataclasses
import time
from pathlib import Path

from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, sign_checkpoint
from ledger.store.log.cosignature import Cosigner
from ledger.store.log.keys import Signer
from ledger.witness.cosigning import Witness
from ledger.witness.state import State

ORIGIN = "club.example/hazard"


@dataclasses.dataclass
class Log:
    signer: Signer
    stored: list[bytes] = dataclasses.field(default_factory=list)
    frontier: merkle.Frontier = dataclasses.field(default_factory=merkle.Frontier)

    @classmethod
    def new(cls, origin: str = ORIGIN, size: int = 0) -> Log:
        log = cls(Signer.generate(origin))
        log.grow(size)
        return log

    @property
    def size(self) -> int:
        return self.frontier.size

    def grow(self, to: int, salt: bytes = b"") -> None:
        while self.frontier.size < to:
            record = salt + b"throw %d" % self.frontier.size
            self.stored += self.frontier.append(merkle.leaf_hash(record))

    def _read(self, indexes: object) -> list[bytes]:
        return [self.stored[i] for i in indexes]  # type: ignore[attr-defined]

    def root(self, size: int) -> bytes:
        self.grow(size)
        return merkle.tree_hash(size, self._read)

    def proof(self, old: int, size: int) -> list[bytes]:
        self.grow(size)
        if old == 0 or old == size:
            return []
        return merkle.prove_tree(size, old, self._read)

    def note(self, size: int, root: bytes | None = None, signer: Signer | None = None) -> str:
        """The checkpoint of `size` (grown to it first), signed by the log's key or `signer`."""
        self.grow(size)
        root = self.root(size) if root is None else root
        return sign_checkpoint(Checkpoint(self.signer.name, size, root), signer or self.signer)

    def push(self, old: int, size: int, note: str | None = None,
             proof: list[bytes] | None = None) -> bytes:  # fmt: skip
        """The add-checkpoint body for the tree of `size` (grown to it first) from `old`."""
        self.grow(size)
        lines = self.proof(old, size) if proof is None else proof
        text = f"old {old}\n" + "".join(base64.b64encode(h).decode() + "\n" for h in lines)
        return (text + "\n" + (note or self.note(size))).encode()


def a_witness(tmp_path: Path, log: Log, clock: float | None = None) -> Witness:
    """A witness with a fresh state in tmp_path, following `log`."""
    state = State.create(tmp_path / "witness.sqlite3")
    state.follow(log.signer.name, log.signer.verifier.text(), int(time.time()))
    ticks = (lambda: clock) if clock is not None else time.time
    return Witness(state, Cosigner.generate("treasurer.example/witness"), ticks)
