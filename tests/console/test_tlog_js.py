"""The browser's checks (ledger/console/static/tlog.js), run in chromium, held to the
Python they mirror: the same proofs accepted and the same ones refused as
ledger.store.log.merkle's, the same notes and cosignatures as checkpoint.py's and
cosignature.py's, the same quorum as policy.py's."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from typing import Any

import pytest

from ledger.store.log import merkle
from ledger.store.log.checkpoint import Checkpoint, NoteError, sign_checkpoint
from ledger.store.log.cosignature import with_signatures
from ledger.store.log.policy import Policy
from tests.console.conftest import Served
from tests.ledger.cosignkit import AUDITOR, CHAIR, STRANGER, TREASURER, policy_text
from tests.signing import ORIGIN, SIGNER

SIZE = 40
"""Trees of 1 to SIZE records: every shape of path and of consistency proof up to 6 deep."""


def _tree() -> tuple[list[bytes], Callable[[Any], list[bytes]]]:
    leaves = [merkle.leaf_hash(f"record {i}".encode()) for i in range(SIZE)]
    stored: list[bytes] = []
    reader = lambda indexes: [stored[i] for i in indexes]  # noqa: E731
    for n, leaf in enumerate(leaves):
        stored += merkle.stored_hashes_for_leaf(n, leaf, reader)
    return leaves, reader


def _python_says(check: Callable[..., None], *args: Any) -> bool:
    try:
        check(*args)
    except merkle.MerkleError:
        return False
    return True


def _tampered(path: list[bytes], rng: random.Random) -> list[bytes]:
    if not path:
        return [b"\x00" * 32]
    at = rng.randrange(len(path))
    flipped = bytes([path[at][0] ^ 1]) + path[at][1:]
    return [*path[:at], flipped, *path[at + 1 :]]


def _import(page: Any, served: Served) -> None:
    # A page of the console's own origin: WebCrypto is offered to it (127.0.0.1 is a
    # secure context), and the module is fetched as receipts.js fetches it.
    page.goto(served.url + "/")
    page.evaluate("async () => { window.tlog = await import('/console/static/tlog.js'); }")


CHECK = """async (cases) => {
  const h = (list) => list.map(tlog.fromHex);
  const out = [];
  for (const c of cases) {
    try {
      if (c.kind === "inclusion") {
        await tlog.checkInclusion(
          BigInt(c.n), BigInt(c.t), tlog.fromHex(c.leaf), h(c.path), tlog.fromHex(c.root));
      } else {
        await tlog.checkConsistency(
          BigInt(c.n), BigInt(c.t), tlog.fromHex(c.old), tlog.fromHex(c.root), h(c.path));
      }
      out.push(true);
    } catch (error) {
      if (!(error instanceof tlog.CheckFailed)) throw error;
      out.push(false);
    }
  }
  return out;
}"""


def test_the_browser_folds_inclusion_paths_as_merkle_py_does(page: Any, served: Served) -> None:
    leaves, reader = _tree()
    rng = random.Random(24)
    cases, python = [], []
    for t in range(1, SIZE + 1):
        root = merkle.tree_hash(t, reader)
        for n in range(t):
            path = merkle.prove_record(t, n, reader)
            wrong_leaf = leaves[(n + 1) % SIZE] if t > 1 else merkle.leaf_hash(b"other")
            for leaf, proof, at, size in [
                (leaves[n], path, n, t),  # the proof as given
                (leaves[n], _tampered(path, rng), n, t),  # a hash of the path changed
                (wrong_leaf, path, n, t),  # another event
                (leaves[n], path, (n + 1) % t, t),  # another position
                (leaves[n], path[:-1], n, t),  # a hash left out
                (leaves[n], [*path, root], n, t),  # a hash too many
                (leaves[n], path, n, t + 1),  # another tree's size
            ]:
                cases.append({"kind": "inclusion", "n": at, "t": size, "leaf": leaf.hex(),
                              "path": [p.hex() for p in proof], "root": root.hex()})  # fmt: skip
                python.append(_python_says(merkle.check_record, proof, size, root, at, leaf))
    _import(page, served)
    assert page.evaluate(CHECK, cases) == python
    # Every proof as given holds; none with a hash changed, for another leaf, or a hash
    # too many. (A path may well fold to the same root for a tree one larger: the size is
    # the signed note's word, not the path's; both sides agree on those too.)
    groups = [python[at : at + 7] for at in range(0, len(python), 7)]
    assert all(g[0] and not g[1] and not g[2] and not g[5] for g in groups)


def test_the_browser_checks_consistency_proofs_as_merkle_py_does(page: Any, served: Served) -> None:
    _, reader = _tree()
    rng = random.Random(9162)
    roots = [merkle.tree_hash(t, reader) for t in range(SIZE + 1)]
    cases, python, given = [], [], []
    for t in range(1, SIZE + 1):
        for n in range(1, t + 1):
            given.append(len(cases))
            path = merkle.prove_tree(t, n, reader)
            other = roots[n - 1] if n > 1 else merkle.leaf_hash(b"other")
            for old, proof, at in [
                (roots[n], path, n),  # the proof as given
                (roots[n], _tampered(path, rng), n),  # a hash changed
                (other, path, n),  # another old tree: a fork
                (roots[n], path[:-1], n),  # a hash left out
                (roots[n], path, n - 1 if n > 1 else n + 1),  # another old size
            ]:
                if at > t:
                    continue
                hexes = [p.hex() for p in proof]
                cases.append({"kind": "consistency", "n": at, "t": t, "old": old.hex(),
                              "path": hexes, "root": roots[t].hex()})  # fmt: skip
                python.append(_python_says(merkle.check_tree, proof, t, roots[t], at, old))
    _import(page, served)
    assert page.evaluate(CHECK, cases) == python
    # Every proof as given holds; none with a hash changed, or from another old tree.
    assert all(python[i] and not python[i + 1] and not python[i + 2] for i in given)


NOTES = """async ([policyText, notes]) => {
  const policy = await tlog.parsePolicy(policyText);
  const out = [];
  for (const note of notes) {
    try {
      const checkpoint = await tlog.openCheckpoint(note, policy.logs);
      const by = await tlog.cosignatures(note, policy.witnesses);
      out.push({size: Number(checkpoint.size), root: tlog.toHex(checkpoint.root),
                cosigned: Object.fromEntries([...by].map(([k, v]) => [k, Number(v)])),
                quorum: tlog.witnessed(policy, [...by.keys()])});
    } catch (error) {
      if (!(error instanceof tlog.CheckFailed)) throw error;
      out.push(error.check);
    }
  }
  return out;
}"""


def _notes() -> list[str]:
    text = Checkpoint(ORIGIN, 7, bytes(range(32)), ("time 2026-11-23T08:00:00Z",)).text()
    signed = sign_checkpoint(Checkpoint.parse(text), SIGNER)
    by = lambda *ws, note=signed: with_signatures(note, [w.cosign(text, 1_795_000_000 + i)  # noqa: E731
                                                         for i, w in enumerate(ws)])  # fmt: skip
    good = by(TREASURER, AUDITOR)
    sig_at = good.index("\u2014 " + TREASURER.name)
    forged_line = good[:sig_at] + good[sig_at:].replace("=", "A=", 1)  # not base64's own
    other_root = signed.replace(base64.b64encode(bytes(range(32))).decode(), "A" * 43 + "=")
    blob_start = good.index(" ", sig_at + 2) + 1
    flipped = "B" if good[blob_start + 20] != "B" else "C"
    broken = good[: blob_start + 20] + flipped + good[blob_start + 21 :]
    return [
        signed,  # the bank's alone
        by(TREASURER),  # one witness: short of two
        good,  # two
        by(TREASURER, AUDITOR, CHAIR),  # all three
        by(STRANGER),  # a key the policy does not name, under the treasurer's name
        broken,  # a cosignature changed
        other_root,  # the text changed after the log signed it
        forged_line,
    ]


def _python(policy: Policy, note: str) -> Any:
    try:
        verdict = policy.verify(note)
    except NoteError as refused:
        return type(refused).__name__
    checkpoint = verdict.checkpoint
    return {"size": checkpoint.size, "root": checkpoint.root.hex(),
            "cosigned": dict(verdict.cosigned), "quorum": verdict.quorum}  # fmt: skip


def test_the_browser_reads_notes_and_cosignatures_as_policy_py_does(
    page: Any, served: Served
) -> None:
    policy = Policy.parse(policy_text("2"))
    notes = _notes()
    _import(page, served)
    browser = page.evaluate(NOTES, [policy.text(), notes])
    python = [_python(policy, note) for note in notes]
    # The same verdict on every good note; a refusal on every bad one (the browser names
    # the check that refused it, Python the error).
    assert [b for b in browser if isinstance(b, dict)] == [p for p in python if isinstance(p, dict)]
    assert [isinstance(b, dict) for b in browser] == [isinstance(p, dict) for p in python]
    assert [b["quorum"] for b in browser[:5]] == [False, False, True, True, False]
    assert browser[5:] == ["cosignature", "signature", "note"]


@pytest.mark.parametrize("quorum", ["2", "all", "any", "none", "treasurer"])
def test_the_browser_reads_a_policy_as_policy_py_does(
    page: Any, served: Served, quorum: str
) -> None:
    policy = Policy.parse(policy_text(quorum))
    sets = [[], ["treasurer"], ["auditor"], ["treasurer", "chair"], list(policy.witnesses)]
    _import(page, served)
    browser = page.evaluate(
        """async ([text, sets]) => {
          const policy = await tlog.parsePolicy(text);
          return [tlog.describe(policy), sets.map((names) => tlog.witnessed(policy, names))];
        }""",
        [policy.text(), sets],
    )
    assert browser == [policy.describe(), [policy.witnessed(names) for names in sets]]
