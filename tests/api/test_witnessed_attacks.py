"""A bank that lies, on SQLite and PostgreSQL: each attack made with the bank's own key
(tests/ledger/attackkit.py) on a copy of an evening two real witnesses cosigned and a
watcher saw, and no player's receipt kept anywhere. Each attack leaves a log that
`hazard verify --deep` passes; each is caught and named all the same, by each of:

- the witnesses (ledger.witness), pushed the rewritten log by the ledger's own pusher:
  they refuse to cosign it, and `hazard witness evidence` prints the checkpoint they had
  cosigned and the one they refused, both signed by the bank;
- `hazard watch`, run again with what it kept from the honest evening: it stops, exit 1,
  with the two notes of one size that cannot both be true, and says so;
- `hazard verify --policy`: no checkpoint of the rewritten log has the quorum, and when
  the insider keeps the old cosignatures, they name the checkpoint the witnesses saw.

Whatever the insider does with the cosignatures the witnesses returned (keeps the rows
or deletes them), the same. The shared evening and the copies: tests/api/lyingkit.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.pusher import State
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import Checkpoint, parse_note
from tests.api.lyingkit import INSIDERS, Evening, Scene, evening_fixture, serving
from tests.ledger.attackkit import ATTACKS


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def evening(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Evening]:
    """The honest evening, witnessed and watched, once per database for the module."""
    yield from evening_fixture(request, tmp_path_factory)


@pytest.fixture
def scene(evening: Evening, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Scene]:
    """A copy of the log the test's `attack` left, the cosignatures as its `insider`
    left them, and copies of the witnesses' and the watcher's files."""
    made = evening.scene(tmp_path, *request.param)
    yield made
    made.close()


EACH = pytest.mark.parametrize(
    "scene",
    [(attack, insider) for attack in ATTACKS for insider in INSIDERS],
    ids=[f"{attack}, and the insider {insider}" for attack in ATTACKS for insider in INSIDERS],
    indirect=True,
)


def _text(note: str) -> str:
    return note.rstrip("\n")


def _root(note: str) -> bytes:
    return Checkpoint.parse(parse_note(note)[0]).root


def _size(note: str) -> int:
    return Checkpoint.parse(parse_note(note)[0]).size


@pytest.mark.parametrize("goes_on", [True, False], ids=["and the evening goes on", "alone"])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_attack_leaves_a_log_that_hazard_verify_deep_passes(
    evening: Evening, attack: str, goes_on: bool, tmp_path: Path
) -> None:
    """The precondition: nothing the bank holds says anything changed. And something
    did: the log's tree of the size the witnesses cosigned is another, or none."""
    _, deep = evening.attack(attack, goes_on)
    assert deep.exit_code == 0, deep.output
    assert "every checkpoint, signed by the trusted key, and every read model" in deep.output
    scene = evening.scene(tmp_path, attack, goes_on=goes_on)
    try:
        newest = _size(scene.newest())
        if newest >= evening.size:
            assert _root(scene.checkpoint(evening.size)) != _root(evening.note)
        else:  # a deposit dropped, and nothing written since: the log is shorter
            assert (attack, goes_on) == ("a deposit dropped and the rest renumbered", False)
            assert newest == evening.size - 2  # the deposit and its write's seal
    finally:
        scene.close()


# -- the witnesses --------------------------------------------------------------------------


@EACH
def test_the_witnesses_refuse_the_rewritten_log_and_keep_both_notes(scene: Scene) -> None:
    size, honest = scene.evening.size, scene.evening.note
    with scene.witnesses_serving() as policy:
        pushed = scene.push(policy)
    for name, outcome in pushed.items():
        assert outcome.state is State.REFUSED, (name, outcome)
        assert outcome.error is not None and "answered 422" in outcome.error, outcome
    newest = scene.newest()
    for name in pushed:
        shown = scene.evidence(name)
        assert shown.exit_code == 0, shown.output
        assert shown.output.startswith("1 refused checkpoint kept as evidence.\n"), shown.output
        assert f"was not shown to extend its tree of size {size} that this witness cosigned" in (
            shown.output
        )
        # The checkpoint it had cosigned and the one it refused, as the bank signed them.
        assert _text(honest) in shown.output and _text(newest) in shown.output
        # It still holds the honest tree, and serves it.
        held = scene.held(name)
        assert held is not None and parse_note(held)[0] == parse_note(honest)[0]
    with scene.engine.connect() as conn:  # and the ledger was given no cosignature of it
        cosigned = witnessed.newest(conn)
    assert cosigned is None or cosigned.size == size


# -- hazard watch ---------------------------------------------------------------------------


