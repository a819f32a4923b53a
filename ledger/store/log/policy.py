"""Whom a reader trusts: a policy in the c2sp.org/tlog-policy format.

    # the club's ledger, and the three who watch it
    log hazard.example/ledger+8a1c5f0e+AR...   https://ledger.example/
    witness treasurer treasurer.example/w+5d2b1a33+BM...  http://treasurer.example:7380
    witness auditor auditor.example/w+0c4e9d71+BN...      http://auditor.example:7380
    witness chair chair.example/w+e2f0a6b4+BK...
    group members 2 treasurer auditor chair
    quorum members

A checkpoint holds under the policy when one of its logs signed it and the quorum of
its witnesses cosigned it: here any two of the three. Groups nest (`all`, `any` or a
number k of their members), each name is defined before it is used, and `quorum none`
asks for no witness at all. URLs are optional: a ledger pushes its checkpoints to the
witnesses that have one; an offline reader needs only the keys.

The policy is always the reader's own file, never one the ledger, a database or an
export names: whoever holds the log's key could name a policy of their own witnesses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sized

from ledger.store.log.checkpoint import Checkpoint, open_checkpoint
from ledger.store.log.cosignature import WitnessKey, cosignatures
from ledger.store.log.keys import BadKey, Verifier

MAX_ENTRIES = 256
"""More logs, witnesses or groups than this are refused (the spec asks for 32 at least)."""

NONE = "none"


class PolicyError(ValueError):
    """A policy file that is refused; the message names the line."""


@dataclasses.dataclass(frozen=True)
class Log:
    key: Verifier
    url: str | None = None


@dataclasses.dataclass(frozen=True)
class Witness:
    name: str
    key: WitnessKey
    url: str | None = None


@dataclasses.dataclass(frozen=True)
class Group:
    name: str
    threshold: int
    members: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A checkpoint read under a policy: the checkpoint (signed by one of the policy's
    logs), the witnesses that cosigned it with each one's time, and whether they make
    the quorum."""

    checkpoint: Checkpoint
    cosigned: Mapping[str, int]
    quorum: bool


@dataclasses.dataclass(frozen=True)
class Policy:
    logs: tuple[Log, ...]
    witnesses: Mapping[str, Witness]
    groups: Mapping[str, Group]
    quorum: str

    @classmethod
    def parse(cls, text: str | bytes) -> Policy:
        return _Parser().read(text)

    @classmethod
    def read_file(cls, path: str) -> Policy:
        try:
            with open(path, "rb") as file:
                data = file.read(1 << 20)
        except OSError as e:
            raise PolicyError(f"cannot read the policy {path}: {e.strerror}") from None
        try:
            return cls.parse(data)
        except PolicyError as e:
            raise PolicyError(f"{path}: {e}") from None

    def witnessed(self, cosigned: Iterable[str]) -> bool:
        """Whether the witnesses named in `cosigned` make the quorum."""
        done = set(cosigned) & set(self.witnesses)
        return self._holds(self.quorum, done)

    def _holds(self, name: str, done: set[str]) -> bool:
        if name == NONE:
            return True
        if name in self.witnesses:
            return name in done
        group = self.groups[name]
        return sum(self._holds(m, done) for m in group.members) >= group.threshold

    def verify(self, note: str | bytes) -> Verdict:
        """The checkpoint in `note`, signed by one of the logs (or NoteError), with
        the policy's witnesses that cosigned it (a bad cosignature by one of them is
        BadSignature, a NoteError) and whether they make the quorum."""
        checkpoint = open_checkpoint(note, [log.key for log in self.logs])
        found = cosignatures(note, [w.key for w in self.witnesses.values()])
        named = {w.name: found[w.key] for w in self.witnesses.values() if w.key in found}
        return Verdict(checkpoint, named, self.witnessed(named))

    def describe(self) -> str:
        """The quorum in words: `2 of treasurer, auditor, chair`."""
        return self._words(self.quorum)

    def text(self, urls: bool = True) -> str:
        """The policy as a file, which `parse` reads back as the same policy: to show it,
        or to hand to a reader. Without `urls`, the keys and the quorum alone: all that
        checking a checkpoint takes (a witness's address is the club's business)."""
        lines = [f"log {log.key.text()}" + (f" {log.url}" if urls and log.url else "")
                 for log in self.logs]  # fmt: skip
        lines += [f"witness {w.name} {w.key.text()}" + (f" {w.url}" if urls and w.url else "")
                  for w in self.witnesses.values()]  # fmt: skip
        lines += [f"group {g.name} {g.threshold} {' '.join(g.members)}"
                  for g in self.groups.values()]  # fmt: skip
        return "\n".join([*lines, f"quorum {self.quorum}"]) + "\n"

    def _words(self, name: str) -> str:
        if name == NONE:
            return "no witness"
        if name in self.witnesses:
            return name
        group = self.groups[name]
        parts = [self._words(m) for m in group.members]
        inner = ", ".join(f"({p})" if " of " in p else p for p in parts)
        if group.threshold == len(group.members) and len(parts) > 1:
            return f"all of {inner}"
        return f"{group.threshold} of {inner}"


