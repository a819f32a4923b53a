"""The independent checker of export files, written from docs/export-format.md alone
(it imports nothing from ledger: a test holds it so), shared by the tests that hold
the ledger's files to it."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from engine import events as ev
from engine.errors import Disagreement
from engine.money import holds
from engine.referee import Referee
from engine.rules import from_mapping

# ---------------------------------------------------------------------------------------
# The checker: hashlib, json, cryptography and engine only.
# ---------------------------------------------------------------------------------------

ZEROS = "0" * 64
NOT_HASHED = ("record", "leaf", "hash", "prev_hash")
FIGURES = ("deposited", "paid", "staked", "withdrawn")
ADJUSTED = "adjusted"
"""The closing's figure for disputes' party-to-party transfers, written only when not 0."""
WINDOW = 50
"""How many rounds old a round may be and still be disputed."""


TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
"""The one form of recorded_at, and of a scope's since and until."""


class Rejected(Exception):
    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def node(left: bytes, right: bytes) -> bytes:
    return sha(b"\x01" + left + right)  # RFC 9162 2.1.1


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def parse_key(text: str) -> tuple[str, bytes, bytes]:
    """A C2SP note verifier key `name+hexid+base64(0x01 || ed25519 key)`: (name, key id,
    public key), the id checked: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    name, hex_id, material = text.split("+", 2)
    raw = base64.b64decode(material)
    assert raw[0] == 1 and len(raw) == 33, "an Ed25519 key"
    key_id = sha(name.encode() + b"\n" + raw)[:4]
    assert key_id.hex() == hex_id, "the key id is the key's"
    return name, key_id, raw[1:]


def open_note(note: str, key: tuple[str, bytes, bytes]) -> tuple[str, int, bytes]:
    """The checkpoint in a signed note, once `key` signed it: (origin, size, root)."""
    name, key_id, public = key
    text, _, signatures = note.rpartition("\n\n")
    text += "\n"
    good = False
    for line in signatures.rstrip("\n").split("\n"):
        dash, signer, blob = line.split(" ")
        assert dash == "\u2014"
        raw = base64.b64decode(blob)
        if signer != name or raw[:4] != key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], text.encode())
        except InvalidSignature:
            raise ValueError("a signature by the key does not verify") from None
        good = True
    if not good:
        raise ValueError("not signed by the key")
    origin, size, root = text.split("\n")[:3]
    return origin, int(size), base64.b64decode(root)


def signed_second(note: str) -> str:
    """A checkpoint's `time` line, to the second, as a recorded_at starts
    (`2026-11-23T14:02:11`); "" without one. The note's text ends at its blank line."""
    for line in note.split("\n"):
        if not line:
            break
        if line.startswith("time "):
            return line[5:24]
    return ""


def parse_witness(text: str) -> tuple[str, bytes, bytes]:
    """A witness's vkey (c2sp.org/tlog-cosignature): `name+hexid+base64(0x04 || key)`,
    the id SHA-256(name || 0x0A || 0x04 || key)[:4]."""
    name, hex_id, material = text.split("+", 2)
    raw = base64.b64decode(material)
    assert raw[0] == 4 and len(raw) == 33, "an Ed25519 cosignature/v1 key"
    key_id = sha(name.encode() + b"\n" + raw)[:4]
    assert key_id.hex() == hex_id, "the key id is the key's"
    return name, key_id, raw[1:]


def cosigned_by(note: str, witness: tuple[str, bytes, bytes]) -> bool:
    """Whether `witness` cosigned the checkpoint in `note`: a line by its name and key
    id whose blob is timestamp (8 bytes, big-endian) || Ed25519 signature over
    "cosignature/v1\ntime <timestamp>\n" || the checkpoint's text. A line that names
    the witness but does not verify is a forgery: the note is refused."""
    name, key_id, public = witness
    text, _, signatures = note.rpartition("\n\n")
    text += "\n"
    found = False
    for line in signatures.rstrip("\n").split("\n"):
        _, signer, blob = line.split(" ")
        raw = base64.b64decode(blob)
        if signer != name or raw[:4] != key_id:
            continue
        timestamp = int.from_bytes(raw[4:12], "big")
        message = b"cosignature/v1\ntime %d\n" % timestamp + text.encode()
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(raw[12:], message)
        except InvalidSignature:
            raise ValueError(f"the cosignature by {name} does not verify") from None
        found = True
    return found


def consistent(
    first: int, second: int, first_hash: bytes, second_hash: bytes, proof: list[bytes]
) -> bool:
    """RFC 9162 2.1.4.2, step by step."""
    if first == second:
        return not proof and first_hash == second_hash
    if not proof:
        return False
    if first & (first - 1) == 0:
        proof = [first_hash, *proof]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_hash and sr == second_hash and sn == 0


