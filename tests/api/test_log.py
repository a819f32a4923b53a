"""The signed log over HTTP, on SQLite and PostgreSQL: every write's receipt, the key,
checkpoints, inclusion and consistency proofs (checked here with the project's own
RFC 9162 checks; test_independent_verifier.py checks them with none of its code), what
each refuses, and who may have which: anyone, without a token, all but the events;
an inclusion proof's event, those who may see it (test_public_log.py: cosignatures,
tlog-proofs and gossip)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.store.log import merkle
from ledger.store.log.checkpoint import open_checkpoint
from ledger.store.log.heads import SEALS
from ledger.store.schema import checkpoints
from ledger.web.tokens import holder, revoke
from tests.api import rolekit as roles
from tests.api.conftest import Api, Client
from tests.api.readkit import play, problem
from tests.signing import ORIGIN, VERIFIER


def _receipts(bank: Client) -> list[dict[str, Any]]:
    """A few writes of one and of several events, and their receipts."""
    found = []
    for name in ("ann", "bob"):
        found.append(bank.ok("post", "/players", {"name": name})["receipt"])
        found.append(bank.ok("post", f"/players/{name}/deposits", {"amount": 500})["receipt"])
    found.append(bank.ok("post", "/tables", {"id": "t1"})["receipt"])
    for name in ("ann", "bob"):
        found.append(bank.ok("post", "/tables/t1/seats", {"player": name})["receipt"])
    for name, die in (("ann", 2), ("bob", 5)):  # the second chooses the caster too
        found.append(bank.ok("post", "/tables/t1/casts", {"player": name, "die": die})["receipt"])
    assert len(found[-1]["positions"]) > 1  # so some sizes have no checkpoint
    return found


def _size(receipt: dict[str, Any]) -> int:
    return open_checkpoint(receipt["checkpoint"], [VERIFIER]).size


def _seal_at(bank: Client, position: int) -> bool:
    """Whether the event at `position` is a write's seal."""
    query = {"after": position - 1, "limit": 1}
    (event,) = bank.ok("get", "/events", query_string=query)["items"]
    return (event["stream"], event["type"], event["actor"]) == (SEALS, "LogSealed", "ledger")


# -- receipts -------------------------------------------------------------------------


def test_every_write_answers_with_its_receipt(api: Api) -> None:
    """Each write operation (the role matrix's list), by the setter: the receipt names
    the positions of the events it answers with, and its checkpoint is signed and ends
    at the seal right after the last of them."""
    bank = roles.club(api)
    for op in roles.OPS:
        if op.method == "get" or op.rule is not None:
            continue
        context = roles.prepare(bank, op.setup)
        response = roles.attempt(bank, op, context)
        assert response.status_code == op.expect, (op.name, response.get_json())
        body = response.get_json()
        positions = [event["position"] for event in body["events"]]
        assert positions, op.name
        assert body["receipt"]["positions"] == positions, op.name
        checkpoint = open_checkpoint(body["receipt"]["checkpoint"], [VERIFIER])
        assert checkpoint.size == positions[-1] + 1, op.name
        assert _seal_at(bank, checkpoint.size), op.name
        stored = bank.ok("get", f"/log/checkpoints/{checkpoint.size}")
        assert stored["checkpoint"] == body["receipt"]["checkpoint"], op.name


def test_a_repeated_write_hands_back_the_same_receipt(api: Api) -> None:
    bank = api.client()
    bank.ok("post", "/players", {"name": "ann"})
    key = {"Idempotency-Key": "dep-1"}
    first = bank.ok("post", "/players/ann/deposits", {"amount": 5}, headers=key)
    again = bank.ok("post", "/players/ann/deposits", {"amount": 5}, headers=key)
    assert again["receipt"] == first["receipt"]
    assert bank.ok("get", "/log/checkpoint")["size"] == _size(first["receipt"])


# -- the key and checkpoints ----------------------------------------------------------


def test_the_key_is_the_one_that_signs(api: Api) -> None:
    key = api.client("auditor", "audrey").ok("get", "/log/key")
    assert key == {"origin": ORIGIN, "key": VERIFIER.text()}


def test_checkpoints_are_the_receipts_as_signed(api: Api) -> None:
    bank = api.client()
    receipts = _receipts(bank)
    latest = bank.ok("get", "/log/checkpoint")
    assert latest["checkpoint"] == receipts[-1]["checkpoint"]
    for receipt in receipts:
        size = _size(receipt)
        stored = bank.ok("get", f"/log/checkpoints/{size}")
        opened = open_checkpoint(stored["checkpoint"], [VERIFIER])
        assert stored["checkpoint"] == receipt["checkpoint"]
        assert (stored["size"], stored["root"]) == (size, opened.root.hex())
        assert stored["issued_at"].startswith(opened.time.strftime("%Y-%m-%dT%H:%M:%S"))


