"""Finding a rule set by name, or reading a custom one from a JSON or TOML file.

The engine parses rule-set text but never touches a file; reading it happens here.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import RuleSetError
from engine.rules import RuleSet, loads
from engine.rulesets import BUILTIN

FORMATS = {".json": "json", ".toml": "toml"}


def load_ruleset(name_or_path: str) -> RuleSet:
    """A built-in rule set by name, or a custom one from a .json or .toml file."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    path = Path(name_or_path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(BUILTIN))
        raise RuleSetError(
            "name",
            f"{name_or_path!r} is neither a built-in rule set ({known}) nor a .json or .toml file",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleSetError("(file)", f"cannot read {path}: {exc.strerror}") from None
    return loads(text, fmt)
