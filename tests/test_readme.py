"""The README's examples run, and say what they do."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_engine_example_runs_and_pays_what_it_says() -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(block.group(1), namespace)
    events = namespace["events"]
    settled = events[1]  # type: ignore[index]
    assert settled.bet_id in block.group(1)
    assert settled.winner == "bob"
    assert settled.transfers[0].amount == 2000
    assert f"bet_id='{settled.bet_id}'" in block.group(1)
