"""The README's examples run, and say what they do."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from engine.rules import from_mapping
from ledger.rulesource import load_ruleset

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


def test_the_custom_rule_set_example_shows_the_loader_s_defaults(tmp_path: Path) -> None:
    """The README says every field of its custom rule set but `name` and `table` has
    the default shown: loaded with only those two, each field comes out as shown."""
    section = re.search(r"### Custom rule sets\n(.*?)\n## ", README.read_text(), re.S)
    assert section is not None
    assert "Every field but `name` and `table`" in section.group(1)
    block = re.search(r"```toml\n(.*?)```", section.group(1), re.S)
    assert block is not None
    shown = tomllib.loads(block.group(1))
    path = tmp_path / "my-club.toml"
    path.write_text(block.group(1), encoding="utf-8")
    as_given = load_ruleset(str(path))  # as `--ruleset my-club.toml` reads it
    bare = from_mapping({"name": shown["name"], "table": shown["table"]})
    defaults = bare.to_mapping()
    fields = [key for key in shown if key not in ("name", "table")]
    assert fields, "the example shows no defaults"
    for key in fields:
        if isinstance(shown[key], dict):
            for sub, value in shown[key].items():
                assert value == defaults[key][sub], f"{key}.{sub}: README {value!r}"
        else:
            assert shown[key] == defaults[key], f"{key}: README {shown[key]!r}"
    assert as_given == bare
