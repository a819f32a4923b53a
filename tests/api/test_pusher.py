"""The ledger's side of witnessing, on SQLite and PostgreSQL: the pusher (ledger.pusher)
against a witness written in the test from C2SP tlog-witness (tests/api/witnesskit.py).

A write is never held by a witness: one that hangs, is down or refuses is reported in
/readyz (which stays 200), in /metrics and in the JSON log, and the writes go on; once
it is back, the pushes resume from the size it last cosigned. One process of all those
on a database pushes. Nothing here is timed: a push is waited for, never raced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger import pusher
from ledger.api import create_app
from ledger.jsonlogging import JsonFormatter
from ledger.store import db
from ledger.store.log import witnessed
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.log.keys import Signer
from ledger.store.log.policy import Policy, PolicyError
from tests.api.conftest import Api, Client
from tests.api.servekit import call, serving
from tests.api.witnesskit import AUDITOR, Witness, eventually, policy, pushing_to
from tests.signing import VERIFIER

ROOT = Path(__file__).resolve().parents[2]


def _newest(client: Client) -> int:
    return int(client.ok("get", "/log/checkpoint")["size"])


def _witness(api: Api, name: str = "w0") -> dict[str, Any]:
    ready = api.client(None).get("/readyz")
    assert ready.status_code == 200, ready.get_json()
    [found] = [w for w in ready.get_json()["witnesses"] if w["name"] == name]
    return dict(found)


def _metric(api: Api, name: str, **labels: str) -> float | None:
    text = api.client(None).get("/metrics").get_data(as_text=True)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


@contextlib.contextmanager
def _logged(name: str) -> Iterator[list[logging.LogRecord]]:
    """The records logged under `name` meanwhile (a handler of its own: the service's
    `hazard` logger does not pass its records on once JSON logging is configured)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _deposits(client: Client, n: int) -> list[float]:
    """`n` deposits to ann, each one's seconds (for the eye: nothing asserts them)."""
    took = []
    for _ in range(n):
        start = time.perf_counter()
        client.ok("post", "/players/ann/deposits", {"amount": 5})
        took.append(time.perf_counter() - start)
    return took


# -- pushed, cosigned, kept -----------------------------------------------------------------


def test_each_new_checkpoint_is_pushed_cosigned_and_kept(api: Api, tmp_path: Path) -> None:
    witness = Witness()
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        _deposits(bank, 3)
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        cosigned = eventually(lambda: _cosigned(bank, size))
        # The note served checks under the club's own policy: its quorum is met.
        rule = Policy.parse((tmp_path / "club.policy").read_text())
        verdict = rule.verify(cosigned["note"])
        assert verdict.quorum and set(verdict.cosigned) == {"w0"}
        assert cosigned["witnesses"] == [
            {"key": witness.cosigner.key.text(), "cosigned_at": verdict.cosigned["w0"]}
        ]
        # Every push went from what the witness last cosigned: no 409, no refusal.
        assert all(p.status == 200 for p in witness.pushes), witness.pushes
        assert [p.old for p in witness.pushes] == [0, *[p.size for p in witness.pushes][:-1]]
        # The cosignature is kept, then the witness's standing said, in two transactions:
        # between them /readyz shows the size cosigned while the state still waits.
        state = eventually(
            lambda: (w := _witness(club))["cosigned_size"] == size and w["state"] != "waiting" and w
        )
        assert state["state"] == "ok" and state["url"] == witness.url
        assert state["last_error"] is None
        assert _metric(club, "hazard_witness_up", witness="w0") == 1
        assert _metric(club, "hazard_witness_cosigned_size", witness="w0") == size


def _cosigned(client: Client, size: int) -> dict[str, Any] | None:
    answer = client.get("/log/cosigned")
    if answer.status_code != 200 or answer.get_json()["size"] != size:
        return None
    return dict(answer.get_json())


