"""docs/api.md, the API guide, as the tests read it: its curl walks' requests, to send to
the app as the page sends them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def requests_of(section: str = "An evening, in curl") -> list[tuple[str, str, object]]:
    """The section's first ```sh block's requests: (method, path, body), sent with the
    setter's token (`api`); `bob ...` and `cecil ...` lines as (method, path, body, who).
    What a line pipes its answer to (`| jq ...`) is the walk's (test_docs_walk)."""
    block = re.search(rf"## {section}\n.*?```sh\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    commands: list[Any] = []
    for line in block.group(1).splitlines():
        if not line.startswith(("api ", "bob ", "cecil ")):
            continue
        if "# refused (" in line:
            continue  # a refusal the page shows: test_docs_walk holds it to its rule
        who, *words = shlex.split(line.split("  #")[0], comments=False)
        method = "GET"
        if words[0] == "-X":
            method, words = words[1], words[2:]
        url = words[0].removeprefix("localhost:8000")
        body = json.loads(words[2]) if len(words) > 2 and words[1] == "-d" else None
        commands.append((method, url, body) if who == "api" else (method, url, body, who))
    return commands
