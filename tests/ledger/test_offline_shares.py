"""The offline check on several processes (ledger.exports.offline.shares, `verify(...,
jobs=N)`, `hazard verify FILE --jobs N`): on a good file the same `Verified` as the
serial check, every figure and every word of it; on a bad one the serial check's
Disagreement, the first line in file order that disagrees, with the same words. Every
other test's offline check is also made both ways (tests/conftest.py,
verify_in_shares_too); here, files tampered with at random."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.exports.offline import Disagreement, Verified, events, shares
from ledger.exports.offline import verify as verify_alone  # not made both ways (conftest)
from ledger.store import codec
from tests.ledger.offlinekit import exported_files, rehash
from tests.signing import VERIFIER

SCOPES = ["all", "t1", "range", "bob"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    yield from exported_files(tmp_path_factory)


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def outcome(check: Callable[[], Verified]) -> Verified | tuple[int, str]:
    try:
        return check()
    except Disagreement as exc:
        return exc.line, str(exc)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("processes", [2, 3])
def test_a_good_file_verifies_in_shares_as_it_does_serially(
    files: dict[str, bytes], scope: str, processes: int
) -> None:
    lines = lines_of(files[scope])
    serial = verify_alone(lines, VERIFIER)
    # shared() never falls back to the serial check: it verified in shares.
    assert shares.shared(lines, VERIFIER, None, None, processes) == serial
    assert verify_alone(lines, VERIFIER, jobs=processes) == serial


def test_a_file_on_disk_is_read_by_every_process(files: dict[str, bytes], tmp_path: Path) -> None:
    path = tmp_path / "all.jsonl"
    path.write_bytes(files["all"])
    serial = verify_alone(lines_of(files["all"]), VERIFIER)
    with path.open("rb") as f:
        assert shares.verify(f, VERIFIER, None, None, 2) == serial
        assert f.tell() == 0  # not read here: the check in shares opens it itself
        assert verify_alone(f, VERIFIER, jobs=2) == serial


def test_lines_from_a_pipe_are_checked_serially(files: dict[str, bytes]) -> None:
    lines = lines_of(files["t1"])
    assert shares.verify(iter(lines), VERIFIER, None, None, 2) is None
    assert verify_alone(iter(lines), VERIFIER, jobs=2) == verify_alone(lines, VERIFIER)


def test_progress_is_told_in_shares(files: dict[str, bytes]) -> None:
    told: list[tuple[int, int]] = []
    verified = shares.shared(
        lines_of(files["all"]), VERIFIER, lambda done, of: told.append((done, of)), None, 2
    )
    assert told and told[-1] == (verified.last, verified.last)


def test_a_file_that_does_not_verify_in_shares_is_checked_serially(
    files: dict[str, bytes],
) -> None:
    recs = [json.loads(line) for line in lines_of(files["all"])]
    first = next(i for i, r in enumerate(recs) if r.get("type") == "BetSettled")
    later = max(i for i, r in enumerate(recs) if r.get("type") == "DiceThrown")
    for i in (later, first):  # two lines disagree: the first in the file is named
        recs[i]["payload"]["note"] = 1
    lines = [codec.canonical(r) + b"\n" for r in recs]
    with pytest.raises(Disagreement) as serial:
        verify_alone(lines, VERIFIER)
    assert serial.value.line == first + 1
    with pytest.raises(shares.Unshared):
        shares.shared(lines, VERIFIER, None, None, 2)
    with pytest.raises(Disagreement) as shared:
        verify_alone(lines, VERIFIER, jobs=2)
    assert (shared.value.line, str(shared.value)) == (serial.value.line, str(serial.value))


# -- at random -----------------------------------------------------------------------------

TAMPERINGS = ["cut", "byte", "swap", "drop", "repeat"]


def tamper(lines: list[bytes], how: str, data: st.DataObject) -> list[bytes]:
    lines = list(lines)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    line = lines[i]
    if how == "cut":
        lines[i] = line[: data.draw(st.integers(0, len(line) - 1), label="kept")] + b"\n"
    elif how == "byte":
        j = data.draw(st.integers(0, max(len(line) - 2, 0)), label="at")
        new = data.draw(st.sampled_from(b'0123456789abcdef":,{}\\ x'), label="byte")
        lines[i] = line[:j] + bytes([new]) + line[j + 1 :]
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1), label="with")
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "drop":
        del lines[i]
    else:
        lines.insert(i, line)
    return lines


def rehashed(lines: list[bytes], data: st.DataObject) -> list[bytes]:
    """An event's content changed, its leaf and its stream's chain made anew: only the
    engine's replay, the money or the tree can catch it."""
    recs: list[dict[str, Any]] = [json.loads(line) for line in lines]
    events = [n for n, r in enumerate(recs, 1) if r.get("record") == "event"]
    number = data.draw(st.sampled_from(events), label="event")
    payload = recs[number - 1]["payload"]
    numbers = sorted(k for k, v in payload.items() if isinstance(v, int))
    if numbers:
        key = data.draw(st.sampled_from(numbers), label="field")
        payload[key] += data.draw(st.sampled_from([-1, 1, 100]), label="by")
    else:
        payload["note"] = "forged"
    rehash(recs, number)
    return [codec.canonical(r) + b"\n" for r in recs]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_tampered_file_gets_the_serial_verdict_in_shares(
    files: dict[str, bytes], data: st.DataObject
) -> None:
    scope = data.draw(st.sampled_from(SCOPES), label="scope")
    lines = lines_of(files[scope])
    if data.draw(st.booleans(), label="rehashed"):
        lines = rehashed(lines, data)
    for _ in range(data.draw(st.integers(0 if lines != lines_of(files[scope]) else 1, 2))):
        lines = tamper(lines, data.draw(st.sampled_from(TAMPERINGS), label="how"), data)
    serial = outcome(lambda: verify_alone(lines, VERIFIER))
    assert outcome(lambda: verify_alone(lines, VERIFIER, jobs=2)) == serial
    if isinstance(serial, tuple):  # shares never verify what the serial check does not
        with pytest.raises(shares.Unshared):
            shares.shared(lines, VERIFIER, None, None, 2)
    else:
        assert shares.shared(lines, VERIFIER, None, None, 2) == serial


@pytest.mark.parametrize("scope", SCOPES)
def test_the_place_cut_out_of_a_line_is_the_one_its_owner_reads(
    files: dict[str, bytes], scope: str
) -> None:
    placed = 0
    for line in lines_of(files[scope]):
        cut = line.rstrip(b"\n")
        whole = events.CANONICAL.fullmatch(cut)
        found = shares._stream(cut)
        if whole is None:  # not an event: every process reads it whole
            assert found is None
            continue
        read = events.fast(whole)
        assert read is not None and found is not None
        row, _, leaf = read
        stream, tail = found
        assert (stream.decode(), *shares._place(cut, tail)) == (
            row.stream, row.position, leaf.encode(), row.recorded_at.encode()
        )  # fmt: skip
        placed += 1
    assert placed > 10
