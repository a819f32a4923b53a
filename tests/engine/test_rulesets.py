"""Rule sets as data: round trips, JSON and TOML, and every refusal naming its field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine import rulesets
from engine.errors import RuleSetError
from engine.rules import (
    CoverPolicy,
    DicePass,
    MainMethod,
    Outcome,
    Rounding,
    RuleSet,
    from_mapping,
    loads,
)
from engine.rulesets import BUILTIN

ENGLISH = BUILTIN["english"].to_mapping()


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_round_trips(name: str) -> None:
    rules = BUILTIN[name]
    data = rules.to_mapping()
    again = from_mapping(data)
    assert again == rules
    assert again.to_mapping() == data
    # And through JSON text, as a file would carry it.
    assert loads(json.dumps(data), "json") == rules


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtin_names_and_get(name: str) -> None:
    assert rulesets.get(name) is BUILTIN[name]
    assert BUILTIN[name].name == name


def test_default_is_english() -> None:
    assert rulesets.DEFAULT == "english"


def test_get_unknown_rule_set() -> None:
    with pytest.raises(RuleSetError) as info:
        rulesets.get("nope")
    assert info.value.field == "name"
    assert "'nope'" in info.value.message and "english" in info.value.message


def test_english_to_mapping_exactly() -> None:
    data = BUILTIN["english"].to_mapping()
    assert data == {
        "name": "english",
        "description": BUILTIN["english"].description,
        "main": "called",
        "cover": "refuse",
        "rounding": "reject",
        "odds_multiple": 1,
        "dice_pass": {"after_losses": 3, "after_wins": 0, "voluntary": False},
        "table": {
            "5": {"nicks": [5], "outs": [2, 3, 11, 12]},
            "6": {"nicks": [6, 12], "outs": [2, 3, 11]},
            "7": {"nicks": [7, 11], "outs": [2, 3, 12]},
            "8": {"nicks": [8, 12], "outs": [2, 3, 11]},
            "9": {"nicks": [9], "outs": [2, 3, 11, 12]},
        },
    }


CUSTOM_TOML = """
name = "crockfords"
description = "A house rule: sevens everywhere"
main = "rolled"
cover = "forfeit"
rounding = "round-down"
odds_multiple = 3

[dice_pass]
after_losses = 2
after_wins = 4
voluntary = true

