"""The player's page checks her receipts in her own browser (static/receipts.js), from the
log's public reads, under the club's policy: it says when they hold and against what,
when no witness has cosigned yet or too few have, and, when the ledger serves something
that does not check, which check failed for which receipt.

The club: ann and bob, paid in and out by the setter; the witnesses are cosignkit's
(treasurer, auditor, chair; the policy asks 2 of them), cosigning as the ledger keeps
what they return, or two witnesses (witnesskit's) that the ledger pushes to live.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import request

from ledger.store.eventstore import EventStore
from ledger.store.log import witnessed
from ledger.store.vocabulary import Deposited, Withdrawn
from tests.api.witnesskit import INTERVAL, TIMEOUT, Witness, eventually
from tests.console.conftest import Served, serving, sign_in
from tests.ledger import tamperkit
from tests.ledger.cosignkit import AUDITOR, TREASURER, cosign, newest_size, policy_file
from tests.signing import SIGNER, VERIFIER

TWO_OF_THREE = "2 of treasurer, auditor, chair"


def play(served: Served) -> list[int]:
    """A few writes: ann's and bob's accounts; the positions of ann's events."""
    club = served.app.extensions["hazard.club"]
    club.create_player("ann", "setter:bank")
    club.create_player("bob", "setter:bank")
    for name, kind, amount in [
        ("ann", Deposited, 500),
        ("bob", Deposited, 300),
        ("ann", Deposited, 250),
        ("ann", Withdrawn, 100),
        ("bob", Withdrawn, 50),
    ]:
        club.account_command(name, kind, amount, "setter:bank")
    with served.book.store.engine.connect() as conn:
        query = "SELECT DISTINCT position FROM postings WHERE account = 'player:ann' ORDER BY 1"
        return list(conn.execute(sa.text(query)).scalars())


@pytest.fixture
def club(store: EventStore, tmp_path: Path) -> Iterator[Served]:
    """The club on each database, its policy asking 2 of 3 witnesses (none pushed to)."""
    with serving(store, HAZARD_POLICY=policy_file(tmp_path, "2")) as served:
        yield served


def checked(served: Served, page: Any) -> Any:
    """ann's page, once her browser has checked her receipts: the check's section."""
    sign_in(page, served.url, served.token("player", "ann"))
    page.goto(served.url + "/console/me")
    section = page.locator("section.receipt-check[data-done]")
    section.wait_for()
    return section


def status(section: Any) -> str:
    text: str = section.locator("#receipt-check-status").inner_text()
    return " ".join(text.split())


def cells(page: Any) -> dict[int, str]:
    found = {}
    for cell in page.locator("[data-receipt]").all():
        found[int(cell.get_attribute("data-receipt"))] = cell.inner_text()
    return found


def test_the_browser_checks_each_receipt_against_what_the_witnesses_cosigned(
    store: EventStore, tmp_path: Path, page: Any
) -> None:
    """Two witnesses the ledger pushes to cosign as the writes come; ann's browser then
    checks every receipt of hers, asking the ledger without her cookie or a token."""
    treasurer, auditor = Witness(TREASURER), Witness(AUDITOR)
    treasurer.start()
    auditor.start()
    policy = tmp_path / "club.policy"
    policy.write_text(
        f"log {VERIFIER.text()}\n"
        f"witness treasurer {TREASURER.key.text()} {treasurer.url}\n"
        f"witness auditor {AUDITOR.key.text()} {auditor.url}\n"
        "group both all treasurer auditor\nquorum both\n"
    )
    config = {"HAZARD_WITNESS_INTERVAL": INTERVAL, "WITNESS_TIMEOUT": TIMEOUT}
    try:
        with serving(store, HAZARD_POLICY=str(policy), **config) as served:
            mine = play(served)
            size = newest_size(store.engine)
            eventually(lambda: _cosigned_by(store, size) == 2)
            asked: list[tuple[str, str | None, str | None]] = []

            @served.app.before_request
            def _asked() -> None:
                if request.path.startswith("/log/"):
                    sent = request.headers
                    asked.append((request.path, sent.get("Cookie"), sent.get("Authorization")))

            section = checked(served, page)
    finally:
        treasurer.stop()
        auditor.stop()
    assert section.get_attribute("data-done") == "passed"
    assert status(section) == (
        f"All {len(mine)} of your receipts hold. Checked in your browser against the "
        f"checkpoint of size {size} cosigned by treasurer and auditor (the club's policy "
        f"asks all of treasurer, auditor)."
    )
    assert cells(page) == dict.fromkeys(mine, "checked")
    # Every read the check made was anonymous: no cookie, no token.
    assert {path for path, _, _ in asked} >= {"/log/key", "/log/cosigned", "/log/proofs/inclusion"}
    assert all(cookie is None and token is None for _, cookie, token in asked)


