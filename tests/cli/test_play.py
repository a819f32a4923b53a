"""The `hazard odds` and `hazard simulate` commands, through click's runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ledger.cli import main

TEXT_FIGURES = {
    "5": "1396/2835",
    "6": "6961/14256",
    "7": "244/495",
    "8": "6961/14256",
    "9": "1396/2835",
}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_odds_json_reproduces_the_texts_figures() -> None:
    code, out = run("odds", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ruleset"] == "english"
    assert {m: v["p_win"] for m, v in data["mains"].items()} == TEXT_FIGURES
    assert data["mains"]["5"] == {
        "p_nick": "1/9",
        "p_out": "1/6",
        "p_win": "1396/2835",
        "disadvantage": "43/2835",
    }
    assert data["random_main"]["p_win"] == "1979/4032"
    assert data["random_main"]["disadvantage"] == "37/2016"


def test_odds_text_shows_fractions_decimals_and_disadvantages() -> None:
    code, out = run("odds")
    assert code == 0
    assert "1396/2835 = 0.4924" in out
    assert "6961/14256 = 0.4883" in out
    assert "244/495 = 0.4929" in out
    assert "43/2835 = 1.52%" in out and "167/7128 = 2.34%" in out and "7/495 = 1.41%" in out
    assert "1979/4032 = 0.4908" in out and "37/2016 = 1.84%" in out


def test_odds_for_the_history_table_differs_on_a_main_of_six() -> None:
    code, out = run("odds", "--ruleset", "history", "--json")
    data = json.loads(out)
    assert code == 0
    # 7 throws out against a main of 6: P(out) = (1 + 2 + 6 + 2) / 36.
    assert data["mains"]["6"]["p_out"] == "11/36"
    assert data["random_main"]["method"] == "first-roll"


def test_odds_from_a_custom_toml_file(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "sevens.toml"  # type: ignore[operator]
    rows = "\n".join(f"[table.{m}]\nnicks = [{m}]\nouts = [2, 3, 12]" for m in range(5, 10))
    path.write_text(f'name = "sevens"\n{rows}\n')
    code, out = run("odds", "--ruleset", str(path), "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["ruleset"] == "sevens"
    assert data["mains"]["7"]["p_nick"] == "1/6"


def test_a_malformed_rule_set_file_is_refused_naming_the_field(tmp_path: object) -> None:
    path = tmp_path / "bad.json"  # type: ignore[operator]
    path.write_text(json.dumps({"name": "bad", "table": {"4": {"nicks": [4], "outs": [2]}}}))
    code, out = run("odds", "--ruleset", str(path))
    assert code == 2
    assert "table.4" in out


def test_an_unknown_rule_set_is_refused() -> None:
    code, out = run("odds", "--ruleset", "backgammon")
    assert code == 2
    assert "english" in out  # the error lists the rule sets there are


def test_simulate_prints_observed_against_exact_with_intervals() -> None:
    code, out = run("simulate", "--rounds", "3000", "--seed", "7", "--no-progress")
    assert code == 0, out
    assert "3000 rounds of english, seed 7" in out
    assert "P(win) main by preliminary roll" in out and "0.4908" in out
    assert out.count("[") >= 16  # an interval per main for win, nick, out, plus overall


def test_simulate_is_reproducible_from_its_seed() -> None:
    first = run("simulate", "--rounds", "500", "--seed", "11", "--no-progress")
    again = run("simulate", "--rounds", "500", "--seed", "11", "--no-progress")
    other = run("simulate", "--rounds", "500", "--seed", "12", "--no-progress")
    assert first == again
    assert first != other


def test_simulate_refuses_a_called_main_under_rolled_rules() -> None:
    code, out = run("simulate", "--ruleset", "french", "--main", "7", "--rounds", "10")
    assert code == 2
    assert "thrown" in out


def test_python_dash_m_ledger_runs_the_cli() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "ledger", "odds", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ruleset"] == "english"
    usage = subprocess.run(
        [sys.executable, "-m", "ledger", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "Usage: python -m ledger" in usage.stdout