SPECIAL: dict[str, Callable[[Any], Any]] = {
    "rules": from_mapping,
    "limits": lambda d: ev.Limits(**d),
    "proposition": lambda d: ev.Proposition(ev.PropositionKind(d["kind"]), frozenset(d["totals"])),
    "transfers": lambda d: tuple(ev.Transfer(t["source"], t["target"], t["amount"]) for t in d),
    "breakage": Fraction,
}


def table_event(record: dict[str, Any]) -> ev.Event:
    """A table's event line as the engine's event."""
    cls = getattr(ev, record["type"])
    fields = [f.name for f in dataclasses.fields(cls)][1:]
    payload = record["payload"]
    assert sorted(payload) == sorted(fields), record["type"]
    values = {f: SPECIAL[f](payload[f]) if f in SPECIAL else payload[f] for f in fields}
    event: ev.Event = cls(record["version"], **values)
    return event


def server_dice(seed: bytes, client_seed: str, nonce: int) -> tuple[int, int]:
    """The format's "Server dice": HMAC-SHA256 blocks read a byte at a time, bytes from
    252 up passed over, b % 6 + 1 the die."""
    dice: list[int] = []
    c = 0
    while len(dice) < 2:
        block = hmac.new(seed, f"{client_seed}:{nonce}:{c}".encode(), hashlib.sha256).digest()
        dice += [b % 6 + 1 for b in block if b < 252]
        c += 1
    return dice[0], dice[1]


@dataclasses.dataclass
class Turn:
    """A caster's turn at a server-dice table: its commitment and its throws so far."""

    commitment: str
    throws: list[tuple[int, dict[str, Any]]] = dataclasses.field(default_factory=list)


def hold_turn(number: int, r: dict[str, Any], turns: dict[str, Turn]) -> int:
    """Check one event of a server-dice turn; the throws it proved drawn."""
    stream, payload = r["stream"], r["payload"]
    if r["type"] == "SeedCommitted":
        turns[stream] = Turn(payload["commitment"])
        return 0
    turn = turns.get(stream)
    if r["type"] == "ClientSeedGiven":
        if turn is None or payload["nonce"] != len(turn.throws):
            raise Rejected(number, "a client seed logged out of its turn's order")
        return 0
    if r["type"] == "DiceDrawn":
        if turn is None or payload["nonce"] != len(turn.throws):
            raise Rejected(number, "a server throw out of its turn's order")
        turn.throws.append((number, payload))
        return 0
    if turn is None:
        raise Rejected(number, "a seed revealed with no turn committed to")
    del turns[stream]
    seed = bytes.fromhex(payload["seed"])
    if hashlib.sha256(seed).hexdigest() != turn.commitment:
        raise Rejected(number, "the seed revealed is not the one its turn committed to")
    for line, throw in turn.throws:
        drawn = server_dice(seed, throw["client_seed"], throw["nonce"])
        if drawn != (throw["die1"], throw["die2"]):
            raise Rejected(line, f"the revealed seed draws {drawn}, not the dice recorded")
    return len(turn.throws)


SERVER_DICE = frozenset({"SeedCommitted", "ClientSeedGiven", "DiceDrawn", "SeedRevealed"})


@dataclasses.dataclass
class Given:
    """The client seeds a table has logged: the one waiting for its throw, if any, and
    whether it has logged one at all."""

    waiting: dict[str, Any] | None = None
    logs: bool = False


def hold_seed(number: int, r: dict[str, Any], given: dict[str, Given]) -> None:
    """The format's "Server dice": a logged client seed's throw is the table's next
    event, drawn from that seed; once a table logs seeds, every throw is drawn from one."""
    seen = given.setdefault(r["stream"], Given())
    kind, payload = r["type"], r["payload"]
    if seen.waiting is not None:
        if kind != "DiceDrawn":
            raise Rejected(number, "the table's next event after a logged seed is not its throw")
        logged = (seen.waiting["client_seed"], seen.waiting["nonce"])
        if (payload["client_seed"], payload["nonce"]) != logged:
            raise Rejected(number, "a throw drawn from another seed than the one logged for it")
        seen.waiting = None
    elif kind == "DiceDrawn" and seen.logs:
        raise Rejected(number, "a throw drawn from a seed that was not logged first")
    if kind == "ClientSeedGiven":
        seen.waiting, seen.logs = payload, True


def ledger_account(table: str, local: str) -> str:
    if local.startswith("escrow:"):
        return f"escrow:{table}:{local.removeprefix('escrow:')}"
    return local if local == "setter" else f"player:{local}"


def party_nets(transfers: Any) -> dict[str, int]:
    """Each party's gain over `transfers` (table-local names), escrows aside, zeros
    dropped."""
    nets: dict[str, int] = {}
    for t in transfers:
        for who, amount in ((t.source, -t.amount), (t.target, t.amount)):
            if not who.startswith("escrow:"):
                nets[who] = nets.get(who, 0) + amount
    return {who: n for who, n in nets.items() if n}


