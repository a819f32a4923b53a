"""The watcher's pages run as printed: docs/player.md's and docs/auditor.md's ```bash
blocks (a player keeping and checking a receipt, the curl and openssl recipe, an
auditor's watcher), pasted into bash in a directory holding the club's policy and a
deposit's answer, against the ledger's anonymous reads; what the pages show a command
printing (`# ↓` and the ```text block after it), it prints; the recipe accepts the
file as fetched and refuses it changed; and the fork and the denied checkpoint the
auditor's page shows are what `hazard watch` prints on them.

The ledger's side here is watchkit's `ledger_serving`, which serves the contract the
ledger's endpoints are built to on their own branch (and the tlog-proof through the
same TlogProof the watcher reads); `localhost:8000` in the pages is rewritten to it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ledger.books.book import Book
from ledger.cli import main
from ledger.service import Club
from ledger.store import db
from ledger.store.eventstore import EventStore
from ledger.store.log import merkle, tree
from ledger.store.vocabulary import AccountOpened, Deposited
from tests.signing import SIGNER
from tests.watch.watchkit import (
    AUDITOR,
    TREASURER,
    Written,
    as_written,
    cosign,
    cut,
    evening,
    ledger_serving,
    more,
    policy_text,
    rewrite,
    tlog_proof,
)

ROOT = Path(__file__).resolve().parents[2]
PLAYER = ROOT / "docs" / "player.md"
AUDITOR_PAGE = ROOT / "docs" / "auditor.md"
_FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("curl", "jq", "openssl")) and not os.environ.get("CI"),
    reason="the pages run curl, jq and openssl (.ci/run installs them)",
)


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """A page's ```bash blocks, in order, each with the ```text block that follows it
    when a command in it ends `# ↓` (what that command prints)."""
    fences = [(m.group(1), m.group(2)) for m in _FENCE.finditer(page.read_text(encoding="utf-8"))]
    found = []
    for index, (lang, body) in enumerate(fences):
        if lang != "bash":
            continue
        shown = None
        if re.search(r"# ↓$", body, re.M):
            lang_after, shown = fences[index + 1]
            assert lang_after == "text", f"`# ↓` in {page.name} is followed by ```{lang_after}"
        found.append((body, shown))
    return found


def marked(body: str) -> str:
    """The block with each `# ↓` command's output between markers."""
    lines = []
    for line in body.splitlines():
        if line.rstrip().endswith("# ↓"):
            lines += ["printf '\\n@@@\\n'", line, "printf '\\n@@@ end\\n'"]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def prints(expected: str, printed: str) -> bool:
    """As a reader compares them: `…` any text (lines too), trailing spaces aside."""
    printed = "\n".join(line.rstrip() for line in printed.strip("\n").splitlines())
    pattern = ".*?".join(re.escape(part) for part in expected.strip("\n").split("…"))
    return re.fullmatch(pattern, printed, re.S) is not None


