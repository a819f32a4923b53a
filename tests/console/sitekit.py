"""The console served once for a module of browser checks (test_axe.py,
test_widths.py): pagekit's evening played to its betting stage (a laid stake waiting
for its cover, a side bet waiting for a taker, a server-dice throw for ann to send,
a dispute, a receipt), every role's pages found, and a browser context signed in as
each role in turn. The checks only read, so one served app serves the whole module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ledger.store import db
from ledger.store.eventstore import EventStore
from tests.api.conftest import Api
from tests.console import pagekit
from tests.console.conftest import Served, serving, sign_in
from tests.signing import SIGNER


@dataclass
class Site:
    served: Served
    pages: dict[str | None, tuple[str | None, list[pagekit.Page]]]
    """For each role (None: no one signed in), its token and the pages it reaches."""


@contextmanager
def evening_site(folder: Path) -> Iterator[Site]:
    engine = db.make_engine(f"sqlite:///{folder / 'site.sqlite3'}")
    db.upgrade(engine)
    store = EventStore(engine, signer=SIGNER)
    try:
        with serving(store) as served:
            api = Api(served.app)
            played = pagekit.played_to(api, "betting")
            yield Site(served, pagekit.every_page(served.app, api, played.ids))
    finally:
        store.close()
        engine.dispose()


@contextmanager
def as_role(browser: Any, site: Site, role: str | None, width: int = 1280) -> Iterator[Any]:
    """A tab of a fresh browser context, signed in as `role` (no one, for None)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    held = site.pages[role][0]
    try:
        if held is not None:
            sign_in(tab, site.served.url, held)
        yield tab
    finally:
        context.close()


def visit(tab: Any, url: str) -> Any:
    """Open `url` and let it settle: its scripts run, and what they fetch (the player's
    receipts checked, the verify page's steps) answered. A table's view polls once a
    second, so the network is never idle for long: a page that stays busy is read as
    it is after three seconds."""
    answer = tab.goto(url)
    with suppress(PlaywrightTimeout):
        tab.wait_for_load_state("networkidle", timeout=3_000)
    return answer


def each_width(
    browser: Any,
    site: Site,
    role: str | None,
    widths: tuple[int, ...],
    loaded: Callable[[Any, pagekit.Page, Any], None] = lambda tab, page, answer: None,
) -> Iterator[tuple[pagekit.Page, int, Any]]:
    """Every page `role` reaches, visited as that role and laid out again at each of
    `widths` (as a turned tablet is): the page, the width and the tab, laid out. Each
    page's `loaded(tab, page, answer)` runs once it has loaded, before its widths."""
    _, pages = site.pages[role]
    with as_role(browser, site, role) as tab:
        for page in pages:
            loaded(tab, page, visit(tab, site.served.url + page.url))
            for width in widths:
                tab.set_viewport_size({"width": width, "height": 900})
                yield page, width, tab
