"""docs/api.md's evening in curl runs, against the app, and ends as it says."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.api.conftest import Api

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _commands() -> list[tuple[str, str, object]]:
    block = re.search(r"## An evening, in curl\n.*?```sh\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    commands = []
    for line in block.group(1).splitlines():
        if not line.startswith("api "):
            continue
        words = shlex.split(line.split("  #")[0], comments=False)[1:]
        method = "GET"
        if words[0] == "-X":
            method, words = words[1], words[2:]
        url = words[0].removeprefix("localhost:8000")
        body = json.loads(words[2]) if len(words) > 2 and words[1] == "-d" else None
        commands.append((method, url, body))
    return commands


def test_the_evening_in_the_guide_plays_as_it_says(api: Api) -> None:
    bank = api.client()
    commands = _commands()
    assert len(commands) > 20
    for method, url, body in commands:
        response = getattr(bank, method.lower())(url, json=body) if body is not None else (
            getattr(bank, method.lower())(url)
        )
        assert response.status_code < 300, (method, url, response.get_json())
    # ann's chance of 4 came before her main of 7: she wins the setter's 100 against her
    # stake, bob's 60 she covered, and her 50 of odds on the chance at 2 to 1 (a main of
    # 7 is 6 ways, a chance of 4 is 3), 100.
    assert bank.ok("get", "/players/ann/balance")["balance"] == 1000 + 100 + 60 + 100
    assert bank.ok("get", "/players/bob/balance")["balance"] == 1000 - 60
    assert bank.ok("get", "/players/setter/balance")["balance"] == 100_000 - 100 - 100
    settled = bank.ok("get", "/settlements?table=t1&round=1")["items"]
    assert {(s["kind"], s["winner"]) for s in settled} == {
        ("caster", "ann"),
        ("laid", "ann"),
        ("odds", "ann"),
    }