@dataclasses.dataclass
class Disputes:
    """A table's bets by the round they were placed in, and what they moved: what the
    format's "Disputes" rules are read against. Only a table replayed from its opening
    is held to them (this checker replays no other)."""

    round_of: dict[str, int] = dataclasses.field(default_factory=dict)
    moved: dict[str, list[ev.Transfer]] = dataclasses.field(default_factory=dict)
    voiding: tuple[int, str, dict[str, dict[str, int]]] | None = None
    """A void being checked: (its line, its dispute, each bet's reversal still due)."""

    def see(self, number: int, event: ev.Event, state: Any) -> None:
        """Hold `event` to the rules, `state` the table before it; then note its money."""
        if self.voiding is not None and not (
            isinstance(event, ev.BetAdjusted) and event.dispute_id == self.voiding[1]
        ):
            self.void_done()
        if isinstance(event, ev.DisputeOpened):
            self.opened(number, event, state)
        elif isinstance(event, ev.DisputeResolved) and event.resolution == "voided":
            self.voiding = (number, event.dispute_id, self.reversals(event.round))
        elif isinstance(event, ev.BetAdjusted):
            if any(t.source.startswith("escrow:") or t.target.startswith("escrow:")
                   for t in event.transfers):  # fmt: skip
                raise Rejected(number, "an adjustment goes party to party, not by an escrow")
            if self.voiding is not None and event.adjustment == "reversal":
                due = self.voiding[2].pop(event.bet_id, None)
                if due != party_nets(event.transfers):
                    raise Rejected(
                        number,
                        f"the reversal of {event.bet_id} moves {party_nets(event.transfers)}, "
                        f"not the bet's net reversed ({due})",
                    )
            return
        bet_id = getattr(event, "bet_id", None)
        if bet_id is not None:
            self.round_of.setdefault(bet_id, state.round)
            self.moved.setdefault(bet_id, []).extend(holds(event))

    def opened(self, number: int, event: ev.DisputeOpened, state: Any) -> None:
        if not state.round - WINDOW <= event.round < state.round:
            raise Rejected(
                number, f"round {event.round} is not an ended round of the last {WINDOW}"
            )
        if event.role not in ("setter", "croupier", "player"):
            raise Rejected(number, f"a claimant is no {event.role!r}")
        staked = {
            t.source
            for bet, round_ in self.round_of.items()
            if round_ == event.round
            for t in self.moved[bet]
            if t.target.startswith("escrow:") and t.amount > 0
        }
        if event.role == "player" and event.claimant not in staked:
            raise Rejected(number, f"{event.claimant} had no money in round {event.round}")

    def reversals(self, round_: int) -> dict[str, dict[str, int]]:
        """Each bet of the round that moved money, and the opposite of its net."""
        due = {}
        for bet, placed in self.round_of.items():
            nets = party_nets(self.moved[bet]) if placed == round_ else {}
            if nets:
                due[bet] = {who: -n for who, n in nets.items()}
        return due

    def void_done(self) -> None:
        assert self.voiding is not None
        number, dispute, due = self.voiding
        self.voiding = None
        if due:
            raise Rejected(number, f"{dispute} voids its round but leaves {sorted(due)} as paid")


# -- What a file proves whole: the format's "Seals" and "What a file proves whole" --------

SEALS = "log"
"""The seals' stream: it has no head (the checkpoints number it)."""