def test_no_checkpoint_is_a_404_that_says_why(api: Api) -> None:
    bank = api.client()
    empty = problem(bank.get("/log/checkpoint"), 404)
    assert empty["type"] == "urn:hazard:not-found"
    assert "no checkpoint yet" in empty["detail"]
    receipts = _receipts(bank)
    sizes = [_size(r) for r in receipts]
    missing = next(n for n in range(1, sizes[-1]) if n not in sizes)
    for size in (0, missing, 10**12, 2**63, 10**30):  # past a BIGINT: no such size, not a 500
        body = problem(bank.get(f"/log/checkpoints/{size}"), 404)
        assert body["detail"].startswith(f"no checkpoint of size {size}:"), body
    assert problem(bank.get("/log/checkpoints/x"), 404)["type"] == "urn:hazard:not-found"


# -- inclusion proofs -----------------------------------------------------------------


def _check_inclusion(body: dict[str, Any]) -> None:
    """The proof, checked with the project's RFC 9162 check against the signed root."""
    checkpoint = open_checkpoint(body["checkpoint"]["checkpoint"], [VERIFIER])
    assert body["tree_size"] == checkpoint.size == body["checkpoint"]["size"]
    assert body["leaf_index"] == body["position"] - 1
    record = body["record"].encode()
    leaf = hashlib.sha256(b"\x00" + record).digest()
    assert body["leaf_hash"] == leaf.hex()
    proof = [bytes.fromhex(h) for h in body["proof"]]
    merkle.check_record(proof, checkpoint.size, checkpoint.root, body["leaf_index"], leaf)
    # The record is the event as stored, in canonical form.
    event = {k: v for k, v in body["event"].items() if k not in ("prev_hash", "hash")}
    assert json.loads(record) == event
    canonical = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical.encode() == record


def _check_hashes(body: dict[str, Any]) -> None:
    """The proof without its event: the leaf hash to the signed root."""
    checkpoint = open_checkpoint(body["checkpoint"]["checkpoint"], [VERIFIER])
    proof = [bytes.fromhex(h) for h in body["proof"]]
    leaf = bytes.fromhex(body["leaf_hash"])
    merkle.check_record(proof, checkpoint.size, checkpoint.root, body["leaf_index"], leaf)


def test_an_inclusion_proof_of_every_event_in_every_checkpoint(api: Api) -> None:
    bank = api.client()
    receipts = _receipts(bank)
    sizes = [_size(r) for r in receipts]
    for size in sizes:
        for position in range(1, size + 1):
            query = {"position": position, "size": size}
            body = bank.ok("get", "/log/proofs/inclusion", query_string=query)
            assert body["position"] == position
            _check_inclusion(body)
    newest = bank.ok("get", "/log/proofs/inclusion", query_string={"position": 1})
    assert newest["tree_size"] == sizes[-1]
    _check_inclusion(newest)
    events = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    assert newest["event"] == events[0]


def test_an_inclusion_proof_refuses_what_the_log_does_not_hold(api: Api) -> None:
    bank = api.client()
    receipts = _receipts(bank)
    first, last = _size(receipts[0]), _size(receipts[-1])
    beyond = problem(
        bank.get("/log/proofs/inclusion", query_string={"position": last, "size": first}), 422
    )
    assert beyond["type"] == "urn:hazard:validation"
    assert f"position {last} is not in the tree of size {first}" in beyond["errors"]["position"][0]
    past = problem(bank.get("/log/proofs/inclusion", query_string={"position": last + 1}), 404)
    assert past["detail"] == f"there is no event at position {last + 1}"
    unknown = problem(
        bank.get("/log/proofs/inclusion", query_string={"position": 1, "size": last + 5}), 404
    )
    assert unknown["detail"].startswith(f"no checkpoint of size {last + 5}:")
    for query in ({}, {"position": 0}, {"position": "x"}, {"position": 1, "size": 0},
                  {"position": "\uff11"}, {"position": 1, "nope": 1}):  # fmt: skip
        body = problem(bank.get("/log/proofs/inclusion", query_string=query), 422)
        assert body["type"] == "urn:hazard:validation", (query, body)


# -- consistency proofs ---------------------------------------------------------------