@EACH
def test_hazard_watch_stops_on_the_rewritten_log_with_both_notes(scene: Scene) -> None:
    size = scene.evening.size
    kept = Path(scene.state).read_bytes()
    found = scene.watch()
    assert found.exit_code == 1, found.output
    assert f"FORK: the bank signed two different histories of size {size}." in found.output
    assert "the bank rewrote history" in found.output
    assert _text(scene.evening.note) in found.output  # what it verified on the honest evening
    assert _text(scene.checkpoint(size)) in found.output  # the bank's checkpoint of that size now
    assert Path(scene.state).read_bytes() == kept


@pytest.mark.parametrize(
    "scene", [("the consistent rewrite", "drops the cosignatures")], indirect=True,
    ids=["the consistent rewrite"],
)  # fmt: skip
def test_a_watcher_reading_the_ledger_over_http_stops_on_the_rewrite(scene: Scene) -> None:
    """The ledger's own app serving the rewritten log, read anonymously, as a player's
    watcher reads it."""
    with serving(scene.app()) as url:
        found = scene.watch("--url", url)
    assert found.exit_code == 1, found.output
    size = scene.evening.size
    assert f"FORK: the bank signed two different histories of size {size}." in found.output
    assert _text(scene.evening.note) in found.output
    assert _text(scene.checkpoint(size)) in found.output


# -- hazard verify --policy -----------------------------------------------------------------


@EACH
def test_hazard_verify_under_the_policy_fails_the_rewritten_log(scene: Scene) -> None:
    alone = scene.verify()
    assert alone.exit_code == 0, alone.output  # the bank's key alone: all is well
    found = scene.verify("--policy", scene.policy)
    assert found.exit_code == 1, found.output
    size = scene.evening.size
    if scene.kept_cosignatures:
        assert (
            f"problem under the policy: the checkpoint of size {size} that auditor, treasurer "
            "cosigned is not the one stored: their cosignatures do not verify over it, nor over "
            f"the tree the events give at {size}"
        ) in found.output
        assert "The log was rewritten and its checkpoints signed again" in found.output
    else:
        assert (
            "problem under the policy: for want of a quorum: no stored checkpoint is cosigned "
            "by 1 of treasurer, auditor, as the policy asks"
        ) in found.output


# -- before the bank writes again -------------------------------------------------------------

CUT_SHORT = "a deposit dropped and the rest renumbered"


@pytest.mark.parametrize(
    "scene",
    [(attack, insider, False) for attack in ATTACKS for insider in INSIDERS],
    ids=[f"{attack}, and the insider {insider}" for attack in ATTACKS for insider in INSIDERS],
    indirect=True,
)
def test_the_attack_alone_before_the_bank_writes_again(scene: Scene) -> None:
    """The attack, and not a write since. `hazard verify --policy` fails it as above.
    `hazard watch` stops on it: a fork where the log kept its size; where the log was cut
    short of the checkpoint the watcher holds, the bank signs no checkpoint of that size
    any more to be a fork's second note, but the ledger says it has none of a size its
    log signed: evidence (exit 1), with the note that proves the size existed. The
    witnesses are shown it by the ledger's next push that reaches them, and refuse it."""
    size = scene.evening.size
    assert scene.verify("--policy", scene.policy).exit_code == 1
    found = scene.watch()
    if _size(scene.newest()) == size:
        assert found.exit_code == 1, found.output
        assert f"FORK: the bank signed two different histories of size {size}." in found.output
        assert _text(scene.evening.note) in found.output
        assert _text(scene.checkpoint(size)) in found.output
    else:
        assert found.exit_code == 1, found.output
        assert (
            f"DENIED: the ledger says it has no checkpoint of size {size}, and its log signed "
            "one: the checkpoint this watcher verified before"
        ) in found.output
        assert f"  asked for it: no checkpoint of size {size}" in found.output
        assert _text(scene.evening.note) in found.output

    with scene.witnesses_serving() as policy:
        pushed = scene.push(policy)
        if scene.kept_cosignatures:
            # The pusher reads the witnesses' sizes from the cosignatures kept: it holds
            # them cosigned at the log's size or past it, and shows them nothing, until
            # the log grows past what they cosigned.
            assert {o.state for o in pushed.values()} == {State.OK}, pushed
            assert scene.evidence("treasurer").output.startswith("No evidence")
            for _ in range(size + 1 - _size(scene.newest())):
                scene.write()
            pushed = scene.push(policy)
    for name, outcome in pushed.items():
        assert outcome.state is State.REFUSED, (name, outcome)
        shown = scene.evidence(name)
        assert shown.output.startswith("1 refused checkpoint kept as evidence."), shown.output
        assert _text(scene.evening.note) in shown.output and _text(scene.newest()) in shown.output
