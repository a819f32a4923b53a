"""A table played over HTTP, for tests that tell a whole game.

    night = Evening(api, "t1", deposits={"ann": 1000, "bob": 1000, "setter": 10_000})
    answer = night.do("ann", "stakes", {"amount": 100})     # ann's own token
    night.do(night.croupier, "throws", {"die1": 3, "die2": 4})
    night.refused("ann", "pass", None, rule="pass-not-allowed")

Every write goes through `do`, which checks that it succeeded and that no money was
made or lost by it: the players' and the setter's balances, with what the bets at the
table hold in escrow, still come to what was deposited. The figures a test expects
are its own, worked by hand; nothing here asks the engine for one.
"""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api, Client


class Evening:
    def __init__(self, api: Api, table: str, deposits: dict[str, int]) -> None:
        self.api, self.table = api, table
        self.bank = api.client()  # the setter: deposits, and its own side of side bets
        self.croupier = api.client("croupier", "cecil")  # runs the table
        self.auditor = api.client("auditor", "audrey")  # reads every balance
        self.names = [name for name in deposits if name != "setter"]
        self.deposited = sum(deposits.values())
        for name, amount in deposits.items():
            if name != "setter":
                self.bank.ok("post", "/players", {"name": name})
            self.bank.ok("post", f"/players/{name}/deposits", {"amount": amount})
        # A player's token is made for a player who exists.
        self.players = {name: api.client("player", name) for name in self.names}

    # -- writes -------------------------------------------------------------------------

    def _client(self, who: Client | str) -> Client:
        return self.players[who] if isinstance(who, str) else who

    def do(self, who: Client | str, action: str, body: Any = None) -> dict[str, Any]:
        """POST /tables/<table>/<action> as `who` (a player's name or a client)."""
        client = self._client(who)
        path = f"/tables/{self.table}/{action}"
        response = client.post(path, json=body)
        assert response.status_code == 201, (path, body, response.status_code, response.json)
        self.check_conserved()
        answer: dict[str, Any] = response.get_json()
        return answer

    def refused(self, who: Client | str, action: str, body: Any, rule: str) -> str:
        """The write is refused for breaking `rule`, and changes nothing; its detail."""
        before = self.state()["version"], self.balances()
        path = f"/tables/{self.table}/{action}"
        response = self._client(who).post(path, json=body)
        problem = response.get_json()
        assert response.status_code == 422, (path, body, response.status_code, problem)
        assert problem["type"] == f"urn:hazard:rule:{rule}", (path, body, problem)
        assert (self.state()["version"], self.balances()) == before
        detail: str = problem["detail"]
        return detail

    # -- reads --------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.croupier.ok("get", f"/tables/{self.table}")
        return state

    def balance(self, name: str) -> int:
        balance: int = self.auditor.ok("get", f"/players/{name}/balance")["balance"]
        return balance

    def balances(self) -> dict[str, int]:
        """Every player's balance and the setter's, as GET /players/<name>/balance has them."""
        return {name: self.balance(name) for name in [*self.names, "setter"]}

    def open_bets(self) -> list[dict[str, Any]]:
        """Every open bet of the table's state, page by page."""
        bets: list[dict[str, Any]] = []
        after: int | None = 0
        while after is not None:
            page = self.croupier.ok("get", f"/tables/{self.table}?after={after}&limit=500")
            bets += page["open_bets"]
            after = page["next_after"]
        return bets

    def held(self) -> int:
        """What the table's open bets hold, by the table's state: each side that has
        put up its stake (a stake laid and not yet covered holds the layer's alone)."""
        return sum(
            (bet["yes_stake"] if bet["yes"] is not None else 0)
            + (bet["no_stake"] if bet["no"] is not None else 0)
            for bet in self.open_bets()
        )

    def in_escrow(self) -> int:
        """What the ledger's escrow accounts for this table's bets hold."""
        prefix = f"escrow:{self.table}:"
        return sum(v for k, v in self.api.book.balances().items() if k.startswith(prefix))

    def check_conserved(self) -> None:
        """No money made or lost: balances and escrow come to what was deposited."""
        escrow = self.in_escrow()
        assert escrow == self.held(), "the ledger's escrow and the table's open bets disagree"
        assert sum(self.balances().values()) + escrow == self.deposited

    def settlements(self, **query: Any) -> list[dict[str, Any]]:
        """GET /settlements for this table, every page, in position order."""
        params = {"table": self.table, **query}
        items: list[dict[str, Any]] = []
        after: int | None = None
        while True:
            page_params = dict(params, **({"after": after} if after is not None else {}))
            qs = "&".join(f"{k}={v}" for k, v in page_params.items())
            page = self.auditor.ok("get", f"/settlements?{qs}")
            items += page["items"]
            after = page.get("next_after")
            if after is None or not page["items"]:
                return items

    def rounds(self) -> list[dict[str, Any]]:
        """GET /tables/<table>/rounds, every page."""
        items: list[dict[str, Any]] = []
        after: int | None = None
        while True:
            suffix = f"?after={after}" if after is not None else ""
            page = self.auditor.ok("get", f"/tables/{self.table}/rounds{suffix}")
            items += page["items"]
            after = page.get("next_after")
            if after is None or not page["items"]:
                return items


def nick_then_out(api: Api) -> Evening:
    """Two rounds at t1, as test_replay works them by hand: ann (1000) casts against the
    setter (10,000); she stakes 100, calls 7 and throws 3+4, a nick; then stakes 50,
    calls 7 and throws 1+1, out."""
    night = Evening(api, "t1", deposits={"ann": 1000, "bob": 1000, "setter": 10_000})
    night.bank.ok("post", "/tables", {"id": "t1"})
    for name in ("ann", "bob"):
        night.do(night.croupier, "seats", {"player": name})
    night.do(night.croupier, "casts", {"player": "ann", "die": 1})
    night.do(night.croupier, "casts", {"player": "bob", "die": 3})  # ann casts first
    night.do("ann", "stakes", {"amount": 100})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 3, "die2": 4})  # nick
    night.do("ann", "stakes", {"amount": 50})
    night.do(night.croupier, "main", {"main": 7})
    night.do(night.croupier, "throws", {"die1": 1, "die2": 1})  # out
    return night


def bet_id(answer: dict[str, Any], event_type: str) -> str:
    """The id of the bet the one `event_type` event of a write's answer placed."""
    [found] = [e["payload"]["bet_id"] for e in answer["events"] if e["type"] == event_type]
    bet: str = found
    return bet


def events_of(answer: dict[str, Any], event_type: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in answer["events"] if e["type"] == event_type]


def account(name: str) -> str:
    """A party's account in the club's ledger."""
    return name if name == "setter" else f"player:{name}"
