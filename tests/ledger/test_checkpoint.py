"""Checkpoints, signed notes and keys, against the C2SP specs and Go's `sumdb/note`.

The known answers are the test vectors of golang.org/x/mod/sumdb/note (note_test.go),
of sumdb/tlog (note_test.go) and the example of c2sp.org/signed-note: Ed25519 is
deterministic (RFC 8032), so signing the same text with the same key gives the same
bytes as Go does.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.store.log import checkpoint as cp
from ledger.store.log import keys
from ledger.store.log.checkpoint import Checkpoint

# note_test.go
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpR"
    "Zb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33"
    "WWd1RvMc+QQ=\n"
)
# c2sp.org/signed-note, "Verifier keys: Example"
C2SP_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
C2SP_NOTE = (
    "This is an example message.\n\n"
    "— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXm"
    "RKuwHjG1Yu72IneyaQM=\n"
)
# sumdb/tlog note_test.go: a go.sum tree note is a checkpoint whose origin is
# "go.sum database tree"; its root is RecordHash("hello world") = SHA-256(0x00 || data).
GO_TREE = "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n"

ROOT = hashlib.sha256(b"\x00hazard").digest()
ORIGIN = "hazard.example/club"
WHEN = datetime(2026, 11, 23, 8, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def signer() -> keys.Signer:
    return keys.Signer.generate(ORIGIN)


# Known answers --------------------------------------------------------------------------


def test_go_signer_key_yields_go_verifier_key() -> None:
    signer = keys.Signer.parse(PETER_SKEY)
    assert signer.name == "PeterNeumann"
    assert signer.key_id == 0xC74F20A3
    assert signer.verifier.text() == PETER_VKEY
    assert signer.text() == PETER_SKEY
    assert keys.Verifier.parse(PETER_VKEY) == signer.verifier


def test_signing_go_text_with_go_key_gives_go_signature_byte_for_byte() -> None:
    signer = keys.Signer.parse(PETER_SKEY)
    assert cp.sign_note(TEXT, signer) == TEXT + "\n" + PETER_SIG


def test_open_go_note_one_known_one_unknown_signature() -> None:
    peter = keys.Verifier.parse(PETER_VKEY)
    note = cp.open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peter])
    assert note.text == TEXT
    assert [(s.name, s.key_id) for s in note.signatures] == [("PeterNeumann", 0xC74F20A3)]
    assert [(s.name, s.key_id) for s in note.unverified] == [("EnochRoot", 0xAF0CFE78)]


def test_open_go_note_both_known() -> None:
    verifiers = [keys.Verifier.parse(PETER_VKEY), keys.Verifier.parse(ENOCH_VKEY)]
    note = cp.open_note((TEXT + "\n" + PETER_SIG + ENOCH_SIG).encode(), verifiers)
    assert [s.name for s in note.signatures] == ["PeterNeumann", "EnochRoot"]
    assert note.unverified == ()


def test_open_c2sp_example_note() -> None:
    note = cp.open_note(C2SP_NOTE, [keys.Verifier.parse(C2SP_VKEY)])
    assert note.text == "This is an example message.\n"
    assert note.signatures[0].key_id == 0x530D903A


def test_go_tree_note_is_a_checkpoint() -> None:
    root = hashlib.sha256(b"\x00hello world").digest()
    checkpoint = Checkpoint.parse(GO_TREE)
    assert checkpoint == Checkpoint("go.sum database tree", 123456789012, root)
    assert checkpoint.text() == GO_TREE


def test_duplicated_signatures_are_listed_once() -> None:
    # note_test.go: a known key's signature twice, an unknown one twice.
    note = cp.open_note(
        TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG,
        [keys.Verifier.parse(PETER_VKEY)],
    )
    assert len(note.signatures) == 1
    assert len(note.unverified) == 1


# Key strings ----------------------------------------------------------------------------


def test_every_mangling_of_a_verifier_key_is_refused() -> None:
    # As note_test.go's TestNewVerifier: every proper substring, every character + 1.
    for i in range(len(PETER_VKEY) + 1):
        for j in range(i + 1, len(PETER_VKEY) + 1):
            if (i, j) != (0, len(PETER_VKEY)):
                with pytest.raises(keys.BadKey):
                    keys.Verifier.parse(PETER_VKEY[i:j])
    for i in range(len(PETER_VKEY)):
        mangled = PETER_VKEY[:i] + chr(ord(PETER_VKEY[i]) + 1) + PETER_VKEY[i + 1 :]
        with pytest.raises(keys.BadKey):
            keys.Verifier.parse(mangled)


def test_every_mangling_of_a_signer_key_is_refused() -> None:
    for i in range(len(PETER_SKEY) + 1):
        for j in range(i + 1, len(PETER_SKEY) + 1):
            if (i, j) != (0, len(PETER_SKEY)):
                with pytest.raises(keys.BadKey):
                    keys.Signer.parse(PETER_SKEY[i:j])
    for i in range(len(PETER_SKEY)):
        mangled = PETER_SKEY[:i] + chr(ord(PETER_SKEY[i]) + 1) + PETER_SKEY[i + 1 :]
        with pytest.raises(keys.BadKey):
            keys.Signer.parse(mangled)


@pytest.mark.parametrize(
    ("vkey", "says"),
    [
        # note_test.go: a wrong-length key and an unknown algorithm, each with its id
        # recomputed so that only the named fault remains. Go's wrong-length key is not
        # canonical base64 (its last character carries stray bits), refused for that.
        (
            "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
            "not canonical base64",
        ),
        ("PeterNeumann+5bdbe860+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWAA==", "33 bytes"),
        ("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "type 0x65"),
        ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "does not match"),
        ("PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "lowercase hex"),
        ("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "spaces"),
        ("+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "empty"),
        ("PeterNeumann+c74f20a3", "'<name>+<key id hex>+<base64 key>'"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T", "not base64"),
    ],
)
def test_a_bad_verifier_key_says_what_is_wrong(vkey: str, says: str) -> None:
    with pytest.raises(keys.BadKey) as e:
        keys.Verifier.parse(vkey)
    assert says in str(e.value)


def test_a_bad_signer_key_error_never_quotes_the_secret() -> None:
    mangled = PETER_SKEY.replace("+c74f20a3+", "+c74f20a4+")
    with pytest.raises(keys.BadKey, match="does not match") as e:
        keys.Signer.parse(mangled)
    assert "AYEKFALV" not in str(e.value)
    assert "AYEKFALV" not in repr(keys.Signer.parse(PETER_SKEY))


def test_generated_keys_round_trip_as_text(signer: keys.Signer) -> None:
    assert keys.Signer.parse(signer.text()) == signer
    assert keys.Verifier.parse(signer.verifier.text()) == signer.verifier
    assert signer.verifier.text().startswith(f"{ORIGIN}+{signer.key_id:08x}+")


# Checkpoints ----------------------------------------------------------------------------


def test_checkpoint_text_is_the_tlog_checkpoint_body() -> None:
    checkpoint = Checkpoint.issued(ORIGIN, 1234, ROOT, WHEN)
    root64 = base64.b64encode(ROOT).decode()
    assert checkpoint.text() == f"{ORIGIN}\n1234\n{root64}\ntime 2026-11-23T08:00:00Z\n"
    assert checkpoint.time == WHEN


def test_checkpoint_round_trips_through_its_text() -> None:
    for checkpoint in [
        Checkpoint(ORIGIN, 0, ROOT),
        Checkpoint(ORIGIN, 2**63 - 1, ROOT),
        Checkpoint.issued(ORIGIN, 7, ROOT, WHEN),
        Checkpoint("go.sum database tree", 1, ROOT, ("time 2000-01-01T00:00:00Z", "x ü")),
    ]:
        assert Checkpoint.parse(checkpoint.text()) == checkpoint


def test_checkpoint_time_is_stated_in_utc_to_the_second() -> None:
    paris = timezone(timedelta(hours=1))
    checkpoint = Checkpoint.issued(ORIGIN, 1, ROOT, datetime(2026, 11, 23, 9, 0, 0, 999, paris))
    assert checkpoint.extensions == ("time 2026-11-23T08:00:00Z",)
    assert checkpoint.time == WHEN
    assert Checkpoint(ORIGIN, 1, ROOT).time is None
    with pytest.raises(ValueError, match="timezone-aware"):
        Checkpoint.issued(ORIGIN, 1, ROOT, datetime(2026, 11, 23))


_ROOT64 = base64.b64encode(ROOT).decode()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"{ORIGIN}\n1\n{_ROOT64}", "must end with a newline"),
        (f"{ORIGIN}\n1\n", "at least 3 lines"),
        (f"\n1\n{_ROOT64}\n", "line 1 is empty"),
        (f"{ORIGIN}\n\n{_ROOT64}\n", "line 2 is empty"),
        (f"{ORIGIN}\n1\n{_ROOT64}\n\n", "line 4 is empty"),
        (f"{ORIGIN}\n1\n{_ROOT64}\nx\n\ny\n", "line 5 is empty"),
        (f"{ORIGIN}\r\n1\n{_ROOT64}\n", "line 1: control character"),
        (f"{ORIGIN}\n1\n{_ROOT64}\ntab\there\n", "line 4: control character"),
        (f"{ORIGIN}\n0x10\n{_ROOT64}\n", "line 2 (tree size): '0x10'"),
        (f"{ORIGIN}\n-1\n{_ROOT64}\n", "line 2 (tree size)"),
        (f"{ORIGIN}\n+1\n{_ROOT64}\n", "line 2 (tree size)"),
        (f"{ORIGIN}\n007\n{_ROOT64}\n", "leading zeros"),
        (f"{ORIGIN}\n00\n{_ROOT64}\n", "leading zeros"),
        (f"{ORIGIN}\n1_000\n{_ROOT64}\n", "line 2 (tree size)"),
        (f"{ORIGIN}\n 1\n{_ROOT64}\n", "line 2 (tree size)"),
        (f"{ORIGIN}\n\u0661\n{_ROOT64}\n", "line 2 (tree size)"),  # an Arabic-Indic one
        (f"{ORIGIN}\n{2**63}\n{_ROOT64}\n", "beyond 2^63-1"),
        (f"{ORIGIN}\n1\n{_ROOT64[:-1]}\n", "line 3 (root hash)"),
        (f"{ORIGIN}\n1\n{_ROOT64[:-4]}!!!=\n", "not base64"),
        (f"{ORIGIN}\n1\n{_ROOT64[:-2]}1=\n", "not base64"),  # non-canonical trailing bits
        (f"{ORIGIN}\n1\n{_ROOT64} \n", "not base64"),
        (f"{ORIGIN}\n1\n{base64.b64encode(ROOT[:31]).decode()}\n", "32 bytes, not 31"),
        (f"{ORIGIN}\n1\n{base64.b64encode(ROOT + b'x').decode()}\n", "32 bytes, not 33"),
        (f"{ORIGIN}\n1\n{_ROOT64}\ntime yesterday\n", "line 4 (extension): 'time' must"),
        (f"{ORIGIN}\n1\n{_ROOT64}\ntime 2026-02-30T00:00:00Z\n", "not a real time"),
        (f"{ORIGIN}\n1\n{_ROOT64}\ntime 2026-11-23T08:00:00+00:00\n", "line 4 (extension)"),
        (
            f"{ORIGIN}\n1\n{_ROOT64}\ntime 2026-11-23T08:00:00Z\ntime 2026-11-23T08:00:01Z\n",
            "line 5 (extension): a second 'time' line",
        ),
    ],
)
def test_a_malformed_checkpoint_is_refused_naming_the_line(text: str, says: str) -> None:
    with pytest.raises(cp.MalformedCheckpoint) as e:
        Checkpoint.parse(text)
    assert says in str(e.value)


@pytest.mark.parametrize(
    ("origin", "size", "root", "extensions", "says"),
    [
        ("", 1, ROOT, (), "line 1 (origin): the origin must not be empty"),
        ("a\nb", 1, ROOT, (), "line 1 (origin)"),
        (ORIGIN, -1, ROOT, (), "line 2 (tree size)"),
        (ORIGIN, 2**63, ROOT, (), "line 2 (tree size)"),
        (ORIGIN, 1, ROOT[:16], (), "line 3 (root hash): a root hash is 32 bytes, not 16"),
        (ORIGIN, 1, ROOT, ("",), "line 4 (extension): extension lines must not be empty"),
        (ORIGIN, 1, ROOT, ("ok", "a\nb"), "line 5 (extension)"),
    ],
)
def test_a_checkpoint_that_could_not_be_written_cannot_be_made(
    origin: str, size: int, root: bytes, extensions: tuple[str, ...], says: str
) -> None:
    with pytest.raises(cp.MalformedCheckpoint) as e:
        Checkpoint(origin, size, root, extensions)
    assert says in str(e.value)


# Signed notes ---------------------------------------------------------------------------


def test_signed_checkpoint_opens_with_its_key(signer: keys.Signer) -> None:
    checkpoint = Checkpoint.issued(ORIGIN, 42, ROOT, WHEN)
    signed = cp.sign_checkpoint(checkpoint, signer)
    assert signed.startswith(checkpoint.text() + "\n— hazard.example/club ")
    assert cp.open_checkpoint(signed, [signer.verifier]) == checkpoint
    assert cp.open_checkpoint(signed.encode(), [signer.verifier]) == checkpoint


def test_a_checkpoint_is_signed_under_its_origin_only(signer: keys.Signer) -> None:
    with pytest.raises(ValueError, match="cannot sign for origin"):
        cp.sign_checkpoint(Checkpoint("elsewhere.example/log", 1, ROOT), signer)


def test_a_changed_checkpoint_fails_its_signature(signer: keys.Signer) -> None:
    signed = cp.sign_checkpoint(Checkpoint.issued(ORIGIN, 42, ROOT, WHEN), signer)
    for changed in [
        signed.replace("\n42\n", "\n43\n"),
        signed.replace("08:00:00Z", "08:00:01Z"),
        signed.replace(_ROOT64, base64.b64encode(hashlib.sha256(b"x").digest()).decode()),
    ]:
        with pytest.raises(cp.BadSignature, match=r"hazard.example/club\+[0-9a-f]{8} does not"):
            cp.open_checkpoint(changed, [signer.verifier])


def test_a_log_re_signed_with_another_key_of_the_same_name_is_not_verified(
    signer: keys.Signer,
) -> None:
    impostor = keys.Signer.generate(ORIGIN)
    signed = cp.sign_checkpoint(Checkpoint(ORIGIN, 1, ROOT), impostor)
    with pytest.raises(cp.UnverifiedNote, match="no known key signed this note"):
        cp.open_checkpoint(signed, [signer.verifier])


def test_a_bad_signature_by_a_known_key_refuses_the_whole_note(signer: keys.Signer) -> None:
    # note_test.go: four characters spliced into a known key's signature.
    bad_peter = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(cp.BadSignature, match=r"PeterNeumann\+c74f20a3"):
        cp.open_note(TEXT + "\n" + bad_peter, [keys.Verifier.parse(PETER_VKEY)])
    # ... even when another known key's signature verifies.
    good = cp.sign_note(TEXT, signer)
    with pytest.raises(cp.BadSignature):
        cp.open_note(good + bad_peter, [signer.verifier, keys.Verifier.parse(PETER_VKEY)])


def test_a_note_with_no_known_signature_is_unverified() -> None:
    with pytest.raises(cp.UnverifiedNote, match=r"PeterNeumann\+c74f20a3, EnochRoot\+af0cfe78"):
        cp.open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])


def test_two_verifiers_claiming_one_name_and_id_are_refused() -> None:
    peter = keys.Verifier.parse(PETER_VKEY)
    # A different key has the same id only by a 2^-32 chance; fake one that does.
    twin = _twin(peter, keys.Signer.generate("PeterNeumann").verifier)
    with pytest.raises(ValueError, match="two verifier keys"):
        cp.open_note(TEXT + "\n" + PETER_SIG, [peter, twin])
    cp.open_note(TEXT + "\n" + PETER_SIG, [peter, peter])  # the same key twice is fine


def _twin(real: keys.Verifier, other: keys.Verifier) -> keys.Verifier:
    class Twin(keys.Verifier):
        @property
        def key_id(self) -> int:
            return real.key_id

    return Twin(other.name, other.public_key)


_GOOD = TEXT + "\n" + PETER_SIG


@pytest.mark.parametrize(
    ("message", "says"),
    [
        # note_test.go's bad messages
        (TEXT, "no blank line"),
        (TEXT + "\n", "no signature lines"),
        (_GOOD[:-1], "a signed note must end with a newline"),
        ("\x01" + _GOOD, "control character"),
        (b"\xff" + _GOOD.encode(), "not valid UTF-8"),
        (
            TEXT
            + "\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvq"
            "fqdngotpRZb6KE6RyyBwJnAM=\n",
            "signature line 1: the signature 'Name x08go",  # the name ends at a space
        ),
        (_GOOD + "Unexpected line.\n", "signature line 2 does not start with an em dash"),
        # and more
        (TEXT + "\n" + PETER_SIG.replace("—", "-"), "does not start with an em dash"),
        (TEXT + "\n" + PETER_SIG.replace("—", "--"), "does not start with an em dash"),
        (TEXT + "\n" + PETER_SIG.replace("— ", "—"), "does not start with an em dash"),
        (TEXT + "\n" + PETER_SIG.replace("x08go", "x08g!"), "is not base64"),
        (TEXT + "\n" + PETER_SIG.replace("nAM=", "nAM"), "is not base64"),
        (TEXT + "\n" + PETER_SIG.replace("nAM=", "nAN="), "is not base64"),  # trailing bits
        (TEXT + "\n— PeterNeumann x08gow==\n", "at least 5 bytes"),
        (TEXT + "\n— PeterNeumann \n", "signature line 1"),
        (TEXT + "\n— Peter+Neumann x08go/ZJ\n", "signature line 1: key name"),
        (TEXT + "\n" + PETER_SIG * 101, "101 signature lines; at most 100"),
        ("\ud800" + _GOOD, "not valid UTF-8"),
    ],
)
def test_a_malformed_note_is_refused(message: str | bytes, says: str) -> None:
    with pytest.raises(cp.MalformedNote) as e:
        cp.open_note(message, [keys.Verifier.parse(PETER_VKEY)])
    assert says in str(e.value)


def test_a_note_text_may_hold_blank_lines_and_the_last_one_ends_it(
    signer: keys.Signer,
) -> None:
    text = "one\n\ntwo\n"
    assert cp.open_note(cp.sign_note(text, signer), [signer.verifier]).text == text


def test_sixteen_signatures_are_accepted(signer: keys.Signer) -> None:
    # signed-note: a verifier MUST accept at least 16 signatures.
    others = [keys.Signer.generate(f"witness.example/{i}") for i in range(15)]
    signed = cp.sign_note(TEXT, signer, *others)
    note = cp.open_note(signed, [signer.verifier])
    assert len(note.unverified) == 15


def test_sign_note_refuses_what_it_could_not_sign(signer: keys.Signer) -> None:
    with pytest.raises(cp.MalformedNote, match="must end with a newline"):
        cp.sign_note("no newline", signer)
    with pytest.raises(cp.MalformedNote, match="control character"):
        cp.sign_note("a\tb\n", signer)
    with pytest.raises(ValueError, match="at least one signer"):
        cp.sign_note(TEXT)


# An independent verifier ----------------------------------------------------------------


def test_a_signed_checkpoint_verifies_without_project_code(signer: keys.Signer) -> None:
    """From signed-note and tlog-checkpoint alone, with hashlib and cryptography."""
    vkey = signer.verifier.text()
    signed = cp.sign_checkpoint(Checkpoint.issued(ORIGIN, 9, ROOT, WHEN), signer)

    name, key_hash_hex, key64 = vkey.split("+", 2)
    key = base64.b64decode(key64)
    assert key[0] == 0x01 and len(key) == 33
    assert hashlib.sha256(name.encode() + b"\n" + key).digest()[:4].hex() == key_hash_hex

    text, _, signatures = signed.rpartition("\n\n")
    text += "\n"
    (line,) = signatures.splitlines()
    dash, signed_by, sig64 = line.split(" ")
    assert dash == "\u2014" and signed_by == name
    blob = base64.b64decode(sig64)
    assert blob[:4].hex() == key_hash_hex
    Ed25519PublicKey.from_public_bytes(key[1:]).verify(blob[4:], text.encode())

    origin, size, root64, time = text.splitlines()
    assert (origin, size, base64.b64decode(root64), time) == (
        ORIGIN,
        "9",
        ROOT,
        "time 2026-11-23T08:00:00Z",
    )


# Key files ------------------------------------------------------------------------------


def test_create_key_writes_a_0600_file_and_returns_its_verifier_key(tmp_path: Path) -> None:
    path = tmp_path / "club.key"
    old = os.umask(0)  # the mode must not depend on the caller's umask
    try:
        vkey = keys.create_key(path, ORIGIN)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    signer = keys.load_signer(path)
    assert signer.verifier.text() == vkey
    assert path.read_text() == signer.text() + "\n"
    assert keys.Verifier.parse(vkey).name == ORIGIN


def test_create_key_never_overwrites_a_file(tmp_path: Path) -> None:
    path = tmp_path / "club.key"
    keys.create_key(path, ORIGIN)
    before = path.read_bytes()
    with pytest.raises(keys.BadKey, match="already exists; a key file is never overwritten"):
        keys.create_key(path, ORIGIN)
    assert path.read_bytes() == before


def test_create_key_refuses_a_bad_name_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "club.key"
    with pytest.raises(keys.BadKey, match="no spaces"):
        keys.create_key(path, "the club")
    assert not path.exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o700 | 0o001])
def test_load_signer_refuses_a_key_file_open_to_others(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "club.key"
    keys.create_key(path, ORIGIN)
    path.chmod(mode)
    with pytest.raises(keys.BadKey, match=f"mode {mode:04o}.*chmod 600") as e:
        keys.load_signer(path)
    assert "PRIVATE" not in str(e.value)


def test_load_signer_accepts_owner_only_modes(tmp_path: Path) -> None:
    path = tmp_path / "club.key"
    keys.create_key(path, ORIGIN)
    path.chmod(0o400)
    assert keys.load_signer(path).name == ORIGIN


def test_load_signer_says_when_there_is_no_key_or_a_bad_one(tmp_path: Path) -> None:
    with pytest.raises(keys.BadKey, match="no key file at"):
        keys.load_signer(tmp_path / "missing.key")
    path = tmp_path / "bad.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW\n")
    os.close(fd)
    with pytest.raises(keys.BadKey, match="starts with 'PRIVATE\\+KEY\\+'"):
        keys.load_signer(path)