def mth(leaves: list[bytes]) -> bytes:
    """MTH (RFC 9162 2.1.1): SHA-256 of nothing over no leaves, a lone leaf its own hash,
    else the node over the largest power of two strictly below n and the rest."""
    if not leaves:
        return sha(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node(mth(leaves[:k]), mth(leaves[k:]))


def included(leaf: bytes, index: int, size: int, path: list[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2, step by step: `leaf` is leaf number `index` of the tree of
    `size` leaves whose root is `root`, by the inclusion proof `path` (leaf side first)."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def head_leaf(head: list[Any]) -> bytes:
    """A head's leaf: SHA-256(0x00 || the canonical JSON of its array)."""
    return sha(b"\x00" + canonical(head))


def account_step(chain: str, event_hash: str) -> str:
    """An account chain after one more event that posts to it."""
    return hashlib.sha256(f"{chain}\n{event_hash}".encode()).hexdigest()


@dataclasses.dataclass
class HeadsTree:
    """The heads tree of a log read from its first event: a leaf per head, in the order
    the heads first appeared; a head that moves keeps its place."""

    places: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    heads: list[list[Any]] = dataclasses.field(default_factory=list)

    def set(self, kind: str, name: str, count: int, digest: str) -> None:
        place = self.places.setdefault((kind, name), len(self.heads))
        if place == len(self.heads):
            self.heads.append([])
        self.heads[place] = [kind, name, count, digest]

    def fold(self, r: dict[str, Any], accounts: list[str]) -> None:
        """Move the heads by one event: its stream's head first, then (an account
        opened) the account's, then each account it posts to, in name order."""
        self.set("stream", r["stream"], r["version"], r["hash"])
        if r["type"] == "AccountOpened" and ("account", r["payload"]["account"]) not in self.places:
            self.set("account", r["payload"]["account"], 0, ZEROS)
        for account in sorted(set(accounts)):
            place = self.places.get(("account", account))
            count, chain = (0, ZEROS) if place is None else self.heads[place][2:]
            self.set("account", account, count + 1, account_step(chain, r["hash"]))

    def root(self) -> bytes:
        return mth([head_leaf(h) for h in self.heads])


@dataclasses.dataclass
class Seal:
    line: int
    position: int
    version: int
    recorded_at: str
    root: bytes
    heads: int


@dataclasses.dataclass
class Held:
    """A stream in a table's or a player's file: where its lines start from (the head
    before its first line: its version and hash, or the snapshot's) and where they end."""

    before: tuple[int, str]
    last: tuple[int, str]


@dataclasses.dataclass
class Whole:
    """A format 2 file held to what it proves it holds all of; `close` says what."""

    scope: dict[str, Any]
    first: int
    last: int
    tree: HeadsTree | None = None
    """A whole log's heads, folded over every event to hold each seal to."""
    seals: dict[int, Seal] = dataclasses.field(default_factory=dict)
    awaiting: Seal | None = None
    """A seal of a whole log or a range, whose checkpoint line must come next."""
    edges: list[tuple[int, dict[str, Any]]] = dataclasses.field(default_factory=list)
    held: dict[str, Held] = dataclasses.field(default_factory=dict)
    posted: list[str] = dataclasses.field(default_factory=list)
    """A player's file: the hash of each event posting to his account, in order."""

    @classmethod
    def of(cls, header: dict[str, Any]) -> Whole:
        whole = cls(header["scope"], header["first"], header["last"])
        if whole.scope["kind"] == "all":
            whole.tree = HeadsTree()
        return whole

    @property
    def account(self) -> str | None:
        """A player's file: his account, as the format names ledger accounts."""
        if self.scope["kind"] != "player":
            return None
        player = self.scope["player"]
        return "setter" if player == "setter" else f"player:{player}"

    def snapshot(self, r: dict[str, Any]) -> None:
        at = (r["version"], r["hash"])
        self.held[r["stream"]] = Held(at, at)

    def event(self, number: int, r: dict[str, Any], accounts: list[str]) -> None:
        self.checkpointed(number)
        kind = self.scope["kind"]
        if r["stream"] != SEALS or kind == "range":
            self.inside(number, r)
        if r["stream"] == SEALS:
            p = r["payload"]
            seal = Seal(
                number, r["position"], r["version"], r["recorded_at"], bytes.fromhex(p["root"]),
                p["heads"],
            )  # fmt: skip
            self.seals[seal.position] = seal
            if self.tree is not None and (
                self.tree.root() != seal.root or len(self.tree.heads) != seal.heads
            ):
                raise Rejected(
                    number, "the seal does not commit the heads the events before it make"
                )
            if kind in ("all", "range"):
                self.awaiting = seal
            return
        if self.tree is not None:
            self.tree.fold(r, accounts)
        held = self.held.get(r["stream"])
        if held is None:
            self.held[r["stream"]] = Held(
                (r["version"] - 1, r["prev_hash"]), (r["version"], r["hash"])
            )
        else:
            held.last = (r["version"], r["hash"])
        if self.account in accounts:
            self.posted.append(r["hash"])

    def edge(self, number: int, r: dict[str, Any]) -> None:
        self.checkpointed(number)
        if self.scope["kind"] != "range":
            raise Rejected(number, "an edge line in a file that is not a range's")
        self.edges.append((number, r))

    def checkpoint(self, number: int, size: int) -> None:
        if self.awaiting is not None and self.awaiting.position == size:
            self.awaiting = None
        self.checkpointed(number)

    def checkpointed(self, number: int) -> None:
        """The seal read last has had its checkpoint line, right after it."""
        if self.awaiting is not None:
            seal = self.awaiting
            raise Rejected(
                seal.line, f"no checkpoint line after the seal of checkpoint {seal.version}"
            )

    def inside(self, number: int, r: dict[str, Any]) -> None:
        since, until = self.scope["since"], self.scope["until"]
        if since is not None and r["recorded_at"] < since:
            raise Rejected(number, f"recorded at {r['recorded_at']}, before since ({since})")
        if until is not None and r["recorded_at"] >= until:
            raise Rejected(number, f"recorded at {r['recorded_at']}, not before until ({until})")

    def close(self, number: int, closing: dict[str, Any]) -> list[str]:
        """What the file proves whole, once every line has been read."""
        self.checkpointed(number)
        size = closing["checkpoint"]["size"]
        kind = self.scope["kind"]
        if kind == "all":
            # It holds every seal, so the closing checkpoint's too, the one at its size
            # (and the file's closing checkpoint the one its verdict dates it by).
            if size != self.last:
                raise Rejected(number, f"a whole log up to {self.last} closed by checkpoint {size}")
            return [f"all of 1..{self.last}, every seal checkpointed"]
        if kind == "range":
            return self.range(number, size)
        return self.windowed(number, closing.get("heads"), size)

    def range(self, number: int, size: int) -> list[str]:
        since, until = self.scope["since"], self.scope["until"]
        leading = [(n, e) for n, e in self.edges if e["position"] == self.first]
        trailing = [
            (n, e) for n, e in self.edges if e["position"] == self.last and (n, e) not in leading
        ]
        for n, e in self.edges:
            if (n, e) not in leading + trailing:
                raise Rejected(n, "an edge that is neither the range's first line nor its last")
        for n, e in leading:
            if since is None or e["recorded_at"] >= since:
                raise Rejected(n, "the leading edge is not an event recorded before since")
        for n, e in trailing:
            if until is None or e["recorded_at"] < until:
                raise Rejected(n, "the trailing edge is not an event recorded at or after until")
        # A range with no since starts at position 1, one with no until runs to the
        # closing checkpoint: it has no edge there, and anywhere else it needs one.
        if not leading and self.first != 1:
            raise Rejected(number, f"no edge before a range that starts at {self.first}, not 1")
        if not trailing and self.last != size:
            raise Rejected(number, f"no edge after a range that stops at {self.last}, not {size}")
        return [f"the range {since}..{until}, positions {self.first}..{self.last}"]

    def windowed(self, number: int, heads: Any, size: int) -> list[str]:
        if heads is None:  # format 2: a table's or a player's file proves its heads
            raise Rejected(number, "a table's or a player's file without head proofs")
        since, until = self.scope["since"], self.scope["until"]
        end, end_heads = self.proven(number, heads["end"])
        start, start_heads = self.proven(number, heads["start"]) if "start" in heads else (None, {})
        following = heads.get("next")
        if following is None:
            if end.position != size:
                raise Rejected(number, "the end seal is not the closing checkpoint's")
        else:
            next_seal = self.seals.get(following)
            if next_seal is None or next_seal.version != end.version + 1:
                raise Rejected(number, "the next seal is not the one after the end seal")
            if until is None or next_seal.recorded_at < until:
                raise Rejected(next_seal.line, "the next seal was recorded before until")
        if until is not None and end.recorded_at >= until:
            raise Rejected(end.line, "the end seal was recorded at or after until")
        if start is not None and (since is None or start.recorded_at >= since):
            raise Rejected(start.line, "the start seal was not recorded before since")
        if since is not None and start is None:
            # No seal recorded before since, which the log's first seal (version 1, at
            # or after since) must show: then where the file's streams start is not
            # proven.
            first = self.seals.get(heads.get("first"))
            if first is None or first.version != 1 or first.recorded_at < since:
                raise Rejected(number, "no start seal, and no first seal after since to show why")
            for stream, held in self.held.items():
                if held.last != end_heads.get(("stream", stream)):
                    raise Rejected(number, f"{stream} does not end at its head at the end seal")
            return []
        wanted = {("stream", s) for s in self.held}
        if self.account is not None:
            wanted.add(("account", self.account))
        missing = sorted(wanted - set(end_heads))
        if missing:
            raise Rejected(number, f"no head of {' '.join(missing[0])} proven at the end seal")
        proven = []
        for kind, name in sorted(set(end_heads)):
            # A head the start seal does not prove stands at 0 and 64 zeros there.
            before = start_heads.get((kind, name), (0, ZEROS))
            at_end = end_heads[(kind, name)]
            if kind == "stream":
                held = self.held.get(name, Held(before, before))
                if held.before != before or held.last != at_end:
                    raise Rejected(
                        number,
                        f"{name} runs from version {held.before[0]} to {held.last[0]} in the "
                        f"file, from {before[0]} to {at_end[0]} between the seals: not whole",
                    )
            elif name == self.account:
                chain = before[1]
                for event_hash in self.posted:
                    chain = account_step(chain, event_hash)
                if (before[0] + len(self.posted), chain) != at_end:
                    raise Rejected(
                        number,
                        f"{name}: {len(self.posted)} events post to it in the file, "
                        f"{at_end[0] - before[0]} between the seals: not whole",
                    )
            else:
                continue
            proven.append(f"{kind} {name} from {before[0]} to {at_end[0]}")
        return proven

    def proven(
        self, number: int, given: dict[str, Any]
    ) -> tuple[Seal, dict[tuple[str, str], tuple[int, str]]]:
        """A seal the closing names, and the heads its proofs prove in its tree."""
        seal = self.seals.get(given["position"])
        if seal is None:
            raise Rejected(
                number, f"the seal at {given['position']} is not an event line of the file"
            )
        heads = {}
        for proof in given["proofs"]:
            kind, name, count, digest = proof["head"]
            path = [bytes.fromhex(h) for h in proof["path"]]
            leaf = head_leaf(proof["head"])
            if not included(leaf, proof["index"], seal.heads, path, seal.root):
                raise Rejected(
                    number, f"the proof of {kind} {name} does not lead to the seal's root"
                )
            heads[(kind, name)] = (count, digest)
        return seal, heads


@dataclasses.dataclass
class Checker:
    key: str | None = None
    """The key expected, as the club published it; None: the file's own."""
    witnesses: tuple[str, ...] = ()
    """The reader's witnesses (vkeys), of whom `quorum` must have cosigned the closing's
    cosigned checkpoint: a `k of them` policy, the simplest tlog-policy quorum."""
    quorum: int = 0

    def check(self, data: bytes) -> dict[str, Any]:
        assert data.endswith(b"\n"), "the file ends with its closing line's newline"
        raw_lines = data.split(b"\n")[:-1]
        records = []
        for number, raw in enumerate(raw_lines, 1):
            record = json.loads(raw)
            if canonical(record) != raw:
                raise Rejected(number, "not in canonical form")
            records.append(record)
        header = records[0]
        if header["record"] != "header" or header["format"] != "hazard-export":
            raise Rejected(1, "no header")
        if self.key is not None and header["key"] != self.key:
            raise Rejected(1, "signed by another key than the one expected")
        key = parse_key(header["key"])
        first, last = header["first"], header["last"]
        size = header["tree_start"]["size"]
        assert size == first - 1
        stack = [bytes.fromhex(h) for h in header["tree_start"]["hashes"]]
        assert len(stack) == bin(size).count("1")

        def push(digest: bytes, width: int) -> None:
            nonlocal size
            n = size // width
            while n & 1:
                digest = node(stack.pop(), digest)
                n >>= 1
            stack.append(digest)
            size += width

        def root() -> bytes:
            if not stack:
                return sha(b"")
            out = stack[-1]
            for left in reversed(stack[:-1]):
                out = node(left, out)
            return out

        version_of = header["format_version"]
        if version_of not in (1, 2):
            raise Rejected(1, f"format version {version_of}")
        scope = header["scope"]
        # Format 1 is from before seals: it proves nothing about completeness.
        whole = Whole.of(header) if version_of == 2 else None
        since, until = header["scope"].get("since"), header["scope"].get("until")
        if not all(TIME.fullmatch(t) for t in (since, until) if t is not None):
            raise Rejected(1, "the scope's times are not written as recorded_at is")
        last_at = ""  # the time of the file's event before

        heads: dict[str, tuple[int, str]] = {}
        referees: dict[str, Referee] = {}
        books: dict[str, Disputes] = {}
        turns: dict[str, Turn] = {}
        trusted: set[str] = set()
        """Tables carried in by a snapshot: their state is taken on trust, not replayed."""
        given: dict[str, Given] = {}
        money: dict[str, dict[str, int]] = {}
        counted = {"events": 0, "skipped": 0, "rounds": 0, "settled": 0, "drawn": 0}
        types: dict[str, int] = {}
        closing = None
        for number, r in enumerate(records[1:], 2):
            kind = r["record"]
            if closing is not None:
                raise Rejected(number, "after the closing line")
            if kind == "snapshot":
                if counted["events"] or size != first - 1:
                    raise Rejected(number, "a snapshot after the body began")
                heads[r["stream"]] = (r["version"], r["hash"])
                trusted.add(r["stream"])
                if whole is not None:
                    whole.snapshot(r)
            elif kind in ("event", "edge"):
                if r["position"] != size + 1:
                    raise Rejected(number, f"position {r['position']} where {size + 1} is due")
                doc = canonical({k: v for k, v in r.items() if k not in NOT_HASHED})
                leaf = sha(b"\x00" + doc)
                if leaf.hex() != r["leaf"]:
                    raise Rejected(number, "the leaf is not the event's")
                at = r["recorded_at"]
                if not TIME.fullmatch(at) or at < last_at:
                    raise Rejected(number, f"position {r['position']} goes back in time")
                last_at = at
                if hashlib.sha256(r["prev_hash"].encode() + b"\n" + doc).hexdigest() != r["hash"]:
                    raise Rejected(number, "the chain hash is not the event's")
                push(leaf, 1)
                if kind == "edge":  # in the tree, but not in the range
                    if whole is None:
                        raise Rejected(number, "an edge line in a format 1 file")
                    whole.edge(number, r)
                    continue
                # Inside the file's times, but for the seals a table's or a player's file is
                # proven against (its edges are handled above).
                proven_by = r["stream"] == SEALS and scope["kind"] in ("table", "player")
                if not proven_by and (
                    (since is not None and at < since) or (until is not None and at >= until)
                ):
                    raise Rejected(number, f"position {r['position']} is outside the file's times")
                version, prev = heads.get(r["stream"], (0, ZEROS))
                # A stream may start mid-chain but in a whole log. The seals in a
                # table's or a player's file are the few its closing names, far apart.
                loose = r["stream"] == SEALS and scope["kind"] in ("table", "player")
                if r["stream"] not in heads and r["version"] != 1 and scope["kind"] != "all":
                    version, prev = r["version"] - 1, r["prev_hash"]  # starts mid-chain
                if not loose and (r["version"] != version + 1 or r["prev_hash"] != prev):
                    raise Rejected(number, "the stream's chain is broken")
                heads[r["stream"]] = (r["version"], r["hash"])
                if r["type"] in SERVER_DICE:  # the format's own check, before the engine's
                    counted["drawn"] += hold_turn(number, r, turns)
                if r["stream"].startswith("table:"):
                    hold_seed(number, r, given)
                accounts = self._replay(number, r, referees, books, money, trusted)
                if whole is not None:
                    whole.event(number, r, accounts)
                types[r["type"]] = types.get(r["type"], 0) + 1
                counted["events"] += 1
            elif kind == "skip":
                if r["from"] != size + 1:
                    raise Rejected(number, "a skip out of place")
                hashes = list(r["hashes"])
                while size < r["to"]:
                    width = size & -size if size else 1 << (r["to"].bit_length() - 1)
                    while size + width > r["to"]:
                        width >>= 1
                    if not hashes:
                        raise Rejected(number, "too few hashes")
                    push(bytes.fromhex(hashes.pop(0)), width)
                if hashes:
                    raise Rejected(number, "too many hashes")
                counted["skipped"] += r["to"] - r["from"] + 1
            elif kind == "checkpoint":
                origin, signed_size, signed_root = open_note(r["note"], key)
                if (origin, signed_size) != (header["origin"], r["size"]) or r["size"] != size:
                    raise Rejected(number, "a checkpoint out of place")
                if signed_root != root():
                    raise Rejected(number, "the checkpoint does not sign the events' root")
                if whole is not None:
                    whole.checkpoint(number, r["size"])
                if signed_second(r["note"]) < last_at[:19]:
                    raise Rejected(number, "a checkpoint dated before its events")
            elif kind == "closing":
                closing = r
            else:
                raise Rejected(number, f"unknown record {kind}")
        if closing is None:
            raise Rejected(len(records) + 1, "no closing line")
        end = len(records)
        self._scope_holds(end, scope, first, counted["skipped"], trusted, set(heads))
        if size != last or closing["size"] != last or closing["root"] != root().hex():
            raise Rejected(end, "the closing root is not the root of the lines")
        try:
            origin, signed_size, signed_root = open_note(closing["checkpoint"]["note"], key)
        except ValueError as exc:
            raise Rejected(end, str(exc)) from None
        proof = [bytes.fromhex(h) for h in closing["consistency"]]
        if origin != header["origin"] or signed_size != closing["checkpoint"]["size"]:
            raise Rejected(end, "the closing checkpoint is not the log's")
        if last and not consistent(last, signed_size, root(), signed_root, proof):
            raise Rejected(end, "the signed checkpoint does not prove the tree of these events")
        if signed_second(closing["checkpoint"]["note"]) < last_at[:19]:
            raise Rejected(end, "a checkpoint dated before its events")
        self._witnessed(end, closing, key, header["origin"], signed_size, signed_root)
        for book in books.values():
            if book.voiding is not None:
                book.void_done()
        for stream, referee in referees.items():
            try:
                referee.finish()
            except Disagreement as exc:
                raise Rejected(end, f"{stream}: {exc.reason}") from None
            counted["rounds"] += referee.rounds
        if closing["events"] != counted["events"] or closing["skipped"] != counted["skipped"]:
            raise Rejected(end, "the counts are not the file's")
        if closing["types"] != types:
            raise Rejected(end, "the types are not the file's")
        for figures in money.values():
            if not figures[ADJUSTED]:
                del figures[ADJUSTED]
        if {a: m for a, m in closing["money"].items() if any(m.values())} != money:
            raise Rejected(end, "the money is not what the events moved")
        on_trust = sum(len(turn.throws) for turn in turns.values())
        complete = whole.close(end, closing) if whole is not None else []
        return {
            **counted,
            "money": money,
            "size": signed_size,
            "on_trust": on_trust,
            "complete": complete,
            "issued_at": closing["checkpoint"]["issued_at"],
        }

    @staticmethod
    def _scope_holds(
        end: int, scope: dict[str, Any], first: int, skipped: int, trusted: set[str],
        streams: set[str],
    ) -> None:  # fmt: skip
        """The format's check 1: the header's scope is what the file holds."""
        kind, streams = scope["kind"], streams - {SEALS}
        if kind in ("all", "range") and skipped:
            raise Rejected(end, f"a file of scope {kind} skips {skipped} positions")
        if kind == "all" and (first != 1 or trusted):
            raise Rejected(end, "a whole log that does not start at position 1")
        if kind == "table" and streams - {f"table:{scope['table']}"}:
            raise Rejected(end, f"a table's file holds {sorted(streams)}")
        if kind == "player":
            player = scope["player"]
            own = "account:" + ("setter" if player == "setter" else f"player:{player}")
            if {s for s in streams if not s.startswith("table:")} - {own}:
                raise Rejected(end, f"a player's file holds {sorted(streams)}")

    def _witnessed(
        self,
        end: int,
        closing: dict[str, Any],
        key: tuple[str, bytes, bytes],
        origin: str,
        signed_size: int,
        signed_root: bytes,
    ) -> None:
        """The closing's `cosigned`: signed by the log, a prefix of the closing's signed
        checkpoint by its consistency proof, and cosigned by `quorum` of `witnesses`."""
        cosigned = closing.get("cosigned")
        if cosigned is None:
            if self.quorum:
                raise Rejected(end, "no cosigned checkpoint: no quorum")
            return
        try:
            at_origin, size, at_root = open_note(cosigned["note"], key)
        except ValueError as exc:
            raise Rejected(end, f"the cosigned checkpoint: {exc}") from None
        proof = [bytes.fromhex(h) for h in cosigned["consistency"]]
        if at_origin != origin or size != cosigned["size"] or size > signed_size:
            raise Rejected(end, "the cosigned checkpoint is not the log's")
        if size and not consistent(size, signed_size, at_root, signed_root, proof):
            raise Rejected(end, "the cosigned checkpoint is not a prefix of the signed one")
        try:
            count = sum(cosigned_by(cosigned["note"], parse_witness(w)) for w in self.witnesses)
        except ValueError as exc:
            raise Rejected(end, str(exc)) from None
        if count < self.quorum:
            raise Rejected(end, f"{count} of the witnesses cosigned, not {self.quorum}: no quorum")

    @staticmethod
    def _replay(
        number: int,
        r: dict[str, Any],
        referees: dict[str, Referee],
        books: dict[str, Disputes],
        money: dict[str, dict[str, int]],
        trusted: set[str],
    ) -> list[str]:
        """Run a table's event through its referee (but a table carried in by a
        snapshot, taken on trust), count the money the event moves, and return the
        accounts it posts to (in ledger accounts, escrows left out: they have no head)."""
        stream, payload = r["stream"], r["payload"]
        if stream.startswith("table:"):
            table = stream.removeprefix("table:")
            event = table_event(r)
            if stream not in trusted:
                referee = referees.setdefault(stream, Referee())
                # The format's dispute rules, checked here before the engine's referee
                # runs the event as a command.
                books.setdefault(stream, Disputes()).see(number, event, referee.state)
                try:
                    referee.check(event)
                except Disagreement as exc:
                    raise Rejected(number, f"{stream}: {exc.reason}") from None
            moves = [
                (ledger_account(table, t.source), ledger_account(table, t.target), t.amount)
                for t in holds(event)
            ]
        elif r["type"] == "Deposited":
            moves = [("cash", payload["account"], payload["amount"])]
        elif r["type"] == "Withdrawn":
            moves = [(payload["account"], "cash", payload["amount"])]
        else:
            moves = []
        for source, target, amount in moves:
            if source == "cash":
                account, figure = target, "deposited"
            elif target == "cash":
                account, figure = source, "withdrawn"
            elif target.startswith("escrow:") and not source.startswith("escrow:"):
                account, figure = source, "staked"
            elif source.startswith("escrow:") and not target.startswith("escrow:"):
                account, figure = target, "paid"
            elif not source.startswith("escrow:") and not target.startswith("escrow:"):
                for account, gain in ((source, -amount), (target, amount)):  # an adjustment
                    figures = money.setdefault(account, dict.fromkeys((*FIGURES, ADJUSTED), 0))
                    figures[ADJUSTED] += gain
                continue
            else:
                continue
            figures = money.setdefault(account, dict.fromkeys((*FIGURES, ADJUSTED), 0))
            figures[figure] += amount
        return [
            a
            for source, target, _ in moves
            for a in (source, target)
            if not a.startswith("escrow:")
        ]


# ---------------------------------------------------------------------------------------
