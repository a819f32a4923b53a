"""What the offline check of an export says (ledger.exports.offline): each record it hands
on once checked, what it verified, and where the file first disagrees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engine import events as ev
from engine.rules import RuleSet
from engine.state import TableState
from ledger.store.eventstore import Recorded
from ledger.store.log.keys import Verifier
from ledger.store.log.quorum import times
from ledger.store.vocabulary import player_account

FIGURES = ("deposited", "paid", "staked", "withdrawn", "adjusted")
"""What the closing record says of each account's money, in its order."""


def figures_view(figures: Sequence[int]) -> dict[str, int]:
    """An account's money as the closing record writes it: `adjusted` only where a
    dispute's adjustments left the account better or worse off, so that a file with no
    disputes reads as it did before there were any."""
    view = dict(zip(FIGURES, figures, strict=True))
    if not view["adjusted"]:
        del view["adjusted"]
    return view


class Disagreement(Exception):
    """Where the file first disagrees with itself, the engine or the signed log, and why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


# -- What `read` hands on, each once checked ---------------------------------------------


@dataclass(frozen=True)
class Header:
    line: int
    first: int
    last: int
    key: Verifier
    origin: str
    scope: dict[str, Any]
    rule_sets: Mapping[str, RuleSet]
    tree_start: tuple[bytes, ...]
    """The frontier of the tree before `first`, largest subtree first."""
    format_version: int = 2


@dataclass(frozen=True)
class Snapshot:
    line: int
    stream: str
    position: int
    version: int
    hash: str
    state: TableState
    document: bytes
    """The state as snapshots.encode_state writes it (canonical JSON)."""


class EventLine(NamedTuple):
    line: int
    row: Recorded
    """The event as the store holds it, its payload the canonical text."""
    leaf: bytes
    event: ev.Event | Any
    """The row decoded (engine.events or ledger.store.vocabulary), as checked."""


class EdgeLine(NamedTuple):
    """An event just outside a range's file (its `edge` line): in the tree, proving a
    cut, but not part of the range."""

    line: int
    row: Recorded
    leaf: bytes


class SkipLine(NamedTuple):
    line: int
    start: int
    end: int
    hashes: tuple[bytes, ...]


class CheckpointLine(NamedTuple):
    line: int
    size: int
    root: bytes
    issued_at: str
    note: str


class CosignedLine(NamedTuple):
    """The closing's cosigned checkpoint, proved a prefix of the closing's checkpoint."""

    line: int
    size: int
    root: bytes
    note: str
    """The log's note with every cosignature line the file carries."""
    cosigned: Mapping[str, int]
    """Under the reader's policy, its witnesses whose cosignatures verify, each with
    the time it cosigned; empty when checked without a policy."""
    lines: int
    """Signature lines in the note besides the log's own: the witnesses' (unchecked
    without a policy)."""


@dataclass(frozen=True)
class Closing:
    line: int
    size: int
    root: bytes
    checkpoint: CheckpointLine
    """The signed checkpoint the file is proved against (`line` is the closing's)."""
    events: int
    skipped: int
    types: dict[str, int]
    money: dict[str, dict[str, int]]
    cosigned: CosignedLine | None = None
    """The newest checkpoint a witness had cosigned when the file was made, if any."""


Item = Header | Snapshot | EventLine | EdgeLine | SkipLine | CheckpointLine | Closing


# -- What `verify` says ------------------------------------------------------------------


@dataclass(frozen=True)
class Money:
    deposited: int = 0
    paid: int = 0
    staked: int = 0
    withdrawn: int = 0
    adjusted: int = 0
    """What disputes' adjustments moved in, less what they moved out (party to party)."""

    @property
    def net(self) -> int:
        """What the account gained from the file's events."""
        return self.deposited + self.paid - self.staked - self.withdrawn + self.adjusted