def test_a_witness_that_hangs_holds_no_write(api: Api, tmp_path: Path) -> None:
    """A witness that holds each push: the writes are answered while it still holds
    one, and it shows as down once the push gives up. The latency of writes with and
    without it is printed, for the eye (-s): no timing is asserted."""
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    alone = _deposits(bank, 20)
    witness = Witness()
    witness.hang.set()
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players/ann/deposits", {"amount": 5})
        eventually(lambda: witness.holding > 0)
        held = _deposits(bank, 20)
        assert witness.holding > 0 and witness.size == 0  # answered while it holds a push
        down = eventually(lambda: (w := _witness(club))["state"] == "down" and w)
        assert "timed out" in down["last_error"], down
        print(f"\nwrite p50, no witness: {sorted(alone)[10] * 1000:.1f} ms; "
              f"with a hanging one: {sorted(held)[10] * 1000:.1f} ms")  # fmt: skip
        witness.hang.clear()
        witness.released.set()
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        eventually(lambda: _witness(club)["state"] == "ok")


def test_a_witness_that_is_down_is_reported_and_resumed_where_it_was(
    api: Api, tmp_path: Path
) -> None:
    witness = Witness()
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        first = _newest(bank)
        eventually(lambda: witness.size == first)
        witness.stop()
        failures = _metric(club, "hazard_witness_failures_total", witness="w0", state="down") or 0
        with _logged("hazard.pusher") as records:
            _deposits(bank, 3)  # the writes go on
            down = eventually(lambda: (w := _witness(club))["state"] == "down" and w)
            eventually(lambda: _metric(club, "hazard_witness_up", witness="w0") == 0)
        assert down["cosigned_size"] == first and down["last_error"].startswith("no answer")
        downs = _metric(club, "hazard_witness_failures_total", witness="w0", state="down") or 0
        assert downs > failures
        # The JSON log says so, with the witness's name, URL and state as fields.
        said = [json.loads(JsonFormatter().format(r)) for r in records if r.levelname == "WARNING"]
        assert said and said[-1]["witness"] == "w0" and said[-1]["state"] == "down", said
        assert said[-1]["url"] == witness.url and said[-1]["message"].startswith(
            "witness w0 is down"
        )
        pushed = len(witness.pushes)
        witness.start()  # back, on the same port, with the state it kept
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        back = eventually(lambda: (w := _witness(club))["state"] == "ok" and w)
        assert back["cosigned_size"] == size and back["last_error"] is None
        # Resumed from what it last cosigned: one push, from `first`, with its proof.
        assert [(p.old, p.size, p.status) for p in witness.pushes[pushed:]] == [(first, size, 200)]


def test_a_connection_the_witness_closed_while_idle_is_no_failure(api: Api, tmp_path: Path) -> None:
    """Servers close kept-alive connections that sit idle: the push is sent again on a
    new one, and the witness never shows as down."""
    witness = Witness()
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        with _logged("hazard.pusher") as records:
            for _ in range(3):
                eventually(lambda: witness.size == _newest(bank))
                witness.drop()
                bank.ok("post", "/players/ann/deposits", {"amount": 5})
            size = _newest(bank)
            eventually(lambda: witness.size == size)
        assert [r.getMessage() for r in records if r.levelname == "WARNING"] == []
        # The witness answers before the pusher says so: its standing follows.
        eventually(lambda: _witness(club)["state"] == "ok")


@pytest.mark.parametrize("status", [403, 422])
def test_a_witness_that_refuses_is_reported(api: Api, tmp_path: Path, status: int) -> None:
    witness = Witness()
    witness.refuse = status
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        refused = eventually(lambda: (w := _witness(club))["state"] == "refused" and w)
        assert f"answered {status}" in refused["last_error"] and refused["cosigned_size"] == 0
        eventually(lambda: _metric(club, "hazard_witness_up", witness="w0") == 0)
        assert _metric(club, "hazard_witness_failures_total", witness="w0", state="refused")
        _deposits(bank, 2)  # the writes go on
        assert club.client().get("/log/cosigned").status_code == 404