def test_consistency_proofs_between_every_pair_of_checkpoints(api: Api) -> None:
    bank = api.client()
    sizes = [_size(r) for r in _receipts(bank)]
    for old in sizes:
        for new in sizes:
            if old > new:
                continue
            body = bank.ok("get", "/log/proofs/consistency", query_string={"from": old, "to": new})
            assert (body["from"], body["to"]) == (old, new)
            then = open_checkpoint(body["old"]["checkpoint"], [VERIFIER])
            now = open_checkpoint(body["new"]["checkpoint"], [VERIFIER])
            assert (then.size, now.size) == (old, new)
            proof = [bytes.fromhex(h) for h in body["proof"]]
            merkle.check_tree(proof, new, now.root, old, then.root)
            assert (proof == []) == (old == new)
    latest = bank.ok("get", "/log/proofs/consistency", query_string={"from": sizes[0]})
    assert latest["to"] == sizes[-1]
    assert latest["new"] == bank.ok("get", "/log/checkpoint")


def test_a_consistency_proof_refuses_what_the_log_does_not_hold(api: Api) -> None:
    bank = api.client()
    sizes = [_size(r) for r in _receipts(bank)]
    backwards = problem(
        bank.get("/log/proofs/consistency", query_string={"from": sizes[-1], "to": sizes[0]}),
        422,
    )
    assert backwards["type"] == "urn:hazard:validation"
    assert "`from` must be at most `to`" in backwards["errors"]["from"][0]
    missing = next(n for n in range(1, sizes[-1]) if n not in sizes)
    for query in ({"from": missing}, {"from": sizes[0], "to": missing}):
        body = problem(bank.get("/log/proofs/consistency", query_string=query), 404)
        assert body["detail"].startswith(f"no checkpoint of size {missing}:"), body
    for query in ({}, {"from": 0}, {"from": "a"}, {"from": 1, "to": -1}):
        body = problem(bank.get("/log/proofs/consistency", query_string=query), 422)
        assert body["type"] == "urn:hazard:validation", (query, body)


def test_a_checkpoint_rewritten_in_the_store_is_not_served_as_signed(api: Api) -> None:
    """The checkpoints table refuses changes, so what is served is what was signed."""
    bank = api.client()
    size = _size(_receipts(bank)[0])
    with pytest.raises(sa.exc.DBAPIError), api.book.store.engine.begin() as conn:
        conn.execute(sa.update(checkpoints).where(checkpoints.c.size == size).values(root="0" * 64))
    served = bank.ok("get", f"/log/checkpoints/{size}")
    assert open_checkpoint(served["checkpoint"], [VERIFIER]).root.hex() == served["root"]


# -- who may have which -----------------------------------------------------------------

PUBLIC = ["/log/key", "/log/checkpoint", "/log/checkpoints/{size}",
          "/log/proofs/consistency?from={size}", "/log/cosigned?size={size}",
          "/log/gossip"]  # fmt: skip
"""Anyone may have these, without a token: they reveal no event."""


def test_every_role_and_anyone_may_have_the_key_checkpoints_and_consistency_proofs(
    api: Api,
) -> None:
    bank = api.client()
    size = _size(_receipts(bank)[0])
    clients = [api.client(role, f"{role}-1") for role in ("setter", "croupier", "auditor")]
    clients.append(api.client("player", "ann"))
    dead = api.client("player", "bob")
    revoke(api.book.store.engine, holder(api.book.store.engine, dead.token or "").id)
    for path in PUBLIC:
        answers = [client.ok("get", path.format(size=size)) for client in clients]
        anonymous = api.client(None).ok("get", path.format(size=size))
        assert all(answer == anonymous for answer in answers), path
        # A token sent is still read: a dead one is refused, as everywhere.
        refused = problem(dead.get(path.format(size=size)), 401)
        assert refused["type"] == "urn:hazard:unauthenticated"


def _position(events: list[dict[str, Any]], type_: str, **payload: Any) -> int:
    return next(
        e["position"]
        for e in events
        if e["type"] == type_ and all(e["payload"].get(k) == v for k, v in payload.items())
    )


def _proof(client: Client, position: int) -> Any:
    return client.get("/log/proofs/inclusion", query_string={"position": position})


