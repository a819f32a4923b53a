"""The money an export's events move, recounted from the events themselves and held to
the closing record's totals: per ledger account (accounts.transfers_of's names), what
it deposited from cash, was paid out of escrows, staked into them, withdrew to cash,
and what disputes' adjustments moved (verdict.FIGURES, in that order)."""

from __future__ import annotations

from typing import Any

from engine.money import ESCROW as LOCAL_ESCROW
from engine.money import holds
from ledger.books.accounts import CASH, TABLE_PREFIX, book_account, transfers_of
from ledger.exports.verdict import FIGURES, Disagreement, Money, figures_view
from ledger.store.vocabulary import MOVES_MONEY as MOVES_MONEY

_DEPOSITED, _PAID, _STAKED, _WITHDRAWN, _ADJUSTED = range(len(FIGURES))


class Tally:
    def __init__(self) -> None:
        self.figures: dict[str, list[int]] = {}
        """Per ledger account, its FIGURES so far."""
        self.names: dict[str, str] = {}
        """Ledger account names of the players (and the setter) at the tables."""

    def count(self, stream: str, event: Any) -> list[str] | None:
        """Add what the event moves: what it staked into escrows, was paid out of them,
        deposited from cash and withdrew to it. A table's event: the accounts it posts
        to but escrows (each as often as counted), which ledger.exports.offline.complete
        asks of it too; None for any other stream's."""
        if not stream.startswith(TABLE_PREFIX):
            for t in transfers_of(stream, event):
                if t.source == CASH:
                    self._add(t.target, _DEPOSITED, t.amount)
                elif t.target == CASH:
                    self._add(t.source, _WITHDRAWN, t.amount)
            return None
        # A table's transfers are transfers_of's, which maps each side of the engine's
        # holds through accounts.book_account: the non-escrow side, the one counted, is
        # a player or the setter, whose ledger name is looked up once.
        names = self.names
        posted: list[str] = []
        for t in holds(event):
            source, target = t.source, t.target
            if target.startswith(LOCAL_ESCROW):
                if source.startswith(LOCAL_ESCROW):
                    continue
                local, index = source, _STAKED
            elif source.startswith(LOCAL_ESCROW):
                local, index = target, _PAID
            else:  # party to party: a dispute's adjustment, counted on both sides
                for local, amount in ((source, -t.amount), (target, t.amount)):
                    account = names.get(local)
                    if account is None:
                        account = names[local] = book_account(stream, local)
                    self._add(account, _ADJUSTED, amount)
                    posted.append(account)
                continue
            account = names.get(local)
            if account is None:
                account = names[local] = book_account(stream, local)
            self._add(account, index, t.amount)
            posted.append(account)
        return posted

    def _add(self, account: str, index: int, amount: int) -> None:
        figures = self.figures.get(account)
        if figures is None:
            figures = self.figures[account] = [0] * len(FIGURES)
        figures[index] += amount

    def view(self) -> dict[str, dict[str, int]]:
        """As the closing record writes the totals."""
        return {a: figures_view(f) for a, f in sorted(self.figures.items())}

    def totals(self) -> dict[str, Money]:
        """Each account that moved money, as `verify` reports it."""
        return {a: Money(*f) for a, f in sorted(self.figures.items()) if any(f)}

    def check(self, number: int, where: str, said_money: Any) -> None:
        """Hold the closing record's totals (line `number`) to the events'; an account
        whose figures are all zero may be given or left out."""
        if not isinstance(said_money, dict):
            raise Disagreement(number, f"the {where} has no money totals")
        mine = self.view()
        theirs = {a: f for a, f in said_money.items() if not _all_zero(f)}
        if theirs == {a: f for a, f in mine.items() if not _all_zero(f)}:
            return
        for account in sorted(set(theirs) | set(mine)):
            have = mine.get(account, figures_view([0] * len(FIGURES)))
            said = theirs.get(account, figures_view([0] * len(FIGURES)))
            if have != said:
                figures = [
                    f"{k} {said.get(k) if isinstance(said, dict) else said!r}, the events "
                    f"give {have.get(k)}"
                    for k in FIGURES
                    if not isinstance(said, dict) or said.get(k) != have.get(k)
                ]
                raise Disagreement(number, f"the {where} says {account} has " + "; ".join(figures))


def _all_zero(figures: Any) -> bool:
    return isinstance(figures, dict) and not any(figures.values())
