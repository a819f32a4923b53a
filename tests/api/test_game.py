"""An evening of Hazard over HTTP, under the english rule set, from the deposits to the
closing of the table, with every balance and settlement worked out by hand.

The english rules (rule texts 000, 001, 003, 004): the caster calls a main of 5 to 9;
the first throw nicks (the main; 11 on a main of 7; 12 on 6 or 8), throws out (2 or 3
always; 11 and 12 on 5 or 9; 11 on 6 or 8; 12 on 7) or sets the chance; once a chance is
set, the chance wins and the main loses. After three losses in a row the dice pass to
the left, on their own: the caster may not hand them on by choice.

Money: in the caster's stake against the setter, a stake laid against the caster (which
the caster matches or refuses) and a side bet, each side puts up its own stake and the
winner takes both; odds bets on the chance or the main pay at Hoyle's fair odds, ways(main) to
ways(chance) on the chance and the inverse on the main, up to the bettor's original
stake on the round. On two dice: 2:1, 3:2, 4:3, 5:4, 6:5, 7:6, 8:5, 9:4, 10:3, 11:2, 12:1
ways.

| round | caster | main | throws                           | outcome                       |
|-------|--------|------|----------------------------------|-------------------------------|
| 1     | ann    | 7    | 5-6                              | nick (11 nicks a main of 7)   |
| 2     | ann    | 6    | 1-1                              | out (ames-ace)                |
| 3     | ann    | 7    | 1-3, 2-3, 3-4                    | chance 4, lost to the main    |
| 4     | ann    | 8    | 5-6                              | out (11 on 8): third loss,    |
|       |        |      |                                  | the dice pass to bob          |
| 5     | bob    | 9    | cocked, 4-6, wild, 3-3, 5-5      | chance 10, won                |
| 6     | bob    | 6    | 6-6                              | nick (12 nicks a main of 6)   |
| 7     | bob    | -    | (the table closes)               | an offer nobody took, voided; |
|       |        |      |                                  | the round abandoned           |
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.api.gamekit import Evening, account, bet_id, events_of

TABLE = "t1"


def won(bet: str, kind: str, winner: str, pot: int) -> dict[str, Any]:
    """A bet settled: its whole escrow, `pot`, paid to `winner`."""
    return {
        "bet_id": bet,
        "kind": kind,
        "outcome": "settled",
        "winner": winner,
        "reason": None,
        "transfers": [
            {"source": f"escrow:{TABLE}:{bet}", "target": account(winner), "amount": pot}
        ],
    }


def voided(bet: str, kind: str, reason: str, refunds: dict[str, int]) -> dict[str, Any]:
    """A bet voided: each stake held returned to whoever put it up."""
    return {
        "bet_id": bet,
        "kind": kind,
        "outcome": "voided",
        "winner": None,
        "reason": reason,
        "transfers": sorted(
            (
                {"source": f"escrow:{TABLE}:{bet}", "target": account(party), "amount": amount}
                for party, amount in refunds.items()
            ),
            key=lambda t: t["target"],
        ),
    }


def side(player: str, kind: str, backs: bool, stake: int, asks: int, **more: Any) -> dict[str, Any]:
    """The body of a side-bet offer."""
    return {
        "player": player,
        "proposition": {"kind": kind, "totals": more.pop("totals", [])},
        "backs": backs,
        "stake": stake,
        "asks": asks,
        "to": more.pop("to", None),
    }


def test_an_evening_at_the_hazard_table(api: Api) -> None:
    night = Evening(api, TABLE, deposits={"ann": 1000, "bob": 1000, "cat": 1000, "setter": 10_000})
    croupier, bank = night.croupier, night.bank
    assert night.balances() == {"ann": 1000, "bob": 1000, "cat": 1000, "setter": 10_000}

    # -- the table opens; ann, bob and cat sit down in that order (bob on ann's left,
    # cat on bob's); each casts one die, lowest to cast first, ties casting again.
    croupier.ok("post", "/tables", {"id": TABLE, "ruleset": "english"})
    for name in ("ann", "bob", "cat"):
        night.do(croupier, "seats", {"player": name})
    night.do(croupier, "casts", {"player": "ann", "die": 2})
    night.do(croupier, "casts", {"player": "bob", "die": 2})
    night.do(croupier, "casts", {"player": "cat", "die": 5})
    state = night.state()
    assert (state["phase"], state["caster"]) == ("seating", None)  # ann and bob tied at 2
    night.refused(croupier, "casts", {"player": "cat", "die": 1}, rule="not-your-cast")
    night.do(croupier, "casts", {"player": "ann", "die": 3})
    answer = night.do(croupier, "casts", {"player": "bob", "die": 6})
    assert events_of(answer, "CasterChosen") == [{"player": "ann"}]
    state = night.state()
    assert (state["phase"], state["caster"], state["round"]) == ("awaiting-main", "ann", 1)

    # -- round 1: ann calls 7 and nicks with 11 ------------------------------------------
    r1_stake = bet_id(night.do("ann", "stakes", {"amount": 100}), "CasterStaked")
    r1_bob = bet_id(night.do("bob", "lays", {"player": "bob", "amount": 60}), "StakeLaid")
    r1_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 40}), "StakeLaid")
    night.do("ann", "covers", {"bets": [r1_bob]})
    night.do("ann", "refusals", {"bet": r1_cat})  # ann will not play cat: cat has her 40 back
    # cat backs a nick at 20 against 60 from bob, who takes it (a nick on 7 is 8 ways
    # in 36: fair odds would be 7 to 2).
    r1_nick = bet_id(
        night.do("cat", "side-bets", side("cat", "nick-first-throw", True, 20, 60, to="bob")),
        "SideBetOffered",
    )
    night.do("bob", "side-bets/accept", {"player": "bob", "bet": r1_nick})
    # bob offers 25 against ann to anyone at evens, thinks better of it, and withdraws.
    r1_offer = bet_id(
        night.do("bob", "side-bets", side("bob", "caster-wins", False, 25, 25)), "SideBetOffered"
    )
    assert night.in_escrow() == (
        (100 + 100)  # ann's stake and the setter's
        + (60 + 60)  # bob's laid stake and ann's cover (cat's 40 went back to her)
        + (20 + 60)  # cat's nick bet and bob's side of it
        + 25  # bob's offer, not yet taken
    )
    night.do("bob", "side-bets/withdraw", {"player": "bob", "bet": r1_offer})
    night.do(croupier, "main", {"main": 7})
    answer = night.do(croupier, "throws", {"die1": 5, "die2": 6})
    assert {e["bet_id"]: e["winner"] for e in events_of(answer, "BetSettled")} == {
        r1_stake: "ann",
        r1_bob: "ann",
        r1_nick: "cat",
    }
    ann = (
        1000
        + 100  # her stake of 100 against the setter, won at even money on the nick
        + 60  # bob's 60 laid against her, which she covered, won
    )
    bob = (
        1000
        - 60  # his 60 laid against ann, lost
        - 60  # the 60 he put up against cat's nick, lost
        # (his offer of 25 was withdrawn and returned)
    )
    cat = (
        1000
        # (her 40 laid against ann was refused and returned)
        + 60  # her 20 on the nick won bob's 60
    )
    setter = 10_000 - 100  # ann's stake of 100, lost
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    assert night.in_escrow() == 0
    state = night.state()
    assert (state["caster"], state["consecutive_wins"], state["round"]) == ("ann", 1, 2)
    # Under english rules the dice pass only after three losses: a winner keeps them.
    night.refused("ann", "pass", None, rule="pass-not-allowed")

    # -- round 2: ann calls 6 and throws out with ames-ace -------------------------------
    r2_stake = bet_id(night.do("ann", "stakes", {"amount": 50}), "CasterStaked")
    r2_bob = bet_id(night.do("bob", "lays", {"player": "bob", "amount": 40}), "StakeLaid")
    r2_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 30}), "StakeLaid")
    night.do("ann", "covers", {})  # every stake waiting: 40 + 30
    # cat offers 30 against ann at evens to anyone; the setter takes it.
    r2_side = bet_id(
        night.do("cat", "side-bets", side("cat", "caster-wins", False, 30, 30)), "SideBetOffered"
    )
    night.do(bank, "side-bets/accept", {"player": "setter", "bet": r2_side})
    night.do(croupier, "main", {"main": 6})
    night.do(croupier, "throws", {"die1": 1, "die2": 1})
    ann = (
        ann
        - 50  # her stake against the setter, lost: 2 throws out
        - 40  # bob's stake, covered, lost
        - 30  # cat's stake, covered, lost
    )
    bob = bob + 40  # his 40 laid against ann won her 40
    cat = (
        cat
        + 30  # her 30 laid against ann won ann's 30
        + 30  # her 30 against ann won the setter's 30
    )
    setter = (
        setter
        + 50  # ann's stake of 50, won
        - 30  # cat's side bet, lost
    )
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    state = night.state()
    assert (state["caster"], state["consecutive_losses"]) == ("ann", 1)

    # -- round 3: ann calls 7, sets a chance of 4, and throws the main -------------------
    r3_stake = bet_id(night.do("ann", "stakes", {"amount": 100}), "CasterStaked")
    r3_bob = bet_id(night.do("bob", "lays", {"player": "bob", "amount": 80}), "StakeLaid")
    r3_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 50}), "StakeLaid")
    night.do("ann", "covers", {"bets": [r3_bob, r3_cat]})
    night.do(croupier, "main", {"main": 7})
    # No odds before the chance is set.
    night.refused(
        "ann", "odds", {"player": "ann", "on": "chance", "amount": 50}, "odds-before-chance"
    )
    night.do(croupier, "throws", {"die1": 1, "die2": 3})
    state = night.state()
    assert (state["phase"], state["main"], state["chance"]) == ("chance", 7, 4)
    # Odds: 4 is 3 ways, 7 is 6 ways. On the chance 6 to 3, 2 to 1; on the main 1 to 2.
    answer = night.do("ann", "odds", {"player": "ann", "on": "chance", "amount": 50})
    r3_ann_odds = bet_id(answer, "OddsLaid")
    assert events_of(answer, "OddsLaid")[0]["payout"] == 100  # 50 at 2 to 1
    answer = night.do("bob", "odds", {"player": "bob", "on": "main", "amount": 80})
    r3_bob_odds = bet_id(answer, "OddsLaid")
    assert events_of(answer, "OddsLaid")[0]["payout"] == 40  # 80 at 1 to 2
    r3_cat_odds = bet_id(
        night.do("cat", "odds", {"player": "cat", "on": "main", "amount": 30}), "OddsLaid"
    )  # 30 at 1 to 2: the setter lays 15
    # Odds go no further than the original stake: cat laid 50, so 20 more at most.
    detail = night.refused(
        "cat", "odds", {"player": "cat", "on": "main", "amount": 26}, "odds-limit"
    )
    assert "20 more may be laid" in detail
    # bob bets cat 40 to 20 that the main comes first (fair: 6 ways against 3).
    r3_side = bet_id(
        night.do("bob", "side-bets", side("bob", "chance-before-main", False, 40, 20, to="cat")),
        "SideBetOffered",
    )
    night.do("cat", "side-bets/accept", {"player": "cat", "bet": r3_side})
    assert night.in_escrow() == (
        (100 + 100)  # ann's stake and the setter's
        + (80 + 80)  # bob's laid stake and ann's cover
        + (50 + 50)  # cat's laid stake and ann's cover
        + (50 + 100)  # ann's odds and the setter's
        + (80 + 40)  # bob's odds and the setter's
        + (30 + 15)  # cat's odds and the setter's
        + (40 + 20)  # bob's side bet and cat's
    )
    # What the setter stands to lose: what it holds in escrow.
    assert night.state()["setter_exposure"] == (
        100  # matching ann's stake
        + 100  # against ann's 50 odds on the chance
        + 40  # against bob's 80 odds on the main
        + 15  # against cat's 30 odds on the main
    )
    night.do(croupier, "throws", {"die1": 2, "die2": 3})  # 5: neither, throw again
    assert night.state()["phase"] == "chance"
    night.do(croupier, "throws", {"die1": 3, "die2": 4})  # 7: the main, ann loses
    ann = (
        ann
        - 100  # her stake against the setter, lost
        - 80  # bob's stake, covered, lost
        - 50  # cat's stake, covered, lost
        - 50  # her odds on the chance, lost
    )
    bob = (
        bob
        + 80  # his laid stake won ann's 80
        + 40  # his 80 odds on the main won the setter's 40
        + 20  # his 40 on the main first won cat's 20
    )
    cat = (
        cat
        + 50  # her laid stake won ann's 50
        + 15  # her 30 odds on the main won the setter's 15
        - 20  # her 20 on the chance first, lost to bob
    )
    setter = (
        setter
        + 100  # ann's stake, won
        + 50  # ann's odds, won
        - 40  # bob's odds on the main, lost
        - 15  # cat's odds on the main, lost
    )
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    state = night.state()
    assert (state["caster"], state["consecutive_losses"]) == ("ann", 2)

    # -- round 4: ann calls 8 and throws out with 11, her third loss: the dice pass ------
    r4_stake = bet_id(night.do("ann", "stakes", {"amount": 40}), "CasterStaked")
    r4_bob = bet_id(night.do("bob", "lays", {"player": "bob", "amount": 40}), "StakeLaid")
    r4_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 20}), "StakeLaid")
    night.do("ann", "covers", {})
    # cat backs ann for 30 at evens; bob takes it.
    r4_side = bet_id(
        night.do("cat", "side-bets", side("cat", "caster-wins", True, 30, 30)), "SideBetOffered"
    )
    night.do("bob", "side-bets/accept", {"player": "bob", "bet": r4_side})
    night.do(croupier, "main", {"main": 8})
    answer = night.do(croupier, "throws", {"die1": 5, "die2": 6})
    assert events_of(answer, "DicePassed") == [{"caster": "bob", "reason": "3-losses"}]
    ann = (
        ann
        - 40  # her stake against the setter, lost: 11 throws out on 8
        - 40  # bob's stake, covered, lost
        - 20  # cat's stake, covered, lost
    )
    bob = (
        bob
        + 40  # his laid stake won ann's 40
        + 30  # he took cat's 30 on ann, and won it
    )
    cat = (
        cat
        + 20  # her laid stake won ann's 20
        - 30  # her 30 on ann, lost to bob
    )
    setter = setter + 40  # ann's stake, won
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    state = night.state()
    assert (state["caster"], state["consecutive_losses"], state["round"]) == ("bob", 0, 5)

    # -- round 5: bob calls 9; a cocked die; chance 10; a wild throw; bob wins -----------
    r5_stake = bet_id(night.do("bob", "stakes", {"amount": 100}), "CasterStaked")
    r5_ann = bet_id(night.do("ann", "lays", {"player": "ann", "amount": 60}), "StakeLaid")
    r5_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 50}), "StakeLaid")
    night.do("bob", "covers", {})
    # cat bets ann 10 to 50 that the next throw that counts is 2, 3, 11 or 12 (6 ways in
    # 36: fair at 1 to 5).
    r5_next = bet_id(
        night.do(
            "cat",
            "side-bets",
            side("cat", "next-total", True, 10, 50, totals=[2, 3, 11, 12], to="ann"),
        ),
        "SideBetOffered",
    )
    night.do("ann", "side-bets/accept", {"player": "ann", "bet": r5_next})
    night.do(croupier, "main", {"main": 9})
    # Die 1 lands cocked; die 2 stands on 6 and only die 1 is cast again. The void
    # throw decides nothing, not even the bet on the next throw.
    answer = night.do(croupier, "void-throws", {"reason": "cocked", "off": 1, "standing": 6})
    assert [e["type"] for e in answer["events"]] == ["ThrowVoided"]
    night.refused(croupier, "throws", {"die1": 4, "die2": 5}, "recast-must-keep-standing-die")
    answer = night.do(croupier, "throws", {"die1": 4, "die2": 6})  # 10: the chance
    assert {e["bet_id"]: e["winner"] for e in events_of(answer, "BetSettled")} == {r5_next: "ann"}
    state = night.state()
    assert (state["phase"], state["main"], state["chance"]) == ("chance", 9, 10)
    # Odds: 10 is 3 ways, 9 is 4 ways. On the chance 4 to 3; on the main 3 to 4.
    answer = night.do("bob", "odds", {"player": "bob", "on": "chance", "amount": 60})
    r5_bob_odds = bet_id(answer, "OddsLaid")
    assert events_of(answer, "OddsLaid")[0]["payout"] == 80  # 60 at 4 to 3
    answer = night.do("ann", "odds", {"player": "ann", "on": "main", "amount": 40})
    r5_ann_odds = bet_id(answer, "OddsLaid")
    assert events_of(answer, "OddsLaid")[0]["payout"] == 30  # 40 at 3 to 4
    # 50 at 3 to 4 would pay 37.5: stakes must come in fours.
    detail = night.refused(
        "cat", "odds", {"player": "cat", "on": "main", "amount": 50}, "payout-not-payable"
    )
    # cat's stake on the round is 50, so 52 is past her odds limit and is not named.
    assert detail.endswith("(at most 50) is 48")
    answer = night.do("cat", "odds", {"player": "cat", "on": "main", "amount": 48})
    r5_cat_odds = bet_id(answer, "OddsLaid")
    assert events_of(answer, "OddsLaid")[0]["payout"] == 36  # 48 at 3 to 4
    # Both dice fly off the table: both are cast again.
    night.do(croupier, "void-throws", {"reason": "wild", "off": 0, "standing": None})
    night.do(croupier, "throws", {"die1": 3, "die2": 3})  # 6: neither, throw again
    night.do(croupier, "throws", {"die1": 5, "die2": 5})  # 10: the chance, bob wins
    ann = (
        ann
        + 10  # her 50 against cat's 10 on the next throw won (10 is not 2, 3, 11, 12)
        - 60  # her 60 laid against bob, lost
        - 40  # her 40 odds on the main, lost
    )
    bob = (
        bob
        + 100  # his stake against the setter, won
        + 60  # ann's stake, covered, won
        + 50  # cat's stake, covered, won
        + 80  # his 60 odds on the chance won the setter's 80
    )
    cat = (
        cat
        - 10  # her 10 on the next throw, lost to ann
        - 50  # her 50 laid against bob, lost
        - 48  # her 48 odds on the main, lost
    )
    setter = (
        setter
        - 100  # bob's stake, lost
        - 80  # bob's odds, lost
        + 40  # ann's odds, won
        + 48  # cat's odds, won
    )
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    state = night.state()
    assert (state["caster"], state["consecutive_wins"], state["round"]) == ("bob", 1, 6)

    # -- round 6: bob calls 6 and nicks with 12 ------------------------------------------
    r6_stake = bet_id(night.do("bob", "stakes", {"amount": 50}), "CasterStaked")
    r6_cat = bet_id(night.do("cat", "lays", {"player": "cat", "amount": 50}), "StakeLaid")
    night.do("bob", "covers", {"bets": [r6_cat]})
    night.do(croupier, "main", {"main": 6})
    night.do(croupier, "throws", {"die1": 6, "die2": 6})
    bob = (
        bob
        + 50  # his stake against the setter, won on the nick
        + 50  # cat's stake, covered, won
    )
    cat = cat - 50  # her laid stake, lost
    setter = setter - 50  # bob's stake, lost
    assert night.balances() == {"ann": ann, "bob": bob, "cat": cat, "setter": setter}
    state = night.state()
    assert (state["caster"], state["consecutive_wins"], state["round"]) == ("bob", 2, 7)

    # -- round 7 never starts: ann offers 10 to 50 on a 7 next, nobody takes it, and the
    # table closes; her 10 comes back.
    r7_offer = bet_id(
        night.do("ann", "side-bets", side("ann", "next-total", True, 10, 50, totals=[7])),
        "SideBetOffered",
    )
    assert night.balance("ann") == ann - 10
    assert night.in_escrow() == 10
    night.do(croupier, "close")
    assert night.state()["phase"] == "closed"
    assert night.in_escrow() == 0

    # -- the evening's result, figure by figure ------------------------------------------
    # Each one's net result per round, 1 to 6:
    assert (ann, bob, cat, setter) == (
        1000 + 160 - 120 - 280 - 100 - 90 + 0,  # 570
        1000 - 120 + 40 + 140 + 70 + 290 + 100,  # 1520
        1000 + 60 + 60 + 45 - 10 - 108 - 50,  # 997
        10_000 - 100 + 20 + 95 + 40 - 92 - 50,  # 9913
    )
    assert night.balances() == {"ann": 570, "bob": 1520, "cat": 997, "setter": 9913}
    assert 570 + 1520 + 997 + 9913 == 1000 + 1000 + 1000 + 10_000  # nothing made or lost

    # -- the settlements, round by round -------------------------------------------------
    expected = {
        1: [
            voided(r1_cat, "laid", "refused", {"cat": 40}),
            voided(r1_offer, "side", "withdrawn", {"bob": 25}),
            won(r1_stake, "caster", "ann", 100 + 100),
            won(r1_bob, "laid", "ann", 60 + 60),
            won(r1_nick, "side", "cat", 20 + 60),
        ],
        2: [
            won(r2_stake, "caster", "setter", 50 + 50),
            won(r2_bob, "laid", "bob", 40 + 40),
            won(r2_cat, "laid", "cat", 30 + 30),
            won(r2_side, "side", "cat", 30 + 30),
        ],
        3: [
            won(r3_stake, "caster", "setter", 100 + 100),
            won(r3_bob, "laid", "bob", 80 + 80),
            won(r3_cat, "laid", "cat", 50 + 50),
            won(r3_ann_odds, "odds", "setter", 50 + 100),
            won(r3_bob_odds, "odds", "bob", 80 + 40),
            won(r3_cat_odds, "odds", "cat", 30 + 15),
            won(r3_side, "side", "bob", 40 + 20),
        ],
        4: [
            won(r4_stake, "caster", "setter", 40 + 40),
            won(r4_bob, "laid", "bob", 40 + 40),
            won(r4_cat, "laid", "cat", 20 + 20),
            won(r4_side, "side", "bob", 30 + 30),
        ],
        5: [
            won(r5_next, "side", "ann", 10 + 50),  # decided by the first throw that counted
            won(r5_stake, "caster", "bob", 100 + 100),
            won(r5_ann, "laid", "bob", 60 + 60),
            won(r5_cat, "laid", "bob", 50 + 50),
            won(r5_bob_odds, "odds", "bob", 60 + 80),
            won(r5_ann_odds, "odds", "setter", 40 + 30),
            won(r5_cat_odds, "odds", "setter", 48 + 36),
        ],
        6: [
            won(r6_stake, "caster", "bob", 50 + 50),
            won(r6_cat, "laid", "bob", 50 + 50),
        ],
        7: [voided(r7_offer, "side", "table-closed", {"ann": 10})],
    }
    keys = ("bet_id", "kind", "outcome", "winner", "reason", "transfers")
    everything = night.settlements()
    assert [s["position"] for s in everything] == sorted(s["position"] for s in everything)
    for number, bets in expected.items():
        items = night.settlements(round=number)
        assert all((s["table"], s["round"]) == (TABLE, number) for s in items)
        got = [{k: s[k] for k in keys} for s in items]
        for s in got:
            s["transfers"] = sorted(s["transfers"], key=lambda t: t["target"])
        assert got == bets, f"round {number}"
    assert len(everything) == sum(len(bets) for bets in expected.values())
    assert night.settlements(limit=4) == everything  # walked four at a time, the same

    # Each settlement names the events it came from: those that placed the bet and took
    # its other side, the act that decided it, and itself.
    events = {
        e["position"]: e
        for number in range(1, 8)
        for e in night.auditor.ok("get", f"/tables/{TABLE}/rounds/{number}")["events"]
    }

    def sources(bet: str) -> list[tuple[str, dict[str, Any]]]:
        [settlement] = night.settlements(bet=bet)
        return [(events[p]["type"], events[p]["payload"]) for p in settlement["sources"]]

    offered, accepted, thrown, settled = sources(r5_next)
    assert offered[0] == "SideBetOffered" and accepted[0] == "SideBetAccepted"
    assert thrown == ("DiceThrown", {"die1": 4, "die2": 6})  # not the cocked throw before it
    assert settled[0] == "BetSettled"
    assert [kind for kind, _ in sources(r1_cat)] == ["StakeLaid", "BetVoided"]
    laid_then_covered = ["StakeLaid", "StakeCovered", "DiceThrown", "BetSettled"]
    assert [kind for kind, _ in sources(r3_bob)] == laid_then_covered
    assert [kind for kind, _ in sources(r7_offer)] == ["SideBetOffered", "BetVoided", "TableClosed"]

    # A player's settlements are those of the bets they were party to. cat's: her laid
    # stake refused and her nick bet in round 1; her laid stake and side bet in round 2;
    # her laid stake, odds and side bet in round 3; laid stake and side bet in round 4;
    # next-throw bet, laid stake and odds in round 5; her laid stake in round 6.
    assert len(night.settlements(player="cat")) == 2 + 2 + 3 + 2 + 3 + 1
    [one] = night.settlements(bet=r3_ann_odds)
    assert one["winner"] == "setter"

    # -- the rounds, as the table recorded them ------------------------------------------
    rounds = [
        (r["round"], r["caster"], r["main"], r["chance"], r["result"]) for r in night.rounds()
    ]
    assert rounds == [
        (1, "ann", 7, None, "nick"),
        (2, "ann", 6, None, "out"),
        (3, "ann", 7, 4, "main"),
        (4, "ann", 8, None, "out"),
        (5, "bob", 9, 10, "chance"),
        (6, "bob", 6, None, "nick"),
        (7, "bob", None, None, "abandoned"),  # the table closed with the round undecided
    ]