[table.5]
nicks = [5]
outs = [2, 3, 11, 12]
[table.6]
nicks = [6, 12]
outs = [2, 3, 11]
[table.7]
nicks = [7, 11, 12]
outs = [2, 3]
[table.8]
nicks = [8, 12]
outs = [2, 3, 11]
[table.9]
nicks = [9]
outs = [2, 3, 11, 12]
"""


def _check_custom(rules: RuleSet) -> None:
    assert rules.name == "crockfords"
    assert rules.description == "A house rule: sevens everywhere"
    assert rules.main_method is MainMethod.ROLLED
    assert rules.cover is CoverPolicy.FORFEIT
    assert rules.rounding is Rounding.ROUND_DOWN
    assert rules.odds_multiple == 3
    assert rules.dice_pass == DicePass(after_losses=2, after_wins=4, voluntary=True)
    assert rules.outcome(7, 12) is Outcome.NICK
    assert rules.outcome(7, 11) is Outcome.NICK
    assert rules.outcome(7, 2) is Outcome.OUT
    assert rules.outcome(7, 4) is Outcome.CHANCE
    assert rules.outcome(6, 12) is Outcome.NICK


def test_loads_toml() -> None:
    _check_custom(loads(CUSTOM_TOML, "toml"))


def test_loads_json() -> None:
    text = json.dumps(
        {
            "name": "crockfords",
            "description": "A house rule: sevens everywhere",
            "main": "rolled",
            "cover": "forfeit",
            "rounding": "round-down",
            "odds_multiple": 3,
            "dice_pass": {"after_losses": 2, "after_wins": 4, "voluntary": True},
            "table": {
                "5": {"nicks": [5], "outs": [2, 3, 11, 12]},
                "6": {"nicks": [6, 12], "outs": [2, 3, 11]},
                "7": {"nicks": [7, 11, 12], "outs": [2, 3]},
                "8": {"nicks": [8, 12], "outs": [2, 3, 11]},
                "9": {"nicks": [9], "outs": [2, 3, 11, 12]},
            },
        }
    )
    rules = loads(text, "json")
    _check_custom(rules)
    assert rules == loads(CUSTOM_TOML, "toml")


def test_minimal_rule_set_takes_the_defaults() -> None:
    rules = from_mapping({"name": "bare", "table": ENGLISH["table"]})
    assert rules.main_method is MainMethod.CALLED
    assert rules.cover is CoverPolicy.REFUSE
    assert rules.rounding is Rounding.REJECT
    assert rules.odds_multiple == 1
    assert rules.dice_pass == DicePass(after_losses=3, after_wins=None, voluntary=False)
    assert rules.description == ""
    assert rules.first_throw == BUILTIN["english"].first_throw


def test_zero_counts_mean_never() -> None:
    data = copy.deepcopy(ENGLISH)
    data["dice_pass"] = {"after_losses": 0, "after_wins": 0}
    assert from_mapping(data).dice_pass == DicePass(after_losses=None, after_wins=None)


def _with(change: Any) -> dict[str, Any]:
    data = copy.deepcopy(ENGLISH)
    change(data)
    return data


def _set(path: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for p in parents:
            data = data[p]
        data[last] = value

    return change


def _delete(path: str) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for p in parents:
            data = data[p]
        del data[last]

    return change


MALFORMED = [
    pytest.param(_set("table.4", {"nicks": [4], "outs": [2, 3]}), "table.4", id="main-of-4"),
    pytest.param(_set("table.10", {"nicks": [10], "outs": [2]}), "table.10", id="main-of-10"),
    pytest.param(_set("table.7.outs", [2, 3, 11, 12]), "table.7", id="11-nicks-and-outs"),
    pytest.param(_set("table.6.nicks", [6, 12, 2]), "table.6", id="2-nicks-and-outs"),
    pytest.param(_set("table.5.outs", [2, 3, 13]), "table.5.outs", id="out-13"),
    pytest.param(_set("table.5.nicks", [5, 13]), "table.5.nicks", id="nick-13"),
    pytest.param(_set("table.5.nicks", [1, 5]), "table.5.nicks", id="nick-1"),
    pytest.param(_set("table.5.nicks", ["5"]), "table.5.nicks", id="nick-as-string"),
    pytest.param(_set("table.5.nicks", 5), "table.5.nicks", id="nicks-not-a-list"),
    pytest.param(_set("table.8.nicks", [12]), "table.8.nicks", id="main-is-a-chance"),
    pytest.param(_set("table.5.pushes", [4]), "table.5.pushes", id="unknown-row-field"),
    pytest.param(_set("table.5", [5]), "table.5", id="row-not-a-table"),
    pytest.param(_set("table.five", {"nicks": [5], "outs": []}), "table.five", id="main-word"),
    pytest.param(_delete("table.9"), "table.9", id="missing-main-row"),
    pytest.param(_delete("table.7.outs"), "table.7.outs", id="missing-outs"),
    pytest.param(_delete("table"), "table", id="missing-table"),
    pytest.param(_set("table", [1, 2]), "table", id="table-not-a-table"),
    pytest.param(_set("house_edge", 5), "house_edge", id="unknown-field"),
    pytest.param(_set("main", "chosen"), "main", id="bad-main"),
    pytest.param(_set("cover", "beg"), "cover", id="bad-cover"),
    pytest.param(_set("rounding", "round-up"), "rounding", id="bad-rounding"),
    pytest.param(_set("main", None), "main", id="main-null"),
    pytest.param(_delete("name"), "name", id="missing-name"),
    pytest.param(_set("name", "  "), "name", id="blank-name"),
    pytest.param(_set("description", 7), "description", id="description-not-text"),
    pytest.param(_set("odds_multiple", -1), "odds_multiple", id="negative-odds-multiple"),
    pytest.param(_set("odds_multiple", 1.5), "odds_multiple", id="fractional-odds-multiple"),
    pytest.param(_set("dice_pass.after_losses", -1), "dice_pass.after_losses", id="losses-neg"),
    pytest.param(_set("dice_pass.after_losses", 2.5), "dice_pass.after_losses", id="losses-2.5"),
    pytest.param(_set("dice_pass.after_losses", "3"), "dice_pass.after_losses", id="losses-str"),
    pytest.param(_set("dice_pass.after_wins", True), "dice_pass.after_wins", id="wins-bool"),
    pytest.param(_set("dice_pass.voluntary", "yes"), "dice_pass.voluntary", id="voluntary-str"),
    pytest.param(_set("dice_pass.every", 2), "dice_pass.every", id="dice-pass-unknown"),
    pytest.param(_set("dice_pass", 3), "dice_pass", id="dice-pass-not-a-table"),
]


@pytest.mark.parametrize(("change", "field"), MALFORMED)
def test_malformed_rule_set_names_the_field(change: Any, field: str) -> None:
    with pytest.raises(RuleSetError) as info:
        from_mapping(_with(change))
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


@pytest.mark.parametrize("again", ["05", " 5", "005"])
def test_a_main_given_twice_is_refused(again: str) -> None:
    data = copy.deepcopy(ENGLISH)
    data["table"][again] = {"nicks": [5, 7], "outs": [2, 3]}  # which would win?
    with pytest.raises(RuleSetError) as info:
        from_mapping(data)
    assert info.value.field == f"table.{again}"
    assert info.value.message == "main 5 is given twice (also as table.5)"


def test_a_json_file_giving_a_main_twice_is_refused() -> None:
    data = copy.deepcopy(ENGLISH)
    data["table"]["05"] = data["table"]["5"]
    with pytest.raises(RuleSetError) as info:
        loads(json.dumps(data), "json")
    assert str(info.value) == "table.05: main 5 is given twice (also as table.5)"


def test_a_toml_file_giving_a_main_twice_is_refused() -> None:
    text = CUSTOM_TOML + "[table.05]\nnicks = [5]\nouts = [2, 3, 11, 12]\n"
    with pytest.raises(RuleSetError) as info:
        loads(text, "toml")
    assert str(info.value) == "table.05: main 5 is given twice (also as table.5)"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param(
            json.dumps(ENGLISH)[:-1] + ', "table": {"5": {"nicks": [5], "outs": []}}}',
            "table",
            id="table-twice",
        ),
        pytest.param(
            json.dumps(ENGLISH).replace('"5": {', '"5": {"nicks": [5], "outs": []}, "5": {', 1),
            "table.5",
            id="main-5-twice",
        ),
        pytest.param(
            json.dumps(ENGLISH).replace('"nicks": [9]', '"nicks": [9], "nicks": []', 1),
            "table.9.nicks",
            id="nicks-twice",
        ),
    ],
)
def test_a_json_key_given_twice_is_refused(text: str, field: str) -> None:
    """JSON itself lets an object repeat a key (the last one wins, silently)."""
    assert json.loads(text) is not None
    with pytest.raises(RuleSetError) as info:
        loads(text, "json")
    assert info.value.field == field
    assert info.value.message == "is given twice"


def test_top_level_must_be_a_table() -> None:
    with pytest.raises(RuleSetError) as info:
        from_mapping([1, 2, 3])  # type: ignore[arg-type]
    assert info.value.field == "(top)"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        pytest.param('{"name": "x",', "json", id="truncated-json"),
        pytest.param("name = ", "toml", id="truncated-toml"),
        pytest.param("[table\nname = 1", "toml", id="bad-toml-header"),
        pytest.param("not json at all", "json", id="prose-as-json"),
        pytest.param("[" * 5000 + "]" * 5000, "json", id="json-nested-past-the-stack"),
        pytest.param("a = " + "[" * 5000 + "]" * 5000, "toml", id="toml-nested-past-the-stack"),
    ],
)
def test_invalid_text_is_a_file_error(text: str, fmt: str) -> None:
    with pytest.raises(RuleSetError) as info:
        loads(text, fmt)
    assert info.value.field == "(file)"
    assert f"not valid {fmt.upper()}" in info.value.message


def test_toml_with_bad_field_names_it() -> None:
    text = CUSTOM_TOML.replace('rounding = "round-down"', 'rounding = "bankers"')
    with pytest.raises(RuleSetError) as info:
        loads(text, "toml")
    assert info.value.field == "rounding"
    assert "reject" in info.value.message and "round-down" in info.value.message


@pytest.mark.parametrize("depth", [100, 900, 990, 1200])
def test_json_nested_near_the_stack_s_depth_is_refused_not_crashed(depth: int) -> None:
    # The parser may or may not manage it; either way a rule-set error, never a crash.
    with pytest.raises(RuleSetError) as info:
        loads("[" * depth + "]" * depth, "json")
    assert info.value.field in ("(top)", "(file)")


def test_json_list_is_not_a_rule_set() -> None:
    with pytest.raises(RuleSetError) as info:
        loads("[1, 2]", "json")
    assert info.value.field == "(top)"


def test_rule_set_constructor_checks_the_table() -> None:
    nicks = {m: frozenset({m}) for m in range(5, 10)}
    outs = {m: frozenset({2, 3}) for m in range(5, 10)}
    assert RuleSet(name="plain", description="", nicks=nicks, outs=outs).outcome(5, 12) is (
        Outcome.CHANCE
    )
    with pytest.raises(RuleSetError) as info:
        RuleSet(name="x", description="", nicks={**nicks, 4: frozenset({4})}, outs=outs)
    assert info.value.field == "table.4"
    with pytest.raises(RuleSetError) as info:
        RuleSet(name="x", description="", nicks=nicks, outs={**outs, 9: frozenset({9})})
    assert info.value.field == "table.9"
    with pytest.raises(RuleSetError) as info:
        RuleSet(name="x", description="", nicks=nicks, outs=outs, odds_multiple=-2)
    assert info.value.field == "odds_multiple"
    with pytest.raises(RuleSetError) as info:
        RuleSet(name="x", description="", nicks=nicks, outs=outs, dice_pass=DicePass(after_wins=0))
    assert info.value.field == "dice_pass.after_wins"


def test_rule_set_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^table\.4: "):
        from_mapping(_with(_set("table.4", {"nicks": [4], "outs": []})))