def _cosigned_by(store: EventStore, size: int) -> int:
    with store.engine.connect() as conn:
        found = witnessed.at(conn, size)
    return 0 if found is None else len(found.witnesses)


def test_a_receipt_newer_than_the_cosigned_checkpoint_is_said_not_yet_cosigned(
    club: Served, page: Any
) -> None:
    mine = play(club)
    size = cosign(club.book.store.engine, None, TREASURER, AUDITOR)
    answer = club.app.extensions["hazard.club"].account_command("ann", Deposited, 40, "setter:bank")
    (later,) = answer["receipt"]["positions"]
    assert later < newest_size(club.book.store.engine)  # its write's seal signed after it
    section = checked(club, page)
    assert section.get_attribute("data-done") == "passed"
    assert status(section) == (
        f"All {len(mine) + 1} of your receipts hold. 1 of them is signed by the bank and not "
        f"yet in a cosigned tree: the witnesses cosign a little behind the writes, so look "
        f"again in a minute. Checked in your browser against the checkpoint of size {size} "
        f"cosigned by treasurer and auditor (the club's policy asks {TWO_OF_THREE})."
    )
    assert cells(page) == {**dict.fromkeys(mine, "checked"), later: "not yet cosigned"}


def test_with_no_cosigned_checkpoint_the_page_says_it_checked_the_banks_word_alone(
    club: Served, page: Any
) -> None:
    mine = play(club)
    size = newest_size(club.book.store.engine)
    section = checked(club, page)
    assert status(section) == (
        f"All {len(mine)} of your receipts hold. No witness has cosigned a checkpoint of "
        f"this ledger yet: they were checked against its newest checkpoint, of size {size}, "
        f"signed by the bank alone, which proves only what the bank says."
    )


def test_a_checkpoint_cosigned_short_of_the_quorum_is_said_to_be(club: Served, page: Any) -> None:
    play(club)
    size = cosign(club.book.store.engine, None, TREASURER)
    section = checked(club, page)
    assert status(section).endswith(
        f"Checked in your browser against the checkpoint of size {size} cosigned by "
        f"treasurer, short of the club's policy, which asks {TWO_OF_THREE}: not yet "
        f"witnessed by its quorum."
    )
    said = " ".join(section.locator("p.policy").inner_text().split())
    assert said.startswith(
        f"The checks use the club's policy, as this ledger was configured with it: the "
        f"log's key, and the witnesses who must cosign: {TWO_OF_THREE}."
    )
    assert "a careful player keeps their own" in said and "hazard watch" in said


# -- what the ledger serves does not check ------------------------------------------------


def _flip(hex_hash: str) -> str:
    return ("0" if hex_hash[0] != "0" else "1") + hex_hash[1:]


def _answer(change: Callable[[dict[str, Any], str], None]) -> Callable[[Any], None]:
    """A route handler: the ledger's own answer, changed by `change(body, url)`."""

    def handle(route: Any) -> None:
        response = route.fetch()
        body = response.json()
        change(body, route.request.url)
        route.fulfill(response=response, body=json.dumps(body))

    return handle


def _other_cosignature(body: dict[str, Any], url: str) -> None:
    # The auditor's line with one character of its signature changed.
    text, _, lines = body["note"].rpartition("\n\n")
    changed = []
    for line in lines.splitlines():
        if line.startswith("\u2014 " + AUDITOR.name):
            at = len(line) - 10
            line = line[:at] + ("B" if line[at] != "B" else "C") + line[at + 1 :]
        changed.append(line)
    body["note"] = text + "\n\n" + "\n".join(changed) + "\n"


def _other_root(body: dict[str, Any], url: str) -> None:
    origin, size, root, rest = body["note"].split("\n", 3)
    body["note"] = "\n".join([origin, size, ("B" if root[0] != "B" else "C") + root[1:], rest])


