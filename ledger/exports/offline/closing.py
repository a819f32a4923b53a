"""An export's last line, its closing record: the file holds what its header's scope
says, its counts and money are the events', its root is the tree the lines build,
proved inside a checkpoint the log signed, and every table's referee has seen all it
waits for. Then what `verify` says: what was verified, and what was taken on trust."""

from __future__ import annotations

from typing import Any

from ledger.books.accounts import TABLE_PREFIX, account_stream, player_account
from ledger.exports.offline import witnesses
from ledger.exports.offline.money import Tally
from ledger.exports.offline.tables import Tables
from ledger.exports.offline.tree import Tree
from ledger.exports.verdict import Closing, Disagreement, Header, Verified
from ledger.store.log.heads import SEALS
from ledger.store.log.policy import Policy


def close(
    number: int,
    c: dict[str, Any],
    header: Header,
    *,
    tree: Tree,
    streams: set[str],
    tables: Tables,
    tally: Tally,
    types: dict[str, int],
    policy: Policy | None = None,
) -> Closing:
    """The closing record on line `number`, checked against all the file held:
    `streams`, every stream with an event or a snapshot in it; and its cosigned
    checkpoint under the reader's `policy`, when given."""
    where = f"closing record (line {number})"
    if tree.size != header.last:
        raise Disagreement(
            number,
            f"the {where} comes at position {tree.size}, but the header says the file covers "
            f"up to {header.last}: positions {tree.size + 1}..{header.last} are missing (lines "
            "deleted at the end?)",
        )
    _scope_holds(number, header, streams, tree.skipped, bool(tables.snapshotted))
    if c.get("size") != header.last:
        raise Disagreement(
            number, f"the {where} is of size {c.get('size')!r}, the header's last is {header.last}"
        )
    root, checkpoint = tree.close(number, where, c)
    cosigned = witnesses.check(number, c.get("cosigned"), tree, checkpoint, policy)
    _counts(number, where, c, types, tree.skipped)
    tally.check(number, where, c.get("money"))
    tables.finish(number, where)
    return Closing(
        number,
        header.last,
        root,
        checkpoint,
        sum(types.values()),
        tree.skipped,
        dict(types),
        tally.view(),
        cosigned,
    )


def _counts(
    number: int, where: str, c: dict[str, Any], types: dict[str, int], skipped: int
) -> None:
    """Hold the closing record's counts (line `number`) to the file's."""
    events = sum(types.values())
    if c.get("events") != events:
        raise Disagreement(
            number, f"the {where} counts {c.get('events')!r} events, the file has {events}"
        )
    if c.get("skipped") != skipped:
        raise Disagreement(
            number,
            f"the {where} counts {c.get('skipped')!r} skipped positions, the file's skip "
            f"lines cover {skipped}",
        )
    if c.get("types") != types:
        given = c.get("types")
        said: dict[str, Any] = given if isinstance(given, dict) else {}
        differ = sorted(t for t in set(said) | set(types) if said.get(t) != types.get(t))
        raise Disagreement(
            number,
            f"the {where} counts events by type otherwise than the file has them: "
            + ", ".join(
                f"{t} {said.get(t, 0)!r} where the file has {types.get(t, 0)}" for t in differ
            ),
        )


def _scope_holds(
    number: int, header: Header, streams: set[str], skipped: int, snapshotted: bool
) -> None:
    """The header's scope is what the file holds: what verify reports as checked."""
    scope = header.scope
    kind = scope["kind"]
    whole = f"the header says the file is {kind}, but it "
    if kind in ("all", "range") and skipped:
        raise Disagreement(number, whole + f"skips {skipped} positions")
    if kind == "all" and (header.first != 1 or snapshotted):
        raise Disagreement(number, whole + f"starts at position {header.first}")
    # A table's or a player's file also holds the seals its closing names (checked by
    # ledger.exports.offline.complete).
    streams = streams - {SEALS}
    if kind == "table":
        own = TABLE_PREFIX + str(scope.get("table"))
        other = sorted(streams - {own})
        if other:
            raise Disagreement(
                number, f"the header says the file is {own}'s, but it holds {other[0]}"
            )
    if kind == "player":
        account = account_stream(player_account(str(scope.get("player"))))
        other = sorted(s for s in streams if s != account and not s.startswith(TABLE_PREFIX))
        if other:
            raise Disagreement(
                number,
                f"the header says the file is {account}'s statement, but it holds {other[0]}",
            )


