"""The ledger's pusher (ledger.pusher), on SQLite and PostgreSQL, against a witness
written from the C2SP texts alone (tests/api/independentwitnesskit.py: the standard
library and `cryptography`, nothing of the project). The witness verifies the log's
signature and each consistency proof with its own code and cosigns; the ledger keeps
what it answers, which the witness's own code and the ledger's reader
(ledger.store.log.policy.Policy) both check; its 409s are followed, and a checkpoint
it refuses shows in /readyz. Nothing is timed: a push is waited for, never raced.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ledger.api import create_app
from ledger.store.log.policy import Policy
from tests.api import independentwitnesskit
from tests.api.conftest import Api, Client
from tests.api.independentwitnesskit import ED25519, IndependentWitness, Key
from tests.api.witnesskit import INTERVAL, TIMEOUT, eventually


def _log_key(api: Api) -> str:
    return str(api.client(None).ok("get", "/log/key")["key"])


def _policy(api: Api, witness: IndependentWitness) -> str:
    # c2sp.org/tlog-policy: the log, the witness by its vkey and URL, the quorum
    return (f"log {_log_key(api)}\nwitness indie {witness.key.text()} {witness.url}\n"
            "quorum indie\n")  # fmt: skip


@contextlib.contextmanager
def _pushing(api: Api, tmp_path: Path, witness: IndependentWitness) -> Iterator[Api]:
    """An app on `api`'s database whose policy names `witness`, started here."""
    witness.start()
    path = tmp_path / "club.policy"
    path.write_text(_policy(api, witness))
    app = create_app(book=api.book, TESTING=True, HAZARD_POLICY=str(path),
                     HAZARD_WITNESS_INTERVAL=INTERVAL, WITNESS_TIMEOUT=TIMEOUT)  # fmt: skip
    try:
        yield Api(app)
    finally:
        app.extensions["hazard.pusher"].stop()
        witness.stop()


def _newest(client: Client) -> int:
    return int(client.ok("get", "/log/checkpoint")["size"])


def _note(client: Client, size: int) -> str:
    return str(client.ok("get", f"/log/checkpoints/{size}")["checkpoint"])


def _deposit(bank: Client, witness: IndependentWitness) -> int:
    """A write, and the push of its checkpoint waited for; the new size."""
    bank.ok("post", "/players/ann/deposits", {"amount": 5})
    size = _newest(bank)
    eventually(lambda: witness.size == size)
    return size


def _readyz(club: Api) -> dict[str, Any]:
    ready = club.client(None).get("/readyz")
    assert ready.status_code == 200, ready.get_json()  # witnesses never make it unready
    [found] = ready.get_json()["witnesses"]
    return dict(found)


