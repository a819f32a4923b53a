"""Policies in the c2sp.org/tlog-policy format (ledger.store.log.policy): what they
accept and refuse, and when the witnesses that cosigned a checkpoint make the quorum."""

from __future__ import annotations

import hashlib

import pytest

from ledger.store.log.checkpoint import (
    BadSignature,
    Checkpoint,
    NoteError,
    parse_note,
    sign_checkpoint,
)
from ledger.store.log.cosignature import Cosigner, with_signatures
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Policy, PolicyError

LOG = Signer("hazard.example/ledger", bytes(32))
X = {n: Cosigner(f"{n}.example/w", hashlib.sha256(n.encode()).digest()) for n in "abcdef"}


def policy(quorum: str, *groups: str) -> Policy:
    lines = [f"log {LOG.verifier.text()} https://ledger.example/"]
    lines += [f"witness {n} {c.key.text()}" for n, c in X.items()]
    return Policy.parse("\n".join([*lines, *groups, f"quorum {quorum}", ""]))


def cosigned(*names: str, size: int = 55) -> str:
    checkpoint = Checkpoint(LOG.name, size, hashlib.sha256(b"%d" % size).digest())
    note = sign_checkpoint(checkpoint, LOG)
    text, _ = parse_note(note)
    return with_signatures(note, [X[n].cosign(text, 1700000000 + i) for i, n in enumerate(names)])


def test_the_specs_two_level_example() -> None:
    rule = policy("X-and-Y", "group X 2 a b c", "group Y any d e f", "group X-and-Y all X Y")
    assert rule.witnessed({"a", "b", "d"})
    assert not rule.witnessed({"a", "d", "e"})
    assert not rule.witnessed({"a", "b", "c"})
    assert rule.describe() == "all of (2 of a, b, c), (1 of d, e, f)"


def test_a_checkpoint_is_read_with_its_cosigners_and_the_quorum() -> None:
    rule = policy("two", "group two 2 a b c")
    verdict = rule.verify(cosigned("a", "c", "e"))
    assert verdict.checkpoint.size == 55
    assert set(verdict.cosigned) == {"a", "c", "e"} and verdict.quorum
    assert not rule.verify(cosigned("a")).quorum
    assert policy("none").verify(cosigned()).quorum


def test_a_note_not_signed_by_the_log_or_with_a_bad_cosignature_is_refused() -> None:
    rule = policy("a")
    other = Signer("hazard.example/ledger", bytes(31) + b"\x07")
    note = sign_checkpoint(Checkpoint(LOG.name, 1, bytes(32)), other)
    with pytest.raises(NoteError):
        rule.verify(note)
    good = cosigned("a")
    forged = good.replace(good.splitlines()[-1][-8:], "AAAAAAA=")
    with pytest.raises(BadSignature):
        rule.verify(forged + "\n" if not forged.endswith("\n") else forged)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no quorum line"),
        ("quorum a\n", "line 1: quorum a: no witness or group"),
        ("quorum none\nquorum none\n", "line 2: a second quorum"),
        ("frob x\nquorum none\n", "line 1: unknown keyword 'frob'"),
        ("group g any\nquorum none\n", "line 1: a group line"),
        ("witness none {a}\nquorum none\n", "cannot be defined"),
        ("witness a {a}\nwitness a {b}\nquorum a\n", "line 2: a is defined twice"),
        ("witness a {a}\nwitness b {a}\nquorum a\n", "line 2: this witness's key is listed twice"),
        ("witness a {a}\ngroup g 2 a\nquorum g\n", "line 2: a group's threshold"),
        ("witness a {a}\ngroup g 01 a\nquorum g\n", "line 2: a group's threshold"),
        ("witness a {a}\ngroup g any a a\nquorum g\n", "lists a member twice"),
        ("witness a {a}\ngroup g any a\ngroup h any a\nquorum h\n", "member of two groups"),
        ("group g any a\nwitness a {a}\nquorum g\n", "line 1: a: no witness or group"),
        ("witness a {log}\nquorum a\n", "line 1: the witness key has signature type 0x01"),
        ("log {a}\nquorum none\n", "line 1: the verifier key has signature type 0x04"),
        ("witness a {a}\x01\nquorum a\n", "line 1: control character 0x01"),
    ],
)
def test_what_a_policy_refuses_names_its_line(text: str, says: str) -> None:
    filled = text.format(a=X["a"].key.text(), b=X["b"].key.text(), log=LOG.verifier.text())
    with pytest.raises(PolicyError) as refused:
        Policy.parse(filled)
    assert says in str(refused.value)


def test_comments_blank_lines_and_tabs_are_read_as_the_spec_says() -> None:
    text = f"  # a comment\n\n\twitness\ta {X['a'].key.text()}\t\nquorum a\n"
    assert Policy.parse(text).witnessed({"a"})


NESTED = ("group X 2 a b c", "group Y any d e f", "group X-and-Y all X Y")


@pytest.mark.parametrize("quorum, groups", [("none", ()), ("a", ()), ("X-and-Y", NESTED)])
def test_a_policy_written_out_reads_back_as_the_same_policy(
    quorum: str, groups: tuple[str, ...]
) -> None:
    """What the console shows a player (text(urls=False)) is the policy it checks with."""
    rule = policy(quorum, *groups)
    assert Policy.parse(rule.text()) == rule
    bare = Policy.parse(rule.text(urls=False))
    assert "https://" not in rule.text(urls=False) and bare.logs[0].url is None
    assert bare.witnesses.keys() == rule.witnesses.keys()
    assert (bare.groups, bare.quorum) == (rule.groups, rule.quorum)


def test_numbers_of_thousands_of_digits_are_refused_with_the_line_not_a_traceback() -> None:
    """Python's int() refuses more than 4,300 digits with a bare ValueError: every
    number read from a policy, a checkpoint, a tlog-proof or a witness's request is
    bounded before it is converted, and refused as its format's error."""
    from ledger.store.log.checkpoint import Checkpoint, MalformedCheckpoint
    from ledger.store.log.tlogproof import TlogProof, TlogProofError
    from ledger.witness.submission import Malformed, read_submission

    huge = "9" * 5000
    with pytest.raises(PolicyError, match="line 2: a group's threshold"):
        Policy.parse(f"witness a {X['a'].key.text()}\ngroup g {huge} a\nquorum g\n")
    with pytest.raises(MalformedCheckpoint, match="line 2 \\(tree size\\)"):
        Checkpoint.parse(f"o\n{huge}\n{'A' * 43}=\n")
    with pytest.raises(TlogProofError, match="line 2 \\(index\\)"):
        TlogProof.parse(f"c2sp.org/tlog-proof@v1\nindex {huge}\n\no\n1\nx\n")
    with pytest.raises(Malformed, match="the old size line"):
        read_submission(f"old {huge}\n\no\n1\nAAAA\n\n\u2014 o AAAA\n".encode())