def test_a_witness_that_holds_another_size_is_pushed_again_from_it(
    api: Api, tmp_path: Path
) -> None:
    """tlog-witness's 409: the witness cosigned a size the ledger has no cosignature of
    (an answer lost on the way): the push is made once more, from that size."""
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    early = bank.ok("get", "/log/checkpoint")
    witness = Witness()
    seen = open_checkpoint(early["checkpoint"], [VERIFIER])
    witness.size, witness.root = seen.size, seen.root
    _deposits(bank, 2)
    with pushing_to(api, tmp_path, witness) as club:
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        assert [(p.old, p.status) for p in witness.pushes[:2]] == [(0, 409), (early["size"], 200)]
        eventually(lambda: _witness(club)["cosigned_size"] == size)


def test_a_witness_ahead_of_the_log_or_that_answers_409_twice_is_refused(
    api: Api, tmp_path: Path
) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    witness = Witness()
    witness.size = 1000  # it cosigned a tree this log never had
    with pushing_to(api, tmp_path, witness) as club:
        refused = eventually(lambda: (w := _witness(club))["state"] == "refused" and w)
        assert "size 1000, larger than the log's newest" in refused["last_error"]
        assert all(p.status == 409 for p in witness.pushes)


@pytest.mark.parametrize(
    ("lie", "said"), [("forged", "does not verify"), ("stranger", "no cosignature by its key")]
)
def test_a_cosignature_that_does_not_verify_is_refused_and_not_kept(
    api: Api, tmp_path: Path, lie: str, said: str
) -> None:
    witness = Witness()
    witness.lie = lie
    with pushing_to(api, tmp_path, witness) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        refused = eventually(lambda: (w := _witness(club))["state"] == "refused" and w)
        assert said in refused["last_error"]
        with api.book.store.engine.connect() as conn:
            assert witnessed.newest(conn) is None


def test_two_witnesses_each_in_their_own_time(api: Api, tmp_path: Path) -> None:
    """One witness down holds up no push to the other."""
    up, away = Witness(), Witness(AUDITOR)
    away.hang.set()
    with pushing_to(api, tmp_path, up, away) as club:
        bank = club.client()
        bank.ok("post", "/players", {"name": "ann"})
        _deposits(bank, 2)
        size = _newest(bank)
        eventually(lambda: up.size == size)
        eventually(lambda: away.holding > 0)
        assert away.size == 0
        assert eventually(lambda: _witness(club, "w0")["cosigned_size"] == size)


# -- one pusher -------------------------------------------------------------------------------

HOLD = """
import sys
import sqlalchemy as sa
from ledger.store.log.pushes import Leadership
engine = sa.create_engine(sys.argv[1])
lead = Leadership(engine)
print("took" if lead.take() else "not", flush=True)
sys.stdin.readline()  # held until the test closes stdin
print("still" if lead.take() else "lost", flush=True)
"""


