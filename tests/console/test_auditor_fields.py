"""The auditor reads each event's payload as fields (ledger.console.payloads): a
definition list, money in the club's currency, accounts by whose they are, times in the
club's zone to the second; never the raw JSON.

The evening is test_office_pages' (ann stakes 100, calls 7, throws 3+4: a nick)."""

from __future__ import annotations

import html
import re

from ledger.console import payloads
from ledger.house import House
from tests.api.conftest import Api
from tests.console.officekit import console, evening

STORED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _events_table(page: str) -> str:
    found = re.search(r'<table class="events">.*?</table>', page, re.S)
    assert found
    return html.unescape(found.group(0))


def test_the_event_log_shows_each_payload_as_fields(sqlite_api: Api) -> None:
    evening(sqlite_api)
    page = console(sqlite_api, "auditor", "audrey").get("/console/audit?after=0").text
    log = _events_table(page)
    assert re.search(
        r'<dl class="payload"><div><dt>amount</dt><dd>£1.00</dd></div>'
        r"<div><dt>bet</dt><dd>b\d+</dd></div><div><dt>caster</dt><dd>ann</dd></div></dl>",
        log,
    )
    assert "<dt>first die</dt><dd>3</dd>" in log and "<dt>second die</dt><dd>4</dd>" in log
    assert "<dt>account</dt><dd>ann</dd>" in log and "<dt>amount</dt><dd>£10.00</dd>" in log
    # A settlement's transfers, one a line: from the bet's stakes to ann, £2.00.
    assert re.search(r"<dt>1</dt><dd>bet b\d+'s stakes → ann: £2.00</dd>", log)
    assert "<dt>breakage</dt><dd>none</dd>" in log
    # A nested value (the table's limits) as a list of its own.
    assert re.search(
        r"<dt>limits</dt><dd><dl class=\"payload\">.*?<dt>min stake</dt><dd>£0.01</dd>", log
    )
    # No JSON, and no stored time: each in the club's zone, to the second.
    assert '{"' not in log and '"amount"' not in log
    assert not STORED_TIME.search(log)
    assert re.search(r"<td>\d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d UTC</td>", log)


def test_a_replay_step_shows_its_event_as_fields(sqlite_api: Api) -> None:
    evening(sqlite_api)
    auditor = console(sqlite_api, "auditor", "audrey")
    # What the page shows, in <main>: the head holds htmx's config, which is JSON.
    staked = html.unescape(auditor.get("/console/audit/replay/t1/1?step=2").text)
    staked = staked.split("<main", 1)[1]
    assert re.search(r"<dt>amount</dt><dd>£1.00</dd>", staked)
    assert '{"' not in staked and not STORED_TIME.search(staked)
    settled = html.unescape(auditor.get("/console/audit/replay/t1/1?step=5").text)
    assert re.search(r"bet b\d+'s stakes → ann: £2.00", settled)
    assert "<dt>winner</dt><dd>ann</dd>" in settled


def test_the_auditor_s_nav_leads_to_the_tables(sqlite_api: Api) -> None:
    auditor = console(sqlite_api, "auditor", "audrey")
    for path in ("/", "/console/audit"):
        page = auditor.get(path).text
        nav = re.search(r'<nav aria-label="Console">.*?</nav>', page, re.S)
        assert nav and '<a href="/">Tables</a>' in nav.group(0), path


def test_a_breakage_is_said_as_part_of_the_clubs_smallest_coin() -> None:
    """An odds payout rounded down keeps part of a minor unit (the codec stores "1/2"):
    the payload says it as part of a penny, not of a "minor unit"."""
    assert payloads.fields({"breakage": "1/2"}, House()) == [
        payloads.Field("breakage", "1/2 of a penny, kept by the table")
    ]
    assert payloads.fields({"breakage": "0"}, House()) == [payloads.Field("breakage", "none")]
    yen = House("JPY", 0)
    assert payloads.fields({"breakage": "2/3"}, yen)[0].text == "2/3 of a yen, kept by the table"