@dataclass
class Verified:
    scope: dict[str, Any]
    first: int
    last: int
    events: int
    skipped: int
    tables: int
    rounds: int
    bets: int
    settlements: int
    checkpoints: int
    """`checkpoint` lines checked (the closing's not counted)."""
    checkpoint_size: int
    root: bytes
    key: Verifier
    key_given: bool
    money: dict[str, Money]
    trusted: list[str] = field(default_factory=list)
    witnessed: CosignedLine | None = None
    """The cosigned checkpoint that held under the reader's policy (None: no policy
    given, or `quorum none` and the file carries none)."""
    policy: str | None = None
    """What the reader's policy asks, in words (None: no policy given)."""
    complete: list[str] = field(default_factory=list)
    """What the file proves it holds all of (docs/export-format.md, "Seals")."""
    checkpoint_time: str = ""
    """When the closing's checkpoint was issued: how old the file's history is."""
    cash_ups: int = 0
    """Lines of the evenings' cash-ups held to the file's events (ledger.books.cashup)."""

    def lines(self) -> list[str]:
        """What `hazard verify FILE` prints."""
        scope = self.scope
        what = scope.get("kind", "?")
        named = [f"{k} {scope[k]}" for k in ("table", "player", "since", "until") if scope.get(k)]
        span = f"positions {self.first}..{self.last}" if self.last >= self.first else "no events"
        out = [
            "verified",
            f"scope: {what}{' (' + ', '.join(named) + ')' if named else ''}, {span}",
            f"events: {self.events}"
            + (f" ({self.skipped} positions outside the scope skipped)" if self.skipped else ""),
            f"tables: {self.tables} replayed through the engine: {self.rounds} rounds, "
            f"{self.bets} bets, {self.settlements} settlements",
            f"tree: the {self.last} events' root {self.root.hex()} is in the checkpoint of "
            f"size {self.checkpoint_size}"
            + (f", issued {self.checkpoint_time}" if self.checkpoint_time else "")
            + (
                f" ({self.checkpoints} checkpoint lines checked on the way)"
                if self.checkpoints
                else ""
            ),
            f"key: {self.key.text()}"
            + (
                " (your policy's log)"
                if self.policy is not None
                else " (the key you gave)"
                if self.key_given
                else " (the file's own: see below)"
            ),
        ]
        out.extend(f"complete: {sentence}" for sentence in self.complete)
        if self.cash_ups:
            out.append(
                f"evenings: {self.cash_ups} cash-up lines, each expected and difference "
                "the file's own events give"
            )
        if self.policy is not None:
            out.extend(self._witnessed())
        if self.money:
            width = max(len(a) for a in self.money)
            out.append("money, in minor units:")
            out.append(
                f"  {'account':<{width}}  {'staked':>12}  {'paid':>12}  {'deposited':>14}  "
                f"{'withdrawn':>12}  {'adjusted':>12}  {'net':>14}"
            )
            for account, m in sorted(self.money.items()):
                out.append(
                    f"  {account:<{width}}  {m.staked:>12}  {m.paid:>12}  {m.deposited:>14}  "
                    f"{m.withdrawn:>12}  {m.adjusted:>12}  {m.net:>14}"
                )
        out.extend(self._statement())
        if self.trusted:
            out.append("taken on trust:")
            out.extend(f"  - {sentence}" for sentence in self.trusted)
        return out

    def _statement(self) -> list[str]:
        """A player's file: their account's movements as their statement for the same
        times says them (ledger.books.periodstatement), to hold one to the other."""
        name = self.scope.get("player")
        if self.scope.get("kind") != "player" or not name:
            return []
        m = self.money.get(player_account(name), Money())
        since, until = self.scope.get("since") or "the start", self.scope.get("until") or "now"
        return [
            f"statement: {name} from {since} up to {until}: deposited {m.deposited}, "
            f"withdrawn {m.withdrawn} (net deposits {m.deposited - m.withdrawn}); staked "
            f"{m.staked}, paid {m.paid}, adjusted {m.adjusted}; the balance moved by {m.net}"
        ]

    def _witnessed(self) -> list[str]:
        """What the reader's policy made of the file's cosigned checkpoint."""
        asks = f"policy: your policy asks for {self.policy}"
        seen = self.witnessed
        if seen is None:
            return [asks]
        by = times(seen.cosigned) or "no witness"
        return [
            asks,
            f"witnessed: the checkpoint of size {seen.size}, cosigned by {by}; "
            f"the file's checkpoint of size {self.checkpoint_size} is consistent with it",
        ]
