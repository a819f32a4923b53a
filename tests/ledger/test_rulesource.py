"""Custom rule sets read from files: a main given twice is refused, naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import RuleSetError
from engine.rulesets import BUILTIN
from ledger.rulesource import load_ruleset


def test_a_json_file_naming_one_main_twice_is_refused(tmp_path: Path) -> None:
    data = BUILTIN["english"].to_mapping()
    data["table"]["05"] = {"nicks": [5, 7], "outs": [2, 3]}
    path = tmp_path / "house.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RuleSetError) as info:
        load_ruleset(str(path))
    assert str(info.value) == "table.05: main 5 is given twice (also as table.5)"


def test_a_toml_file_naming_one_main_twice_is_refused(tmp_path: Path) -> None:
    rows = "".join(
        f"[table.{key}]\nnicks = {row['nicks']}\nouts = {row['outs']}\n"
        for key, row in BUILTIN["english"].to_mapping()["table"].items()
    )
    path = tmp_path / "house.toml"
    path.write_text(f'name = "house"\n{rows}[table.05]\nnicks = [5]\nouts = []\n', "utf-8")
    with pytest.raises(RuleSetError) as info:
        load_ruleset(str(path))
    assert str(info.value) == "table.05: main 5 is given twice (also as table.5)"
