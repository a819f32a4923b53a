"""The table page says a refusal that names an amount in the club's money, from the
amounts the refusal gives as data (engine.errors.RuleBroken.amounts, the books'
Overdraft), where the API says minor units: a lay beyond the player's funds, a cover
beyond the caster's, an odds stake that does not pay exactly, odds over the limit.
Through Flask's test client, on SQLite and PostgreSQL; nothing is written."""

from __future__ import annotations

from typing import Any

from ledger.commands import tables
from tests.api.conftest import Api
from tests.console.formkit import CECIL, HTMX, count, form, playing


def refused(api: Api, client: Any, rule: str, **fields: str) -> str:
    """The table's answer to a form it refuses, which writes nothing."""
    before = count(api)
    answer = client.post(f"/console/tables/t1/do/{rule}", data=form(client, **fields), headers=HTMX)
    assert answer.status_code == 422
    assert count(api) == before
    return str(answer.get_data(as_text=True))


def test_a_refusal_naming_an_amount_is_said_in_the_clubs_money(api: Api) -> None:
    croupier, club = playing(api)  # ann and bob hold £5.00 each
    tables.stake(club, "t1", CECIL, 100)
    page = refused(api, croupier, "lays", player="bob", amount="6.00", key="k-over")
    assert (
        "not enough funds (overdraft): bob would stand at -£1.00, and they have no credit" in page
    )
    laid = tables.lay(club, "t1", CECIL, "bob", 450)["events"][0]["payload"]["bet_id"]
    page = refused(api, croupier, "covers", bet=laid, key="k-cover")
    assert "the caster has £4.00 free but the stakes to cover come to £4.50" in page
    tables.refuse(club, "t1", CECIL, laid)
    tables.call_main(club, "t1", CECIL, 7)
    tables.throw(club, "t1", CECIL, 1, 4)  # a chance of 5: odds of 3/2 on the chance
    page = refused(api, croupier, "odds", player="ann", on="chance", amount="0.25", key="k-3")
    assert (
        "odds of 3/2 on a stake of £0.25 would pay £0.37 and 1/2 of a penny; the nearest "
        "stakes that pay exactly are £0.24 and £0.26 (rule payout-not-payable)"
    ) in page
    page = refused(api, croupier, "odds", player="ann", on="chance", amount="1.02", key="k-4")
    assert "the original stake of £1.00: £1.00 more may be laid (rule odds-limit)" in page