def summary(
    header: Header,
    closing: Closing,
    *,
    key_given: bool,
    policy: Policy | None = None,
    tree: Tree,
    mid_chain: list[str],
    tables: Tables,
    tally: Tally,
    types: dict[str, int],
    complete: list[str] | None = None,
) -> Verified:
    """What a whole file's check verified, and what it took on trust."""
    trusted = []
    if header.format_version == 1:
        trusted.append(
            "the file is in format 1, from before seals: it proves nothing about "
            "completeness (that it leaves none of its scope out)"
        )
        complete = [
            "nothing proven: the file is in format 1 (written before seals, or of a log "
            "with no seal at its head): it may leave some of its scope out"
        ]
    if not key_given:
        trusted.append(
            f"the signing key is the one the file names ({header.key.text()}): "
            "check it against the key your club published (--key)"
        )
    if header.first > 1:
        trusted.append(
            f"the {header.first - 1} events before position {header.first} are not in "
            "the file: the header's tree_start stands for them (the signed root holds "
            "it to the log), but what they say was not checked"
        )
    if tree.skipped:
        trusted.append(
            f"{tree.skipped} positions outside the scope were skipped: their subtree "
            "hashes tie them to the signed log, but their events were not checked"
        )
    trusted.extend(tables.snapshots_trusted())
    if mid_chain:
        shown = ", ".join(mid_chain[:5]) + (
            f" and {len(mid_chain) - 5} more" if len(mid_chain) > 5 else ""
        )
        trusted.append(
            f"{len(mid_chain)} stream(s) start before the file ({shown}): the "
            "prev_hash of each one's first event here is taken as given"
        )
    trusted.extend(tables.referees_trusted())
    trusted.extend(_witnessed_trusted(header, closing, policy))
    return Verified(
        scope=header.scope,
        first=header.first,
        last=header.last,
        events=sum(types.values()),
        skipped=tree.skipped,
        tables=len(tables.tables),
        rounds=sum(r.rounds for r in tables.referees()),
        bets=sum(r.bets for r in tables.referees()),
        settlements=tables.settlements,
        checkpoints=tree.checkpoints,
        checkpoint_size=closing.checkpoint.size,
        root=closing.root,
        key=header.key,
        key_given=key_given,
        money=tally.totals(),
        trusted=trusted,
        witnessed=closing.cosigned if policy is not None else None,
        policy=policy.describe() if policy is not None else None,
        complete=list(complete or []),
        checkpoint_time=closing.checkpoint.issued_at,
    )


def _witnessed_trusted(header: Header, closing: Closing, policy: Policy | None) -> list[str]:
    """What rests on the bank's key alone: without a policy, the whole file; under one,
    the file's positions after the checkpoint its witnesses cosigned."""
    cosigned = closing.cosigned
    if policy is None:
        carried = (
            f"its cosigned checkpoint (size {cosigned.size}, {cosigned.lines} witness "
            "cosignature line(s)) was not checked"
            if cosigned is not None
            else "it carries no witness's cosignature"
        )
        return [
            "the file is checked against the bank's key alone: nothing shows that anyone "
            f"but the bank saw this log ({carried}: give --policy, your own policy file)"
        ]
    if cosigned is None:
        return []  # `quorum none`: the policy asks for no witness
    if cosigned.size < header.last:
        start = max(cosigned.size + 1, header.first)
        return [
            f"positions {start}..{header.last} are after the checkpoint the witnesses "
            f"cosigned (size {cosigned.size}): signed by the bank's key alone, not yet "
            "witnessed when the file was made"
        ]
    return []
