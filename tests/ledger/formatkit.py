"""An export file read as docs/export-format.md describes it, every promise it makes
recomputed from the store's own events: canonical lines, leaves and chain hashes, the
tree's start, its skipped subtrees, every checkpoint and the closing's root and proof.

    read = check(data, store.read_all(0, limit=100_000))
    read.events, read.skips, read.closing["money"]
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ledger.store import codec
from ledger.store.eventstore import GENESIS, Recorded
from ledger.store.log import merkle
from ledger.store.log.checkpoint import open_checkpoint
from tests.signing import VERIFIER


def subtree(leaves: list[bytes]) -> bytes:
    """MTH of a list of leaf hashes (RFC 9162, 2.1.1), from the events themselves."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return merkle.node_hash(subtree(leaves[:k]), subtree(leaves[k:]))


@dataclass
class Read:
    """A file read and checked line by line, as the format page says."""

    header: dict[str, Any]
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    skips: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    closing: dict[str, Any] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def check(data: bytes, log: list[Recorded]) -> Read:
    """Everything the format promises, recomputed; `log` is the store's events, to
    hold skipped subtrees to the tree of the events themselves."""
    assert data.endswith(b"\n")
    lines = [json.loads(line) for line in data.split(b"\n")[:-1]]
    for raw, line in zip(data.split(b"\n"), lines, strict=False):
        assert codec.canonical(line) == raw, "every line is canonical"
    read = Read(lines[0])
    assert read.header["record"] == "header"
    assert read.header["format"] == "hazard-export" and read.header["format_version"] == 2
    assert read.header["key"] == VERIFIER.text() and read.header["origin"] == VERIFIER.name
    first, last = read.header["first"], read.header["last"]
    start = read.header["tree_start"]
    assert start["size"] == first - 1 and len(start["hashes"]) == (first - 1).bit_count()
    stack = [bytes.fromhex(h) for h in start["hashes"]]
    size = first - 1
    heads: dict[str, tuple[int, str]] = {}
    leaves = [merkle.leaf_hash(row.hashed()) for row in log]

    def push(digest: bytes, level: int) -> None:
        number = size >> level
        while number & 1:
            digest = merkle.node_hash(stack.pop(), digest)
            number >>= 1
        stack.append(digest)

    for line in lines[1:]:
        kind = line["record"]
        read.order.append(kind)
        if kind == "snapshot":
            assert not read.events and not read.skips
            read.snapshots.append(line)
            heads[line["stream"]] = (line["version"], line["hash"])
        elif kind in ("event", "edge"):
            document = {
                k: v for k, v in line.items() if k not in ("record", "leaf", "hash", "prev_hash")
            }
            data_ = codec.canonical(document)
            assert line["leaf"] == hashlib.sha256(b"\x00" + data_).hexdigest()
            assert line["hash"] == codec.chain_hash(line["prev_hash"], data_)
            version, head = heads.get(line["stream"], (0, GENESIS))
            windowed = read.header["scope"]["kind"] in ("table", "player")
            if windowed and line["stream"] == "log":  # its seals, each on its own
                pass
            elif line["stream"] in heads or line["version"] == 1:
                assert line["version"] == version + 1 and line["prev_hash"] == head
            heads[line["stream"]] = (line["version"], line["hash"])
            assert line["position"] == size + 1
            push(bytes.fromhex(line["leaf"]), 0)
            size += 1
            (read.events if kind == "event" else read.edges).append(line)
        elif kind == "skip":
            assert line["from"] == size + 1 and line["to"] >= line["from"]
            for digest in line["hashes"]:
                width = size & -size if size else 1 << 62
                while size + width > line["to"]:
                    width >>= 1
                assert bytes.fromhex(digest) == subtree(leaves[size : size + width])
                push(bytes.fromhex(digest), width.bit_length() - 1)
                size += width
            assert size == line["to"]
            read.skips.append(line)
        elif kind == "checkpoint":
            assert read.order[-2] in ("event", "edge") and line["size"] == size
            signed = open_checkpoint(line["note"], [VERIFIER])
            assert signed.size == size and signed.root == subtree(leaves[:size])
            read.checkpoints.append(line)
        else:
            assert kind == "closing" and line is lines[-1]
            read.closing = line
    closing = read.closing
    assert size == last == closing["size"]
    root = subtree(leaves[:last]) if last else merkle.EMPTY_ROOT
    folded = stack[-1] if stack else merkle.EMPTY_ROOT
    for left in reversed(stack[:-1]):
        folded = merkle.node_hash(left, folded)
    assert closing["root"] == folded.hex() == root.hex()
    assert closing["events"] == len(read.events)
    assert closing["skipped"] == sum(s["to"] - s["from"] + 1 for s in read.skips)
    assert closing["events"] + closing["skipped"] + len(read.edges) == last - first + 1
    assert closing["types"] == dict(Counter(e["type"] for e in read.events))
    signed = open_checkpoint(closing["checkpoint"]["note"], [VERIFIER])
    assert signed.size == closing["checkpoint"]["size"] == len(log)
    proof = [bytes.fromhex(h) for h in closing["consistency"]]
    if last == signed.size:
        assert proof == [] and signed.root == root
    else:
        merkle.check_tree(proof, signed.size, signed.root, last, root)
    return read