class _Parser:
    def __init__(self) -> None:
        self.logs: list[Log] = []
        self.witnesses: dict[str, Witness] = {}
        self.groups: dict[str, Group] = {}
        self.quorum: str | None = None
        self.keys: set[bytes] = set()
        self.members: set[str] = set()

    def read(self, data: str | bytes) -> Policy:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        for number, line in enumerate(raw.split(b"\n"), start=1):
            bad = next((b for b in line if (b < 0x20 and b != 0x09) or b == 0x7F), None)
            if bad is not None:
                raise PolicyError(f"line {number}: control character {bad:#04x}")
            words = line.decode("utf-8", "surrogateescape").replace("\t", " ").split(" ")
            words = [w for w in words if w]
            if not words or words[0].startswith("#"):
                continue
            try:
                self.line(words)
            except (PolicyError, BadKey) as e:
                raise PolicyError(f"line {number}: {e}") from None
        if self.quorum is None:
            raise PolicyError("no quorum line (write `quorum none` to ask for no witness)")
        return Policy(tuple(self.logs), self.witnesses, self.groups, self.quorum)

    def line(self, words: list[str]) -> None:
        keyword, args = words[0], words[1:]
        if keyword == "log":
            if len(args) not in (1, 2):
                raise PolicyError("a log line is `log <vkey> [<url>]`")
            log = Verifier.parse(args[0])
            self._new_key(log.public_key, "log")
            self._room(self.logs, "logs")
            self.logs.append(Log(log, args[1] if len(args) == 2 else None))
        elif keyword == "witness":
            if len(args) not in (2, 3):
                raise PolicyError("a witness line is `witness <name> <vkey> [<url>]`")
            name = self._new_name(args[0])
            witness = WitnessKey.parse(args[1])
            self._new_key(witness.public_key, "witness")
            self._room(self.witnesses, "witnesses")
            self.witnesses[name] = Witness(name, witness, args[2] if len(args) == 3 else None)
        elif keyword == "group":
            if len(args) < 3:
                raise PolicyError("a group line is `group <name> all|any|<k> <name>...`")
            name = self._new_name(args[0])
            if len(set(args[2:])) != len(args[2:]):
                raise PolicyError(f"group {name} lists a member twice")
            members = tuple(self._member(m) for m in args[2:])
            threshold = self._threshold(args[1], len(members))
            self._room(self.groups, "groups")
            self.groups[name] = Group(name, threshold, members)
        elif keyword == "quorum":
            if len(args) != 1:
                raise PolicyError("a quorum line is `quorum <name>`")
            if self.quorum is not None:
                raise PolicyError("a second quorum line")
            if args[0] != NONE and args[0] not in self.witnesses and args[0] not in self.groups:
                raise PolicyError(f"quorum {args[0]}: no witness or group of that name above")
            self.quorum = args[0]
        else:
            raise PolicyError(f"unknown keyword {keyword!r} (log, witness, group or quorum)")

    def _new_name(self, name: str) -> str:
        if name == NONE:
            raise PolicyError("`none` is the name of no witness, and cannot be defined")
        if name in self.witnesses or name in self.groups:
            raise PolicyError(f"{name} is defined twice")
        return name

    def _member(self, name: str) -> str:
        if name == NONE:
            raise PolicyError("`none` cannot be a group's member")
        if name not in self.witnesses and name not in self.groups:
            raise PolicyError(f"{name}: no witness or group of that name above")
        if name in self.members:
            raise PolicyError(f"{name} is a member of two groups")
        self.members.add(name)
        return name

    @staticmethod
    def _threshold(word: str, n: int) -> int:
        if word == "all":
            return n
        if word == "any":
            return 1
        if (
            not (word.isdigit() and len(word) <= 4)
            or word != str(int(word))
            or not 1 <= int(word) <= n
        ):
            raise PolicyError(f"a group's threshold is all, any or 1 to {n}, not {word!r}")
        return int(word)

    def _new_key(self, public_key: bytes, what: str) -> None:
        if public_key in self.keys:
            raise PolicyError(f"this {what}'s key is listed twice")
        self.keys.add(public_key)

    @staticmethod
    def _room(entries: Sized, what: str) -> None:
        if len(entries) >= MAX_ENTRIES:
            raise PolicyError(f"more than {MAX_ENTRIES} {what}")