def bash(script: str, here: Path, url: str) -> subprocess.CompletedProcess[str]:
    script = re.sub(r"\b(localhost|127\.0\.0\.1):8000\b", url.removeprefix("http://"), script)
    env = {k: v for k, v in os.environ.items() if k not in ("HAZARD_KEY", "DATABASE_URL")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    return subprocess.run(
        ["bash", "-c", script], cwd=here, env=env, capture_output=True, text=True, timeout=300
    )


def club(here: Path, writes: int) -> tuple[EventStore, list[Written]]:
    """The club's ledger in here/hazard.sqlite3, signed by the tests' key, and its
    policy saved as club.policy; the evening's `writes` writes."""
    store = _ledger(here)
    return store, evening(store, writes)


def _ledger(here: Path) -> EventStore:
    engine = db.make_engine(f"sqlite:///{here / 'hazard.sqlite3'}")
    db.upgrade(engine)
    (here / "club.policy").write_text(policy_text())
    return EventStore(engine, signer=SIGNER)


def before_seals(here: Path) -> EventStore:
    """The club's ledger in here, holding one event as the ledger wrote it before
    every write ended with a seal (migration 0012 keeps such a log and its checkpoints
    as they are): its checkpoint is of the tree of one leaf, whose path is empty."""
    store = _ledger(here)
    with store.engine.begin() as conn:
        opened = AccountOpened(version=1, account="player:ann")
        (row,) = store.append(conn, "account:player:ann", 0, [opened], "setter")
        assert tree.build(conn) == 1
        tree.issue(conn, SIGNER, 1, merkle.tree_hash(1, tree.reader(conn)), row.recorded_at)
    return store


@pytest.fixture
def here(tmp_path: Path) -> Path:
    folder = tmp_path / "player"
    folder.mkdir()
    return folder


def test_the_player_s_and_the_auditor_s_pages_run_as_printed(here: Path) -> None:
    store, _ = club(here, 12)
    answer = Club(Book(store)).account_command("ann", Deposited, 250, "setter")
    (here / "deposit.json").write_text(json.dumps(answer))
    deposit = as_written(answer)
    cosign(store.engine, deposit.size, TREASURER, AUDITOR)
    pages = blocks(PLAYER) + blocks(AUDITOR_PAGE)
    assert len(pages) >= 5 and any("openssl pkeyutl" in body for body, _ in pages)
    with ledger_serving(store.engine) as (url, asked):
        ran = bash("".join(marked(body) for body, _ in pages), here, url)
    store.engine.dispose()
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "Signature Verification Failure" not in ran.stdout and "FAILED" not in ran.stdout
    outputs = re.findall(r"\n@@@\n(.*?)\n@@@ end\n", ran.stdout, re.S)
    shown = [text for _, text in pages if text is not None]
    assert len(outputs) == len(shown) >= 2
    for expected, printed in zip(shown, outputs, strict=True):
        assert prints(expected, printed), f"the page shows\n{expected}\nit printed\n{printed}"
    # The recipe, on the file the player fetched: every check passed, and the event.
    assert "Signature Verified Successfully\n" in ran.stdout
    assert "witnessed: 2 of the policy's witnesses cosigned (2 asked)" in ran.stdout
    assert (
        f"the event at position {deposit.position} is in the tree of {deposit.size} events:"
        in ran.stdout
    )
    assert f"/log/proofs/tlog-proof?position={deposit.position}" in asked  # fetched as printed
    assert (here / "audit-watch.json").exists() and (here / "copy-watch.json").exists()


def _recipe() -> str:
    return next(body for body, _ in blocks(PLAYER) if "openssl pkeyutl" in body)


def _frame(proof: str, old: bytes, new: bytes) -> str:
    lines = proof.split("\n")
    frame = base64.b64decode(lines[1].removeprefix("extra ")).replace(old, new)
    lines[1] = "extra " + base64.b64encode(frame).decode()
    return "\n".join(lines)


def _line(proof: str, number: int, text: str) -> str:
    lines = proof.split("\n")
    lines[number] = text
    return "\n".join(lines)


def _index(p: str, index: int, size: int) -> str:
    return p.replace(f"\nindex {index}\n", f"\nindex {index - 1}\n")


def _size(p: str, index: int, size: int) -> str:
    return p.replace(f"\n{size}\n", f"\n{size + 1}\n", 1)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda p, *_: p, "the event at position {position} is in the tree of {size} events:"),
        (lambda p, *_: _frame(p, b'"amount":50', b'"amount":5000'), "FAILED: the path does not"),
        (lambda p, *_: _line(p, 3, base64.b64encode(bytes(32)).decode()), "FAILED: the path"),
        (_index, "FAILED: the path does not lead"),
        (_size, "Signature Verification Failure"),
        (lambda p, *_: _line(p, -3, p.split("\n")[-3][:-8] + "AAAAAAA="), "FAILED: the cosig"),
    ],
    ids=["as fetched", "extra", "path", "index", "note", "cosignature"],
)
def test_the_recipe_refuses_a_changed_proof(here: Path, change: object, says: str) -> None:
    """The recipe as printed, on a file as the ledger serves it and changed: the event
    (its extra line), a path hash, the index, the checkpoint's text, a cosignature.
    `change` is given the file, its index and its checkpoint's size."""
    assert callable(change)
    store, written = club(here, 9)
    size, position = written[-1].size, written[5].position  # ann's deposit of 50
    cosign(store.engine, size, TREASURER, AUDITOR)
    proof = tlog_proof(store.engine, position)
    store.engine.dispose()
    (here / "deposit.tlog-proof").write_text(change(proof, position - 1, size))
    ran = bash(_recipe(), here, "http://127.0.0.1:8000")
    says = says.format(position=position, size=size)
    assert says in ran.stdout, ran.stdout + ran.stderr
    if says.startswith("the event"):
        assert "FAILED" not in ran.stdout and "NOT WITNESSED" not in ran.stdout