def _holder(url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_one_process_pushes_and_another_takes_over_when_it_ends(database_url: str) -> None:
    engine = db.make_engine(database_url)
    db.upgrade(engine)
    engine.dispose()
    with _holding(database_url) as (first, said):
        assert said == "took"
        with _holding(database_url) as (_, said):
            assert said == "not"
        first.kill()  # however it ends, the lock goes with it
        first.wait()
        with _holding(database_url) as (third, said):
            assert said == "took"
            assert third.communicate("\n")[0].strip() == "still"


@contextlib.contextmanager
def _holding(url: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A process that asks for the pusher's lock, and what it says: `took` or `not`."""
    proc = _holder(url)
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline().strip()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_two_apps_on_one_database_push_once(api: Api, tmp_path: Path) -> None:
    """Two apps of one process, as two workers: one leads, the other waits."""
    witness = Witness()
    with pushing_to(api, tmp_path, witness) as one, pushing_to(api, tmp_path, witness) as two:
        leads = [a.app.extensions["hazard.pusher"] for a in (one, two)]
        eventually(lambda: any(p.leading for p in leads))
        assert sum(p.leading for p in leads) == 1
        bank = one.client()
        bank.ok("post", "/players", {"name": "ann"})
        size = _newest(bank)
        eventually(lambda: witness.size == size)
        assert all(p.status == 200 for p in witness.pushes), witness.pushes


def test_hazard_serve_pushes_from_one_worker_and_every_worker_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `hazard serve` and its two workers: the checkpoints are pushed, every
    worker's /readyz lists the witness as the pushing one left it, and /metrics (summed
    over the workers) has its gauges."""
    witness = Witness()
    witness.start()
    try:
        monkeypatch.setenv("HAZARD_POLICY", str(policy(tmp_path / "club.policy", witness)))
        monkeypatch.setenv("HAZARD_WITNESS_INTERVAL", "0.1")
        with serving(tmp_path, "--workers", "2") as served:
            banner = served.banner()
            port = re.search(r"serving at http://127\.0\.0\.1:(\d+)", banner)
            setter = re.search(r"^\s+(hz_\S+)$", banner, re.M)
            assert port is not None and setter is not None, banner
            base, token = f"http://127.0.0.1:{port[1]}", setter[1]
            status, _, body = call(base + "/players", token, {"name": "ann"})
            assert status == 201, body
            size = open_checkpoint(json.loads(body)["receipt"]["checkpoint"], [VERIFIER]).size
            eventually(lambda: witness.size == size)

            def ready() -> list[dict[str, Any]]:
                status, _, body = call(base + "/readyz")
                assert status == 200, body
                return list(json.loads(body)["witnesses"])

            # Each request may land on either worker: all of them say the same.
            for _ in range(10):
                [found] = eventually(lambda: (w := ready()) and w[0]["state"] == "ok" and w)
                assert found["cosigned_size"] == size and found["url"] == witness.url
            # One worker pushed: two would have crossed, and one been told 409. (The
            # start's own write, the club's settings and first token in the log of
            # significant events, may be pushed first: each push goes on from the last.)
            pushes = [(p.old, p.size, p.status) for p in witness.pushes]
            assert all(status == 200 for *_, status in pushes) and pushes[-1][1] == size, pushes
            assert [old for old, *_ in pushes] == [0, *(new for _, new, _ in pushes[:-1])]
            metrics = call(base + "/metrics")[2].decode()
            assert 'hazard_witness_up{witness="w0"} 1.0' in metrics, metrics
            assert f'hazard_witness_cosigned_size{{witness="w0"}} {float(size)}' in metrics
    finally:
        witness.stop()


# -- configuration ------------------------------------------------------------------------------


def test_a_policy_whose_log_is_another_key_is_refused(api: Api, tmp_path: Path) -> None:
    other = Signer.generate("other.example/log").verifier
    path = tmp_path / "club.policy"
    path.write_text(f"log {other.text()}\nquorum none\n")
    with pytest.raises(PolicyError, match="not this service's key") as refused:
        create_app(book=api.book, TESTING=True, HAZARD_POLICY=str(path))
    assert VERIFIER.text() in str(refused.value) and other.text() in str(refused.value)
    path.write_text("log nonsense\n")
    with pytest.raises(PolicyError, match="line 1"):
        create_app(book=api.book, TESTING=True, HAZARD_POLICY=str(path))


def test_a_policy_without_witnesses_to_push_to_lists_none(api: Api, tmp_path: Path) -> None:
    app = create_app(
        book=api.book, TESTING=True, HAZARD_POLICY=str(policy(tmp_path / "p", quorum="none"))
    )
    assert app.extensions["hazard.pusher"] is None
    assert app.test_client().get("/readyz").get_json() == {"status": "ready", "witnesses": []}


@pytest.mark.parametrize("text", ["0", "-1", "x", "3601", "nan"])
def test_a_bad_interval_is_refused(text: str) -> None:
    with pytest.raises(db.BadSetting, match="HAZARD_WITNESS_INTERVAL"):
        pusher.interval_setting(text)


def test_hazard_serve_refuses_a_policy_that_is_not_the_logs(tmp_path: Path) -> None:
    other = Signer.generate("other.example/log").verifier
    path = tmp_path / "club.policy"
    path.write_text(f"log {other.text()}\nquorum none\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HAZARD_POLICY": str(path),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}"}  # fmt: skip
    ran = subprocess.run(
        [sys.executable, "-m", "ledger", "serve", "--port", "0"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    assert "not this service's key" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr
