"""GET /reports/dice, the dice-fairness report, over HTTP on SQLite and PostgreSQL.

Every throw here is made by hand through the API, and every figure the tests expect
is worked in the test: the counts by hand, the chi-square statistics from Pearson's
formula in exact fractions, the p-values from scipy (the oracle; the service has its
own, ledger.audit.stats)."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from scipy import stats as oracle

from ledger.commands import Caller, Role, tables
from ledger.web.tokens import create, listing, revoke
from tests.api.conftest import Api, Client
from tests.api.fairnesskit import Dice
from tests.api.fairnesskit import clock as _clock
from tests.api.fairnesskit import club as _club
from tests.api.fairnesskit import open_table as _open
from tests.api.fairnesskit import report as _report
from tests.api.fairnesskit import throw as _throw

ALL_PAIRS = [(a, b) for a in range(1, 7) for b in range(1, 7)]
WAYS = {t: sum(1 for a, b in ALL_PAIRS if a + b == t) for t in range(2, 13)}


def _chi_square(observed: list[int], probabilities: list[Fraction]) -> Fraction:
    n = sum(observed)
    return sum(
        (Fraction(o) - n * p) ** 2 / (n * p) for o, p in zip(observed, probabilities, strict=True)
    ) or Fraction(0)


def _pairs(report: dict[str, Any]) -> Counter[Dice]:
    return Counter(
        {(c["die1"], c["die2"]): c["observed"] for c in report["pairs"]["cells"] if c["observed"]}
    )


# -- the figures --------------------------------------------------------------------

# Round by round, main 7 called (english: 7 and 11 nick, 2, 3 and 12 throw out):
ROUNDS = [
    [(3, 4)],  # 7 nicks: a win
    [(1, 1)],  # 2 throws out: a loss
    [(2, 2), (5, 6), (1, 3)],  # chance 4; 11 is nothing now; 4 comes: a win
    [(6, 6)],  # 12 throws out: a loss
    [(2, 3), (4, 3)],  # chance 5; the main 7 comes first: a loss
]


def test_exact_counts_and_statistics(api: Api) -> None:
    clients = _club(api)
    cecil = clients["cecil"]
    _open(cecil, "t1")
    _throw(cecil, "t1", ROUNDS[0])
    # A cocked throw does not count: it is recast, and only the recast is a throw.
    cecil.ok("post", "/tables/t1/main", {"main": 7})
    cecil.ok("post", "/tables/t1/void-throws", {"reason": "cocked", "off": 0})
    _throw(cecil, "t1", [d for r in ROUNDS[1:] for d in r])
    _throw(cecil, "t1", [(3, 3)], main=6)  # main 6 nicks on 6: a win

    report = _report(clients["bank"], table="t1")

    thrown = [d for r in ROUNDS for d in r] + [(3, 3)]
    assert report["throws"] == 9
    assert _pairs(report) == Counter(thrown)
    assert len(report["pairs"]["cells"]) == 36
    totals = {c["total"]: c["observed"] for c in report["totals"]["cells"]}
    assert totals == {2: 1, 3: 0, 4: 2, 5: 1, 6: 1, 7: 2, 8: 0, 9: 0, 10: 0, 11: 1, 12: 1}

    cell2 = report["totals"]["cells"][0]
    assert cell2 == {"total": 2, "observed": 1, "expected": pytest.approx(9 / 36), "p": "1/36"}
    assert report["totals"]["cells"][5]["p"] == "1/6"  # total 7
    assert report["pairs"]["cells"][0]["p"] == "1/36"

    by_total = [totals[t] for t in range(2, 13)]
    statistic = _chi_square(by_total, [Fraction(WAYS[t], 36) for t in range(2, 13)])
    assert report["totals"]["statistic"] == pytest.approx(float(statistic))
    assert report["totals"]["df"] == 10
    assert report["totals"]["p_value"] == pytest.approx(oracle.chi2.sf(float(statistic), 10))
    pair_stat = _chi_square([Counter(thrown)[p] for p in ALL_PAIRS], [Fraction(1, 36)] * 36)
    assert report["pairs"]["statistic"] == pytest.approx(float(pair_stat))
    assert report["pairs"]["df"] == 35
    assert report["pairs"]["p_value"] == pytest.approx(oracle.chi2.sf(float(pair_stat), 35))
    # Nine throws expect a quarter of one in the rarest cell: far too few for chi-square.
    for test in (report["totals"], report["pairs"]):
        assert test["least_expected"] == pytest.approx(9 / 36)
        assert test["enough"] is False and test["flagged"] is False

    [english] = report["rulesets"]
    assert english["ruleset"] == "english" and english["tables"] == ["t1"]
    assert english["test"] == "exact binomial, two-sided"
    mains = {m["main"]: m for m in english["mains"]}
    assert sorted(mains) == [5, 6, 7, 8, 9]
    seven = mains[7]
    assert (seven["rounds"], seven["wins"], seven["losses"]) == (5, 2, 3)
    assert seven["p_win"] == "244/495"  # `hazard odds`: main 7 under english rules
    assert seven["expected_wins"] == pytest.approx(5 * 244 / 495)
    assert seven["p_value"] == pytest.approx(oracle.binomtest(2, 5, 244 / 495).pvalue)
    six = mains[6]
    assert (six["rounds"], six["wins"], six["losses"], six["p_win"]) == (1, 1, 0, "6961/14256")
    assert six["p_value"] == pytest.approx(oracle.binomtest(1, 1, 6961 / 14256).pvalue)
    assert mains[5]["rounds"] == 0 and mains[5]["p_value"] is None
    assert report["flags"] == []
    assert report["alpha"] == 0.01 and report["min_expected"] == 5
    assert report["scope"] == {"table": "t1", "croupier": None, "since": None, "until": None}


def _fair() -> list[Dice]:
    """Every ordered pair exactly six times, in a shuffled order: as fair as 216 throws
    can be (chi-square 0)."""
    dice = ALL_PAIRS * 6
    random.Random(13).shuffle(dice)
    return dice


def _loaded() -> list[Dice]:
    """216 throws where die 1 shows 6 half the time, not a sixth of it."""
    rng = random.Random(13)
    return [(6 if rng.random() < 0.5 else rng.randint(1, 5), rng.randint(1, 6)) for _ in range(216)]


def test_a_loaded_die_is_flagged_and_fair_dice_are_not(api: Api) -> None:
    clients = _club(api)
    bank, cecil = clients["bank"], clients["cecil"]
    _open(cecil, "fair")
    _throw(cecil, "fair", _fair())
    _open(cecil, "loaded")
    _throw(cecil, "loaded", _loaded())

    fair = _report(bank, table="fair")
    assert fair["throws"] == 216
    assert fair["pairs"]["statistic"] == pytest.approx(0.0)
    assert fair["pairs"]["p_value"] == pytest.approx(1.0)
    assert fair["pairs"]["enough"] is True  # 6 expected in every cell
    assert fair["totals"]["statistic"] == pytest.approx(0.0)
    assert not fair["pairs"]["flagged"] and not fair["totals"]["flagged"]
    assert fair["flags"] == []

    loaded = _report(bank, table="loaded")
    assert loaded["throws"] == 216
    assert loaded["pairs"]["enough"] is True
    assert loaded["pairs"]["p_value"] < 1e-6 and loaded["pairs"]["flagged"] is True
    assert any(flag.startswith("pairs: chi-square") for flag in loaded["flags"])
    # A threshold below the p-value flags nothing: the setter's choice.
    stricter = _report(bank, table="loaded", alpha=loaded["pairs"]["p_value"] / 2)
    assert stricter["pairs"]["flagged"] is False
    assert stricter["alpha"] == pytest.approx(loaded["pairs"]["p_value"] / 2)


def test_a_caster_who_always_wins_is_flagged_but_few_throws_are_not(api: Api) -> None:
    """Thirty rounds of main 7, each nicked by a thrown 7 (3, 4): the caster wins every
    one. The binomial test is exact at any size and flags it; the throws, thirty of one
    pair, are far from fair too, but thirty throws expect under one in a cell, too few
    for chi-square: shown, not flagged."""
    clients = _club(api, ("mallory",))
    mallory = clients["mallory"]
    _open(mallory, "t3")
    _throw(mallory, "t3", [(3, 4)] * 30)
    report = _report(clients["bank"], croupier="mallory")
    seven = report["rulesets"][0]["mains"][2]
    assert (seven["main"], seven["rounds"], seven["wins"]) == (7, 30, 30)
    assert seven["p_value"] == pytest.approx(oracle.binomtest(30, 30, 244 / 495).pvalue)
    assert seven["flagged"] is True
    assert report["pairs"]["p_value"] < 1e-10
    assert report["pairs"]["enough"] is False and report["pairs"]["flagged"] is False
    assert report["flags"] == [
        f"english main 7: the caster won 30 of 30 (expected {30 * 244 / 495:.1f}), "
        f"p = {seven['p_value']:.3g} < 0.01"
    ]


def test_filters_by_table_croupier_and_time(api: Api) -> None:
    # The clock set before anything is written: time only goes forward, so a clock set
    # back after the club's first writes would be held to their time.
    at = _clock(api)
    clients = _club(api, ("cecil", "dora"))
    bank, cecil, dora = clients["bank"], clients["cecil"], clients["dora"]
    at("2026-01-01T10:00:00.000000Z")
    _open(cecil, "t1")
    _open(cecil, "t2", ruleset="french")  # the main is rolled: thrown, not called
    _throw(cecil, "t1", [(3, 4), (1, 1)])  # on the 1st: cecil at t1, a win and a loss
    at("2026-01-02T10:00:00.000000Z")
    _throw(dora, "t2", [(2, 4), (5, 1)])  # on the 2nd: dora at t2, main 6 set, 6 nicks
    at("2026-01-03T10:00:00.000000Z")
    _throw(dora, "t1", [(6, 6), (2, 2), (1, 3)])  # on the 3rd: dora at t1, a loss, a win

    def seen(**query: Any) -> tuple[int, Counter[Dice], dict[str, tuple[int, int, int]]]:
        report = _report(bank, **query)
        mains = {
            f"{entry['ruleset']} {m['main']}": (m["rounds"], m["wins"], m["losses"])
            for entry in report["rulesets"]
            for m in entry["mains"]
            if m["rounds"]
        }
        return report["throws"], _pairs(report), mains

    everything = seen()
    assert everything == (
        7,
        Counter({(3, 4): 1, (1, 1): 1, (2, 4): 1, (5, 1): 1, (6, 6): 1, (2, 2): 1, (1, 3): 1}),
        {"english 7": (4, 2, 2), "french 6": (1, 1, 0)},
    )
    assert seen(table="t1") == (
        5,
        Counter({(3, 4): 1, (1, 1): 1, (6, 6): 1, (2, 2): 1, (1, 3): 1}),
        {"english 7": (4, 2, 2)},
    )
    assert seen(croupier="dora") == (
        5,
        Counter({(2, 4): 1, (5, 1): 1, (6, 6): 1, (2, 2): 1, (1, 3): 1}),
        {"english 7": (2, 1, 1), "french 6": (1, 1, 0)},
    )
    assert seen(croupier="cecil") == (2, Counter({(3, 4): 1, (1, 1): 1}), {"english 7": (2, 1, 1)})
    assert seen(table="t1", croupier="dora")[0] == 3
    assert seen(since="2026-01-02T00:00:00Z", until="2026-01-03T00:00:00Z") == (
        2,
        Counter({(2, 4): 1, (5, 1): 1}),
        {"french 6": (1, 1, 0)},
    )
    # Offsets are read as the instants they name: 2026-01-03T09:00+01:00 is 08:00Z.
    assert seen(since="2026-01-03T09:00:00+01:00")[0] == 3
    assert seen(until="2026-01-02T10:00:00Z")[0] == 2  # until is exclusive
    report = _report(bank, table="t1", croupier="dora", since="2026-01-03T00:00:00Z")
    assert report["scope"] == {
        "table": "t1",
        "croupier": "dora",
        "since": "2026-01-03T00:00:00.000000Z",
        "until": None,
    }
    # Rule sets are grouped, each with its tables.
    assert [(e["ruleset"], e["tables"]) for e in _report(bank)["rulesets"]] == [
        ("english", ["t1"]),
        ("french", ["t2"]),
    ]


def test_an_empty_range_is_an_answer(api: Api) -> None:
    bank = api.client()
    for query in ({}, {"since": "2030-01-01T00:00:00Z"}, {"croupier": "nobody"}):
        report = _report(bank, **query)
        assert report["throws"] == 0
        for test in (report["totals"], report["pairs"]):
            assert test["statistic"] is None and test["p_value"] is None
            assert test["enough"] is False and test["flagged"] is False
            assert all(c["observed"] == 0 and c["expected"] == 0 for c in test["cells"])
        assert report["rulesets"] == [] and report["flags"] == []


def test_bad_queries_are_named_and_an_unknown_table_is_not_found(api: Api) -> None:
    bank = api.client()
    missing = bank.get("/reports/dice?table=nope")
    assert missing.status_code == 404
    assert missing.get_json()["type"] == "urn:hazard:not-found"
    for query, field in [
        ("alpha=0", "alpha"),
        ("alpha=1", "alpha"),
        ("alpha=-0.1", "alpha"),
        ("alpha=abc", "alpha"),
        ("alpha=nan", "alpha"),
        ("alpha=%EF%BC%90.01", "alpha"),  # a full-width 0
        ("since=yesterday", "since"),
        ("since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"),
        ("table=../x", "table"),
        ("croupier=", "croupier"),
        ("player=ann", "player"),
    ]:
        response = bank.get(f"/reports/dice?{query}")
        assert response.status_code == 422, (query, response.get_json())
        problem = response.get_json()
        assert problem["type"] == "urn:hazard:validation"
        assert field in str(problem["errors"]), (query, problem)
    assert _report(bank, alpha="1e-3")["alpha"] == 0.001


def test_a_croupier_is_every_token_of_the_name_or_one_token_by_its_tag(api: Api) -> None:
    """Throws recorded by cecil before events named their token, by a cecil token since
    revoked, and by today's: `croupier=cecil` counts them all, as the one name;
    `croupier=cecil#<tag>` one token's alone, so that two cecils are never one."""
    bank = _club(api, ())["bank"]
    club = api.app.extensions["hazard.club"]
    untagged = Caller(Role.CROUPIER, "cecil")
    tables.open_table(club, "t0", untagged, ruleset="english")
    for name in ("ann", "bob"):
        tables.seat(club, "t0", untagged, name)
    for die, name in enumerate(("ann", "bob"), 1):
        tables.cast(club, "t0", untagged, name, die)
    tables.call_main(club, "t0", untagged, 7)
    tables.throw(club, "t0", untagged, 6, 6)
    first = api.client("croupier", "cecil")
    _open(first, "t1")
    _throw(first, "t1", [(3, 4)])
    [gone] = [t for t in listing(api.book.store.engine) if t.name == "cecil"]
    revoke(api.book.store.engine, gone.id)
    second = Client(api.app.test_client(), create(api.book.store.engine, Role.CROUPIER, "cecil"))
    _open(second, "t2")
    _throw(second, "t2", [(2, 2), (1, 3)])
    [today] = [t for t in listing(api.book.store.engine) if t.name == "cecil" and not t.revoked_at]

    def thrown(croupier: str) -> Counter[Dice]:
        return _pairs(_report(bank, croupier=croupier))

    assert thrown("cecil") == Counter({(6, 6): 1, (3, 4): 1, (2, 2): 1, (1, 3): 1})
    assert thrown(f"cecil#{gone.tag}") == Counter({(3, 4): 1})
    assert thrown(f"cecil#{today.tag}") == Counter({(2, 2): 1, (1, 3): 1})
    assert thrown("dora") == Counter()