def test_inclusion_proofs_go_to_those_whose_events_they_are(api: Api) -> None:
    bank = play(api)
    croupier = api.client("croupier", "dealer")
    croupier.ok("post", "/players", {"name": "dan"})
    events = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    stream = {e["position"]: e["stream"] for e in events}
    opened = {
        e["payload"]["account"]: e["position"] for e in events if e["type"] == "AccountOpened"
    }
    # Bob lost bet b8 at t1: its settlement names ann the winner and posts nothing of his.
    b8 = _position(events, "BetSettled", bet_id="b8")
    assert stream[b8] == "table:t1"
    settled = bank.ok("get", "/settlements", query_string={"bet": "b8", "table": "t1"})["items"]
    assert {t["target"] for t in settled[0]["transfers"]} == {"player:ann"}
    seen = {
        # position: who may have its proof, besides the setter and auditors
        opened["player:ann"]: {"ann"},  # ann's account stream
        _position(events, "Deposited", account="player:bob"): {"bob"},
        _position(events, "TableOpened"): set(),  # names no one
        _position(events, "PlayerSeated", player="ann"): {"ann"},  # names her
        _position(events, "StakeLaid", bettor="bob"): {"bob"},
        b8: {"ann", "bob"},  # bob was party to the bet he lost
        opened["player:dan"]: {"dan", "croupier"},  # the croupier recorded it
    }
    auditor = api.client("auditor", "a")
    for position, allowed in seen.items():
        for client in (bank, auditor):
            _check_inclusion(client.ok("get", "/log/proofs/inclusion",
                                       query_string={"position": position}))  # fmt: skip
        hashes = api.client(None).ok("get", "/log/proofs/inclusion",
                                     query_string={"position": position})  # fmt: skip
        assert "event" not in hashes and "record" not in hashes
        _check_hashes(hashes)
        for name in ("ann", "bob", "cat", "dan", "croupier"):
            client = croupier if name == "croupier" else api.client("player", name)
            response = _proof(client, position)
            assert response.status_code == 200, (position, name, response.get_json())
            if name in allowed:
                _check_inclusion(response.get_json())
            else:  # the hashes anyone may have, and no more
                assert response.get_json() == hashes, (position, name)


def test_the_log_routes_are_all_tried_by_every_role(api: Api) -> None:
    """A new /log route must join PUBLIC or the inclusion tests (as test_roles.py's
    matrix asks of the others)."""
    routes = {rule.rule for rule in api.app.url_map.iter_rules() if rule.rule.startswith("/log")}
    tried = {path.split("?")[0].replace("{size}", "<int:size>") for path in PUBLIC}
    # The inclusion proof and its tlog-proof: tried above and in test_public_log.py.
    assert routes == tried | {"/log/proofs/inclusion", "/log/proofs/tlog-proof"}


def test_a_consistency_proof_from_a_receipt_shows_a_root_in_base64_as_signed(api: Api) -> None:
    """The note holds the root in base64 (C2SP); every JSON field holds hashes in hex."""
    bank = api.client()
    receipt = _receipts(bank)[0]
    lines = receipt["checkpoint"].split("\n")
    stored = bank.ok("get", f"/log/checkpoints/{_size(receipt)}")
    assert base64.b64decode(lines[2]).hex() == stored["root"]


def test_the_receipt_walkthrough_in_the_guide_runs(sqlite_api: Api, tmp_path: Any) -> None:
    """docs/api.md's "Receipts and proofs": each `api` command it shows answers, and the
    note saved as `jq -j` saves it is the signed checkpoint the proofs start from."""
    import re
    import shlex

    from tests.api.guidekit import GUIDE

    bank = sqlite_api.client()
    bank.ok("post", "/players", {"name": "ann"})
    section = re.search(r"\n## Receipts and proofs\n(.*?)(?=\n## |\Z)", GUIDE.read_text(), re.S)
    assert section is not None
    block = re.search(r"```sh\n(.*?)```", section.group(1), re.S)
    assert block is not None
    commands = [
        shlex.split(line.split("  #")[0].split(" | ")[0].split(" > ")[0])[1:]
        for line in block.group(1).splitlines()
        if line.startswith("api ")
    ]
    assert len(commands) == 4
    answers = []
    receipt = ""
    for words in commands:
        method = "get"
        if words[0] == "-X":
            method, words = words[1].lower(), words[2:]
        url = words[0].removeprefix("localhost:8000")
        url = url.replace("$SIZE", str(_size({"checkpoint": receipt})) if receipt else "")
        if receipt:  # $POSITION, the deposit's position (its receipt's)
            url = url.replace("$POSITION", str(answers[0]["receipt"]["positions"][0]))
        body = json.loads(words[2]) if len(words) > 2 and words[1] == "-d" else None
        answer = getattr(bank, method)(url, json=body) if body else bank.get(url)
        assert answer.status_code < 300, (url, answer.get_json())
        answers.append(answer.get_json())
        if not receipt:
            saved = tmp_path / "receipt.txt"
            saved.write_text(answers[0]["receipt"]["checkpoint"])  # jq -j: as it is
            receipt = saved.read_text()
            size = int(receipt.split("\n")[1])  # its write's seal, after its event
            assert size == answers[0]["receipt"]["positions"][-1] + 1 and _seal_at(bank, size)
    assert answers[2]["old"]["checkpoint"] == receipt
    _check_inclusion(answers[3])