def test_the_witness_is_written_with_nothing_of_the_project() -> None:
    tree = ast.parse(Path(independentwitnesskit.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    tops = {name.split(".")[0] for name in imported}
    assert tops - set(sys.stdlib_module_names) == {"cryptography"}, tops


def test_the_ledger_keeps_what_an_independent_witness_cosigns(api: Api, tmp_path: Path) -> None:
    witness = IndependentWitness(_log_key(api))
    with _pushing(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        sizes = [_deposit(bank, witness) for _ in range(4)]
        # Every push went from the size it last cosigned; past the first, each carried a
        # consistency proof that the witness's own code verified.
        assert all(p.status == 200 for p in witness.pushes), witness.pushes
        olds = [p.old for p in witness.pushes]
        assert olds == [0, *[p.size for p in witness.pushes][:-1]]
        assert all(p.proof > 0 for p in witness.pushes if 0 < p.old < p.size), witness.pushes
        assert sum(p.proof > 0 for p in witness.pushes) >= 3
        # The ledger kept each cosignature it answered with, on the checkpoint it signed:
        # the witness finds its own line in GET /log/cosigned's note, and it verifies.
        reader = club.client(None)
        newest = eventually(lambda: (c := reader.get("/log/cosigned").get_json())["size"] ==
                            sizes[-1] and c)  # fmt: skip
        when = witness.cosigned_at(newest["note"])
        assert witness.said[-1] in newest["note"]
        for pushed in witness.pushes:
            kept = reader.ok("get", "/log/cosigned", query_string={"size": pushed.size})
            witness.cosigned_at(kept["note"])
        # ...and so does the ledger's reader, under the club's policy: the quorum is met.
        verdict = Policy.parse((tmp_path / "club.policy").read_text()).verify(newest["note"])
        assert verdict.quorum and dict(verdict.cosigned) == {"indie": when}
        assert newest["witnesses"] == [{"key": witness.key.text(), "cosigned_at": when}]
        state = eventually(lambda: (w := _readyz(club))["cosigned_size"] == sizes[-1] and w)
        assert state["state"] == "ok" and state["last_error"] is None


def test_a_witness_that_holds_a_size_the_ledger_has_no_word_of_is_pushed_again_from_it(
    api: Api, tmp_path: Path
) -> None:
    """tlog-witness's 409, ahead of the ledger: the witness cosigned a checkpoint whose
    answer never came back. The push is made once more from its size, with the proof."""
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    bank.ok("post", "/players/ann/deposits", {"amount": 5})
    held = _newest(bank)
    witness = IndependentWitness(_log_key(api))
    witness.hold(_note(bank, held))
    bank.ok("post", "/players/ann/deposits", {"amount": 5})
    with _pushing(api, tmp_path, witness) as club:
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        assert [(p.old, p.status) for p in witness.pushes] == [(0, 409), (held, 200)]
        assert witness.pushes[-1].proof > 0
        cosigned = eventually(lambda: (c := club.client(None).get("/log/cosigned")).status_code
                              == 200 and c.get_json())  # fmt: skip
        assert cosigned["size"] == size and witness.cosigned_at(cosigned["note"])


def test_a_witness_restored_from_an_older_state_is_pushed_again_from_it(
    api: Api, tmp_path: Path
) -> None:
    """tlog-witness's 409, behind the ledger: the witness lost its newest state (a
    backup restored) and holds an older size than the ledger knows it cosigned."""
    witness = IndependentWitness(_log_key(api))
    with _pushing(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        older = _newest(bank)
        eventually(lambda: witness.size == older)
        latest = _deposit(bank, witness)
        latest = _deposit(bank, witness)
        eventually(lambda: _readyz(club)["cosigned_size"] == latest)
        witness.hold(_note(bank, older))
        pushed = len(witness.pushes)
        size = _deposit(bank, witness)
        assert [(p.old, p.size, p.status) for p in witness.pushes[pushed:]] == [
            (latest, size, 409), (older, size, 200)
        ]  # fmt: skip
        assert witness.pushes[-1].proof > 0
        assert eventually(lambda: _readyz(club)["cosigned_size"] == size)
        assert witness.cosigned_at(club.client(None).ok("get", "/log/cosigned")["note"])


def _another_key(origin: str) -> str:
    public = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return Key(origin, ED25519, public).text()


@pytest.mark.parametrize(
    ("refusal", "said"),
    [("another log key", "answered 403"), ("a size past the log's", "larger than the log's")],
)
def test_a_checkpoint_the_witness_refuses_shows_in_readyz(
    api: Api, tmp_path: Path, refusal: str, said: str
) -> None:
    """A witness that trusts another key under the log's name answers 403; one that holds
    a size the log never reached answers 409 with it, which the ledger refuses to
    follow. Either way /readyz says `refused`, nothing is kept, and the writes go on."""
    origin = api.client(None).ok("get", "/log/key")["origin"]
    witness = IndependentWitness(_another_key(origin) if refusal == "another log key"
                                 else _log_key(api))  # fmt: skip
    if refusal == "a size past the log's":
        witness.size = 1000
    with _pushing(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        refused = eventually(lambda: (w := _readyz(club))["state"] == "refused" and w)
        assert said in refused["last_error"] and refused["cosigned_size"] == 0
        expected = 403 if refusal == "another log key" else 409
        assert witness.pushes and all(p.status == expected for p in witness.pushes)
        assert witness.said == [] and witness.size == (0 if expected == 403 else 1000)
        bank.ok("post", "/players/ann/deposits", {"amount": 5})  # the writes go on
        assert club.client(None).get("/log/cosigned").status_code == 404


def test_the_witness_refuses_what_the_specs_say_it_must(sqlite_api: Api) -> None:
    """Its checks have teeth: the ledger's own proof and checkpoint, spoiled one way at
    a time, are each refused with tlog-witness's status, and the state stays put."""
    bank = sqlite_api.client()
    bank.ok("post", "/players", {"name": "ann"})
    old = _newest(bank)
    for _ in range(3):
        bank.ok("post", "/players/ann/deposits", {"amount": 5})
    new = bank.ok("get", "/log/proofs/consistency", query_string={"from": old})
    size, proof = new["to"], [bytes.fromhex(h) for h in new["proof"]]
    note = _note(bank, size)

    def body(old: int, hashes: list[bytes], note: str = note) -> bytes:
        lines = "".join(base64.b64encode(h).decode() + "\n" for h in hashes)
        return f"old {old}\n{lines}\n{note}".encode()

    witness = IndependentWitness(_log_key(sqlite_api))
    witness.hold(_note(bank, old))
    spoiled = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
    text, _, signature = note.rpartition(" ")
    blob = base64.b64decode(signature)
    forged = f"{text} {base64.b64encode(blob[:-1] + bytes([blob[-1] ^ 1])).decode()}\n"
    assert witness.add_checkpoint(body(old, spoiled))[0] == 422  # a proof that does not verify
    assert witness.add_checkpoint(body(old, proof, forged))[0] == 403  # the log's, spoiled
    assert witness.add_checkpoint(body(size + 1, proof))[0] == 400  # old past the size
    assert witness.add_checkpoint(body(old, proof)[:-40])[0] in (400, 403)  # cut short
    stranger = IndependentWitness(_another_key("other.example/log"))
    assert stranger.add_checkpoint(body(0, []))[0] == 404  # a log it does not follow
    fresh = IndependentWitness(_log_key(sqlite_api))
    assert fresh.add_checkpoint(body(0, proof))[0] == 422  # a proof from the empty tree
    assert witness.size == old and fresh.size == 0
    assert witness.add_checkpoint(body(old, proof))[0] == 200
    assert witness.add_checkpoint(body(old, proof)) == (409, "text/x.tlog.size", f"{size}\n")