@pytest.mark.parametrize(
    "leaf",
    [lambda size: 1, lambda size: 2, lambda size: 7, lambda size: 8, lambda size: size],
    ids=["first", "second", "a left", "a right", "last"],
)
def test_the_recipe_proves_every_shape_of_path(here: Path, leaf: Callable[[int], int]) -> None:
    """The first and last leaves, a left and a right one, of the tree of 13 writes
    (whose right edge is ragged: its size is no power of 2), and a tree of one leaf,
    whose path is empty."""
    store, written = club(here, 13)
    size = written[-1].size
    assert size & (size - 1), "a ragged right edge"
    position = leaf(size)
    cosign(store.engine, size, TREASURER, AUDITOR)
    (here / "deposit.tlog-proof").write_text(tlog_proof(store.engine, position))
    store.engine.dispose()
    ran = bash(_recipe(), here, "http://127.0.0.1:8000")
    assert f"the event at position {position} is in the tree of {size} events:" in ran.stdout
    if position == 1:
        alone = here / "alone"
        alone.mkdir()
        store = before_seals(alone)  # since seals, every tree has two leaves at least
        cosign(store.engine, 1, TREASURER, AUDITOR)
        (alone / "deposit.tlog-proof").write_text(tlog_proof(store.engine, 1))
        store.engine.dispose()
        ran = bash(_recipe(), alone, "http://127.0.0.1:8000")
        assert "the event at position 1 is in the tree of 1 events:" in ran.stdout


def test_the_fork_the_auditor_s_page_shows_is_what_a_fork_prints(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = AUDITOR_PAGE.read_text(encoding="utf-8").split("### What a fork looks like")[1]
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert shown is not None
    command = next(body for body, _ in blocks(AUDITOR_PAGE) if "--report" in body).strip()
    store, written = club(here, 10)
    cosign(store.engine, written[-1].size, TREASURER, AUDITOR)
    (here / "deposit-5.txt").write_text(written[4].note)
    (here / "deposit-10.txt").write_text(written[9].note)
    monkeypatch.chdir(here)
    added = CliRunner().invoke(
        main,
        ["watch", "add", "deposit-5.txt", "deposit-10.txt", "--policy", "club.policy",
         "--state", "audit-watch.json"],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    with ledger_serving(store.engine) as (url, _):
        first = bash(command, here, url)
        assert first.returncode == 0, first.stdout + first.stderr
        more(store, 4)
        rewrite(store.engine, written[5].position)
        cosign(store.engine, more(store, 1)[-1].size, TREASURER, AUDITOR)
        forked = bash(command, here, url)
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM gossip")).scalar() == 1
    store.engine.dispose()
    assert forked.returncode == 1
    assert prints(shown.group(1), forked.stdout), forked.stdout


def test_the_denied_checkpoint_the_auditor_s_page_shows_is_what_a_cut_log_prints(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The club's ledger restored from the evening's backup taken at size 8, after the
    watcher verified 10: asked for 10, it answers 404, and the watcher prints it."""
    section = AUDITOR_PAGE.read_text(encoding="utf-8").split(
        "### What a denied checkpoint looks like"
    )[1]
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert shown is not None
    command = next(body for body, _ in blocks(AUDITOR_PAGE) if "--report" in body).strip()
    store, notes = club(here, 10)
    # The page's sizes are the eighth and tenth writes' checkpoints: read from them.
    sizes = {"8": notes[7].size, "10": notes[9].size}
    expected = re.sub(r"(?<![-\w])(8|10)\b", lambda m: str(sizes[m.group()]), shown.group(1))
    cosign(store.engine, sizes["8"], TREASURER, AUDITOR)
    cosign(store.engine, sizes["10"], TREASURER, AUDITOR)
    (here / "deposit-5.txt").write_text(notes[4].note)
    (here / "deposit-10.txt").write_text(notes[9].note)
    monkeypatch.chdir(here)
    added = CliRunner().invoke(
        main,
        ["watch", "add", "deposit-5.txt", "deposit-10.txt", "--policy", "club.policy",
         "--state", "audit-watch.json"],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    with ledger_serving(store.engine) as (url, _):
        first = bash(command, here, url)
        assert first.returncode == 0, first.stdout + first.stderr
        cut(store.engine, sizes["8"])
        denied = bash(command, here, url)
    store.engine.dispose()
    assert denied.returncode == 1
    assert prints(expected, denied.stdout), denied.stdout
