"""The audit trail over HTTP: the event log as stored, re-checked offline from what
/events gives; /audit/verify and /audit/head; and who may read them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import sqlalchemy as sa

from ledger.store.log.heads import SEALS
from ledger.web import verify
from tests.api.conftest import Api
from tests.api.readkit import play, problem, walk
from tests.signing import VERIFIER

GENESIS = "0" * 64


def rehash(event: dict[str, Any]) -> str:
    """An event's hash, from /events alone, as an auditor would recompute it."""
    covered = {k: v for k, v in event.items() if k not in ("hash", "prev_hash")}
    text = json.dumps(covered, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(event["prev_hash"].encode() + b"\n" + text.encode()).hexdigest()


def test_the_log_rechecks_offline(api: Api) -> None:
    bank = play(api)
    log = bank.ok("get", "/events", query_string={"limit": 500})
    events = log["items"]
    assert log["next_after"] is None
    assert [e["position"] for e in events] == list(range(1, len(events) + 1))
    heads: dict[str, tuple[int, str]] = {}
    for event in events:
        version, prev = heads.get(event["stream"], (0, GENESIS))
        assert (event["version"], event["prev_hash"]) == (version + 1, prev)
        assert rehash(event) == event["hash"]
        heads[event["stream"]] = (event["version"], event["hash"])
    assert set(heads) == {
        "account:player:ann",
        "account:player:bob",
        "account:player:cat",
        "account:setter",
        "table:t1",
        "table:t2",
        SEALS,  # every write's seal: the log's own stream
    }
    first = events[0]
    assert first["type"] == "AccountOpened" and first["actor"] == api.actor()
    assert first["payload"] == {"account": "player:ann"} and first["idempotency_key"] is None
    assert "payload_text" not in first

    check = bank.ok("get", "/audit/verify")
    with api.book.store.engine.connect() as conn:
        stored, newest = conn.execute(sa.text("SELECT count(*), max(size) FROM checkpoints")).one()
        (root,) = conn.execute(
            sa.text("SELECT root FROM checkpoints WHERE size = :s"), {"s": newest}
        ).one()
    assert newest == len(events) and events[-1]["stream"] == SEALS
    assert heads[SEALS][0] == stored  # a seal for each checkpoint, numbering them
    assert check == {
        "ok": True,
        "events": len(events),
        "through": len(events),
        "problems": [],
        "more_problems": 0,
        # What the bounded check added (issue 11): the whole log in one go, here.
        "after": 0,
        "checked": len(events),
        "next_after": None,
        "checkpoints": stored,
        "root": root,
        "key": VERIFIER.text(),
        "read_models": None,  # no deep check asked for
        "tokens": None,
    }
    last = events[-1]
    assert bank.ok("get", "/audit/head") == {
        "position": last["position"],
        "stream": SEALS,  # the last write's seal
        "version": last["version"],
        "hash": last["hash"],
        "recorded_at": last["recorded_at"],
        "events": len(events),
        "streams": len(heads),
        # Recomputed here from the exported log alone, as an auditor would.
        "digest": hashlib.sha256(
            "".join(f"{s}\t{v}\t{h}\n" for s, (v, h) in sorted(heads.items())).encode()
        ).hexdigest(),
    }


def test_the_log_pages_whole_or_by_stream(api: Api) -> None:
    bank = play(api)
    events = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    for limit in (1, 7, len(events)):
        assert walk(bank, "/events", limit) == events
    for stream in ("table:t1", "account:player:ann", "table:t9"):
        own = [e for e in events if e["stream"] == stream]
        assert bank.ok("get", "/events", query_string={"stream": stream})["items"] == own
        assert walk(bank, "/events", 2, stream=stream) == own
    # After a position of another stream: the stream's events after it, all the same.
    bobs = next(e["position"] for e in events if e["stream"] == "account:player:bob")
    for stream in ("table:t1", "account:player:ann", "account:player:bob"):
        later = [e for e in events if e["stream"] == stream and e["position"] > bobs]
        query = {"stream": stream, "after": bobs}
        assert bank.ok("get", "/events", query_string=query)["items"] == later


def drop_the_update_guard(conn: sa.Connection) -> None:
    """Tamper behind the triggers' back, as someone with the database could."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("DROP TRIGGER events_refuse_update")
    else:
        conn.exec_driver_sql("DROP TRIGGER events_refuse_update_delete ON events")


def test_a_broken_chain_is_an_answer(api: Api) -> None:
    bank = play(api)
    with api.book.store.engine.begin() as conn:
        drop_the_update_guard(conn)
        position = conn.execute(
            sa.text("SELECT position FROM events WHERE stream = 'table:t1' AND version = 3")
        ).scalar_one()
        conn.execute(
            sa.text("UPDATE events SET payload = 'not json' WHERE position = :p"), {"p": position}
        )
    check = bank.ok("get", "/audit/verify")
    assert check["ok"] is False
    assert len(check["problems"]) == 1
    assert check["problems"][0].startswith(f"position {position} (table:t1 v3)")
    # The damaged event is shown as stored, not a failure to read the log.
    damaged = bank.ok("get", "/events", query_string={"after": position - 1, "limit": 1})
    (event,) = damaged["items"]
    assert event["payload"] is None and event["payload_text"] == "not json"
    assert bank.ok("get", "/players/ann/statement")["items"]


def test_verify_lists_a_bounded_number_of_problems_and_counts_the_rest(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One problem per broken stream, and a log can have any number of streams: the
    answer lists the first MAX_PROBLEMS of them and counts the others."""
    bank = play(api)
    with api.book.store.engine.begin() as conn:
        drop_the_update_guard(conn)
        conn.exec_driver_sql("UPDATE events SET hash = 'x' WHERE version = 1")
        streams = conn.exec_driver_sql("SELECT count(DISTINCT stream) FROM events").scalar_one()
    assert streams > 3
    monkeypatch.setattr(verify, "MAX_PROBLEMS", 2)
    check = bank.ok("get", "/audit/verify")
    assert check["ok"] is False
    assert len(check["problems"]) == 2
    assert check["more_problems"] == streams - 2


def test_an_empty_log(api: Api) -> None:
    auditor = api.client("auditor", "al")
    assert auditor.ok("get", "/events") == {"items": [], "next_after": None}
    assert auditor.ok("get", "/audit/verify") == {
        "ok": True,
        "events": 0,
        "through": 0,
        "problems": [],
        "more_problems": 0,
        "after": 0,
        "checked": 0,
        "next_after": None,
        "checkpoints": 0,
        "root": hashlib.sha256(b"").hexdigest(),
        "key": VERIFIER.text(),
        "read_models": None,  # no deep check asked for
        "tokens": None,
    }
    assert auditor.ok("get", "/audit/head") == {
        "position": 0,
        "stream": None,
        "version": None,
        "hash": None,
        "recorded_at": None,
        "events": 0,
        "streams": 0,
        "digest": hashlib.sha256(b"").hexdigest(),
    }


def test_only_the_setter_and_auditors_audit(api: Api) -> None:
    play(api)
    auditor = api.client("auditor", "al")
    for path in ("/events", "/audit/verify", "/audit/head"):
        auditor.ok("get", path)
        problem(api.client("croupier", "cy").get(path), 403)
        problem(api.client("player", "ann").get(path), 403)
        problem(api.client(None).get(path), 401)


def test_a_bad_log_query_names_the_field(api: Api) -> None:
    bank = api.client()
    for query, field in [
        ({"limit": 0}, "limit"),
        ({"after": "first"}, "after"),
        ({"stream": ""}, "stream"),
        ({"stream": "table:\x00"}, "stream"),
        ({"stream": "s" * 201}, "stream"),
        ({"table": "t1"}, "table"),
    ]:
        body = problem(bank.get("/events", query_string=query), 422)
        assert field in body["errors"] and body["detail"].startswith(field), (query, body)


def test_verify_is_bounded_and_continues_from_next_after(api: Api) -> None:
    """A check of a large log must not outlive a request: `limit` bounds it, and
    `next_after` goes on from where it stopped, with the tree and checkpoints of each
    range checked; a problem is named in the page that reaches it."""
    bank = play(api)
    events = bank.ok("get", "/events", query_string={"limit": 500})["items"]
    whole = bank.ok("get", "/audit/verify")
    pages, after = [], 0
    while after is not None:
        page = bank.ok("get", "/audit/verify", query_string={"after": after, "limit": 7})
        assert page["after"] == after and page["ok"], page["problems"]
        pages.append(page)
        after = page["next_after"]
    assert [p["checked"] for p in pages[:-1]] == [7] * (len(pages) - 1)
    assert sum(p["checked"] for p in pages) == len(events)
    assert sum(p["checkpoints"] for p in pages) == whole["checkpoints"]
    assert pages[-1]["root"] == whole["root"]
    with api.book.store.engine.begin() as conn:
        drop_the_update_guard(conn)
        conn.execute(sa.text("UPDATE events SET actor = 'eve' WHERE position = 10"))
    bad = bank.ok("get", "/audit/verify", query_string={"after": 7, "limit": 7})
    assert bad["ok"] is False and bad["problems"][0].startswith("position 10 (")
    assert bank.ok("get", "/audit/verify", query_string={"after": 14, "limit": 7})["ok"]
    for query in ({"limit": 0}, {"limit": 500_001}, {"after": -1}):
        problem(bank.get("/audit/verify", query_string=query), 422)
    for after in (len(events) + 5, 2**63 - 1):  # a caller's mistake, named; no finding
        beyond = problem(bank.get("/audit/verify", query_string={"after": after}), 422)
        assert "beyond the log" in beyond["detail"]


def test_a_deep_check_names_a_balance_edited_behind_the_events(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The balance a DBA edits is the one the API serves: `deep` replays the events and
    names it; a log too long to replay in a request is refused, saying what to run."""
    bank = play(api)
    clean = bank.ok("get", "/audit/verify", query_string={"deep": "true"})
    assert clean["ok"] and clean["read_models"] == []
    assert bank.ok("get", "/audit/verify")["read_models"] is None
    with api.book.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE accounts SET balance = balance + 999 WHERE account = 'setter'")
        )
    found = bank.ok("get", "/audit/verify", query_string={"deep": "true"})
    assert found["ok"] is False and found["problems"] == []  # the log itself is sound
    [difference] = found["read_models"]
    assert difference["table"] == "accounts" and "setter" in difference["message"]
    monkeypatch.setattr(verify.rs, "DEEP_MAX", 3)
    refused = problem(bank.get("/audit/verify", query_string={"deep": "true"}), 422)
    assert "hazard verify --deep" in refused["detail"]


def test_a_deep_check_names_a_dice_count_edited_behind_the_events(api: Api) -> None:
    """The whole club's dice report reads the counts kept beside the events (migration
    0017): a count edited in the database is what the report then shows, and `deep`
    replays the events and names it, as it names a balance."""
    bank = play(api)
    before = bank.ok("get", "/reports/dice")
    cell = next(c for c in before["pairs"]["cells"] if c["observed"])
    pair = (cell["die1"], cell["die2"])
    with api.book.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dice_counts SET throws = throws + 7 WHERE die1 = :a AND die2 = :b"),
            {"a": pair[0], "b": pair[1]},
        )
    after = bank.ok("get", "/reports/dice")
    assert after["throws"] == before["throws"] + 7
    found = bank.ok("get", "/audit/verify", query_string={"deep": "true"})
    assert found["ok"] is False and found["problems"] == []  # the log itself is sound
    [difference] = found["read_models"]
    assert (difference["table"], difference["key"]) == ("dice_counts", list(pair))
    assert (difference["stored"], difference["expected"]) == (
        cell["observed"] + 7,
        cell["observed"],
    )
    assert f"dice {pair[0]} and {pair[1]}: throws" in difference["message"]