def _other_key(body: dict[str, Any], url: str) -> None:
    body["key"] = tamperkit.OTHER.verifier.text()


GLOBAL = {
    "a cosignature": (
        "**/log/cosigned*",
        _other_cosignature,
        "The check FAILED: the witnesses' cosignatures: the cosignature by auditor does not "
        "verify.",
    ),
    "the cosigned root": (
        "**/log/cosigned*",
        _other_root,
        f"The check FAILED: the cosigned checkpoint: the log's signature ({SIGNER.name}) does "
        f"not verify.",
    ),
    "the log's key": (
        "**/log/key*",
        _other_key,
        "The check FAILED: the log's key: the key the ledger serves is not the log key in "
        "the club's policy.",
    ),
}


@pytest.mark.parametrize("what", GLOBAL)
def test_a_cosigned_checkpoint_that_does_not_check_fails_the_whole_check(
    served_sqlite: Served, page: Any, what: str
) -> None:
    pattern, change, says = GLOBAL[what]
    mine = play(served_sqlite)
    cosign(served_sqlite.book.store.engine, None, TREASURER, AUDITOR)
    page.route(pattern, _answer(change))
    section = checked(served_sqlite, page)
    assert section.get_attribute("data-done") == "failed"
    assert status(section) == says
    assert cells(page) == dict.fromkeys(mine, "not checked")


def _path_changed(body: dict[str, Any], url: str) -> None:
    body["proof"][0] = _flip(body["proof"][0])


def _leaf_changed(body: dict[str, Any], url: str) -> None:
    body["leaf_hash"] = _flip(body["leaf_hash"])


ONE = {
    "an inclusion path": (
        "**/log/proofs/inclusion*",
        _path_changed,
        "inclusion",
        "the path does not lead from the event to the root of the tree of {size}",
    ),
    "a leaf": (
        "**/log/proofs/inclusion*",
        _leaf_changed,
        "inclusion",
        "the ledger's leaf at this position is not the hash of this event: the event was changed",
    ),
    "a consistency proof": (
        "**/log/proofs/consistency*",
        _path_changed,
        "consistency",
        "the tree of {receipt} is not a prefix of the tree of {size}",
    ),
}


@pytest.mark.parametrize("what", ONE)
def test_a_proof_that_does_not_check_fails_that_receipt_by_name(
    served_sqlite: Served, page: Any, what: str
) -> None:
    """The ledger serves one changed proof, for ann's first receipt: that receipt fails,
    naming the check; the others still hold."""
    pattern, change, check, why = ONE[what]
    mine = play(served_sqlite)
    size = cosign(served_sqlite.book.store.engine, None, TREASURER, AUDITOR)
    first = mine[0]
    receipt = _receipt_size(served_sqlite, first)
    assert receipt < size  # so that a consistency proof is asked for

    def only_the_first(body: dict[str, Any], url: str) -> None:
        if f"position={first}&" in url or f"from={receipt}&" in url:
            change(body, url)

    page.route(pattern, _answer(only_the_first))
    section = checked(served_sqlite, page)
    assert section.get_attribute("data-done") == "failed"
    assert status(section).startswith(
        f"The check FAILED for 1 of your {len(mine)} receipts (each is named below)."
    )
    assert section.locator("#receipt-check-problems li").all_inner_texts() == [
        f"Position {first}: {check} FAILED: {why.format(size=size, receipt=receipt)}."
    ]
    assert cells(page) == {**dict.fromkeys(mine, "checked"), first: f"FAILED ({check})"}


def _receipt_size(served: Served, position: int) -> int:
    with served.book.store.engine.connect() as conn:
        query = "SELECT min(size) FROM checkpoints WHERE size >= :p"
        return int(conn.execute(sa.text(query), {"p": position}).scalar_one())


@pytest.fixture
def served_sqlite(tmp_path: Path) -> Iterator[Served]:
    """The club on SQLite alone, for what the browser is served rather than what a
    database answers."""
    from ledger.store import db

    engine = db.make_engine(f"sqlite:///{tmp_path / 'console.sqlite3'}")
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    try:
        with serving(store, HAZARD_POLICY=policy_file(tmp_path, "2")) as served:
            yield served
    finally:
        store.close()
        engine.dispose()


# -- what an insider did to the database ---------------------------------------------------


