"""`next_after` is null exactly when nothing comes after the page: a last page that
happens to be full is still the last, and a client walking a listing never asks for
an empty page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, Client
from tests.api.readkit import play

# Each listing: its path, and where in the answer its items are.
LISTINGS = {
    "settlements": ("/settlements", "items"),
    "a-players-settlements": ("/settlements?player=ann", "items"),
    "rounds": ("/tables/t1/rounds", "items"),
    "a-rounds-events": ("/tables/t1/rounds/2", "events"),
    "events": ("/events", "items"),
    "a-streams-events": ("/events?stream=table:t1", "items"),
    "statement": ("/players/ann/statement", "items"),
    "the-banks-statement": ("/players/setter/statement", "items"),
    "open-bets": ("/tables/t1", "open_bets"),
}


def _get(client: Client, path: str, **query: Any) -> dict[str, Any]:
    joiner = "&" if "?" in path else "?"
    found: dict[str, Any] = client.ok(
        "get", path + joiner + "&".join(f"{k}={v}" for k, v in query.items())
    )
    return found


def _open_bets(bank: Client) -> None:
    offer = {"player": "bob", "proposition": {"kind": "caster-wins"}, "backs": True}
    for _ in range(3):
        bank.ok("post", "/tables/t1/side-bets", {**offer, "stake": 1, "asks": 1})


@pytest.mark.parametrize("listing", LISTINGS, ids=LISTINGS.keys())
def test_a_full_last_page_has_no_next(api: Api, listing: str) -> None:
    path, field = LISTINGS[listing]
    bank = play(api)
    _open_bets(bank)
    everything = _get(bank, path, limit=500)
    assert everything["next_after"] is None
    total = len(everything[field])
    assert total >= 2, everything  # so that limit=total-1 is a page with a next one

    whole = _get(bank, path, limit=total)
    assert whole[field] == everything[field]
    assert whole["next_after"] is None

    # One short of the total: a next page, and it is the last, with the one left.
    first = _get(bank, path, limit=total - 1)
    assert first["next_after"] is not None
    rest = _get(bank, path, limit=total - 1, after=first["next_after"])
    assert first[field] + rest[field] == everything[field]
    assert rest["next_after"] is None


@pytest.mark.parametrize("listing", LISTINGS, ids=LISTINGS.keys())
def test_every_page_of_a_walk_has_items(api: Api, listing: str) -> None:
    """A walk a page at a time: every `next_after` leads to a page with something on it."""
    path, field = LISTINGS[listing]
    bank = play(api)
    _open_bets(bank)
    everything = _get(bank, path, limit=500)[field]
    for limit in (1, 2, 3):
        walked, after = [], 0
        while True:
            answer = _get(bank, path, limit=limit, after=after)
            assert answer[field], (limit, after)  # never an empty page
            walked += answer[field]
            if answer["next_after"] is None:
                break
            after = answer["next_after"]
        assert walked == everything, limit


def test_a_statement_page_that_ends_the_statement_says_so(api: Api) -> None:
    """A statement's page runs over to keep an event's postings whole: cat's one event
    is the whole statement, however small the page."""
    bank = play(api)
    only = _get(bank, "/players/cat/statement", limit=1)
    assert len(only["items"]) == 1
    assert only["next_after"] is None
