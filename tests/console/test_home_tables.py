"""The home page's tables, newest first and a page at a time (ledger.console.views'
TABLES, here 2), on SQLite and PostgreSQL: every table is reached by following "Older
tables" to the end, once each, and a `before` that is not a position is refused by name;
the audit pages offer the newest tables and take any table's name."""

from __future__ import annotations

import re

import pytest

from ledger.console import views
from tests.api.conftest import Api
from tests.console.officekit import console, evening


def _tables(page: str) -> list[str]:
    return re.findall(r'<li><a href="/console/tables/([^"]+)">', page)


def test_the_home_page_lists_the_tables_newest_first(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    night = evening(api)
    for table in ("t2", "t3", "t4", "t5"):
        night.bank.ok("post", "/tables", {"id": table})
    monkeypatch.setattr(views, "TABLES", 2)
    setter = console(api, "setter", "bank")
    seen, url = [], "/"
    while url:
        page = setter.get(url).get_data(as_text=True)
        shown = _tables(page)
        assert 1 <= len(shown) <= 2, page
        seen += shown
        older = re.search(r'<a href="(/\?before=\d+)">Older tables</a>', page)
        url = older.group(1) if older else ""
    assert seen == ["t5", "t4", "t3", "t2", "t1"]


def test_a_before_that_is_no_position_is_refused(api: Api) -> None:
    evening(api)
    setter = console(api, "setter", "bank")
    for bad in ("x", "0", "-3"):
        answer = setter.get(f"/?before={bad}")
        assert answer.status_code == 400 and "before" in answer.get_data(as_text=True), bad


def test_the_audit_pages_take_any_table(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    night = evening(api)
    night.bank.ok("post", "/tables", {"id": "t2"})
    monkeypatch.setattr(views, "TABLES", 1)
    setter = console(api, "setter", "bank")
    audit = setter.get("/console/audit").get_data(as_text=True)
    assert '<option value="t2">' in audit and '<option value="t1">' not in audit
    # t1, older than those offered, by name all the same.
    replay = setter.get("/console/audit/replay?table=t1&round=1")
    assert replay.status_code == 302 and "/replay/t1/1" in replay.headers["Location"]
    fair = setter.get("/console/audit/fairness?table=t1")
    assert fair.status_code == 200 and "table t1" in fair.get_data(as_text=True)