def test_an_event_changed_in_the_database_fails_its_receipt(club: Served, page: Any) -> None:
    """An amount changed behind the ledger's back: the page shows the changed event, and
    ann's browser finds it is not the one in the tree the witnesses cosigned."""
    mine = play(club)
    engine = club.book.store.engine
    size = cosign(engine, None, TREASURER, AUDITOR)
    log = tamperkit.Log(engine, size, "", Path())
    row = tamperkit.a_deposit(log)
    with tamperkit.unguarded(log) as conn:
        tamperkit.set_row(conn, row.position, payload=tamperkit.multiplied(row.payload))
    section = checked(club, page)
    assert section.locator("#receipt-check-problems li").all_inner_texts() == [
        f"Position {row.position}: inclusion FAILED: the path does not lead from the event "
        f"to the root of the tree of {size}."
    ]
    assert cells(page) == {**dict.fromkeys(mine, "checked"), row.position: "FAILED (inclusion)"}


def test_history_rewritten_and_resigned_with_the_banks_key_fails_the_check(
    club: Served, page: Any
) -> None:
    """The audit's consistent rewrite: an amount changed, every hash, tree and checkpoint
    made again and signed with the bank's own key. The witnesses' cosignatures were of
    the history they saw; on the rewritten checkpoint they no longer verify."""
    play(club)
    engine = club.book.store.engine
    size = cosign(engine, None, TREASURER, AUDITOR)
    log = tamperkit.Log(engine, size, "", Path())
    with tamperkit.unguarded(log) as conn:
        tamperkit.whole_log_rehashed_and_resigned(log, conn, SIGNER)
    section = checked(club, page)
    assert section.get_attribute("data-done") == "failed"
    assert status(section) == (
        "The check FAILED: the witnesses' cosignatures: the cosignature by treasurer does "
        "not verify."
    )


# -- one receipt's page, and a browser that cannot check ----------------------------------


def test_a_receipts_own_page_checks_it_too(served_sqlite: Served, page: Any) -> None:
    mine = play(served_sqlite)
    size = cosign(served_sqlite.book.store.engine, None, TREASURER, AUDITOR)
    sign_in(page, served_sqlite.url, served_sqlite.token("player", "ann"))
    page.goto(f"{served_sqlite.url}/console/me/receipts/{mine[1]}")
    section = page.locator("section.receipt-check[data-done]")
    section.wait_for()
    assert section.get_by_role("heading").inner_text() == "This receipt, checked in your browser"
    assert status(section) == (
        f"Your receipt holds. Checked in your browser against the checkpoint of size {size} "
        f"cosigned by treasurer and auditor (the club's policy asks {TWO_OF_THREE})."
    )
    assert cells(page) == {mine[1]: "checked"}


# What a browser without WebCrypto (a page over plain HTTP, not from this machine), or
# whose WebCrypto has no Ed25519 (before Chrome 137, Firefox 129, Safari 17), looks like.
NO_CRYPTO = {
    "no WebCrypto": (
        "Object.defineProperty(Crypto.prototype, 'subtle', {get: () => undefined});",
        "this browser offers its cryptography (WebCrypto) only to pages served over HTTPS "
        "or from this machine, and this page is neither",
    ),
    "no Ed25519": (
        "const importKey = SubtleCrypto.prototype.importKey;"
        "SubtleCrypto.prototype.importKey = function (format, data, algorithm, ...rest) {"
        "  if (algorithm.name === 'Ed25519') return Promise.reject(new DOMException('no', "
        "'NotSupportedError'));"
        "  return importKey.call(this, format, data, algorithm, ...rest); };",
        "this browser's WebCrypto cannot check Ed25519 signatures (NotSupportedError)",
    ),
}


@pytest.mark.parametrize("lacking", NO_CRYPTO)
def test_a_browser_that_cannot_check_says_so_and_claims_nothing(
    served_sqlite: Served, page: Any, lacking: str
) -> None:
    script, why = NO_CRYPTO[lacking]
    mine = play(served_sqlite)
    cosign(served_sqlite.book.store.engine, None, TREASURER, AUDITOR)
    page.add_init_script(script)
    section = checked(served_sqlite, page)
    assert section.get_attribute("data-done") == "not run"
    assert status(section) == f"The check could not run: {why}. Nothing was checked."
    assert cells(page) == dict.fromkeys(mine, "not checked")
