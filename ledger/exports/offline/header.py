"""An export's first line, its header: the format, the positions it covers, the key
that signed the log and the log's name, its scope, the rule sets its tables play
under, and the tree before its first position (docs/export-format.md, "header")."""

from __future__ import annotations

from typing import Any

from engine.errors import RuleSetError
from engine.rules import RuleSet, from_mapping
from ledger.exports.offline import fields
from ledger.exports.offline.fields import is_int
from ledger.exports.scope import KINDS
from ledger.exports.verdict import Disagreement, Header
from ledger.store.log.keys import BadKey, Verifier

FORMAT = "hazard-export"
FORMAT_VERSION = 2
FORMAT_VERSIONS = (1, 2)
"""Version 1 is the format before seals: still read, and said to prove nothing about
completeness."""


def read_header(number: int, h: dict[str, Any], expected: Verifier | None) -> Header:
    """The header on line `number`, every field checked; its key must be `expected`
    when one is given."""
    if h.get("format") != FORMAT:
        raise Disagreement(number, f"not a Hazard export: format {h.get('format')!r}")
    version = h.get("format_version")
    if not is_int(version) or version not in FORMAT_VERSIONS:
        raise Disagreement(
            number,
            f"format version {version!r}: this verifier reads versions "
            f"{', '.join(map(str, FORMAT_VERSIONS))}",
        )
    first, last = h.get("first"), h.get("last")
    if not (is_int(first) and is_int(last) and first >= 1 and last >= first - 1):
        raise Disagreement(number, f"the header's range {first!r}..{last!r} is not one")
    try:
        verifier = Verifier.parse(str(h.get("key")))
    except (BadKey, ValueError) as exc:
        raise Disagreement(number, f"the header's key is not a verifier key ({exc})") from None
    if expected is not None and (
        verifier.name != expected.name or verifier.public_key != expected.public_key
    ):
        # Nothing has been checked against the header's key yet: it is the header
        # that disagrees, whatever the checkpoints further on may hold.
        raise Disagreement(
            number,
            f"the file's header names the key {verifier.text()}, not the key you gave "
            f"({expected.text()})",
        )
    origin = h.get("origin")
    if not isinstance(origin, str) or not origin:
        raise Disagreement(number, "the header has no origin (the log's name)")
    scope = h.get("scope")
    if not isinstance(scope, dict) or scope.get("kind") not in KINDS:
        raise Disagreement(
            number, f"the header's scope is not an object with a kind of {', '.join(KINDS)}"
        )
    rule_sets = _rule_sets(number, h.get("rule_sets"))
    tree_start = _tree_start(number, h.get("tree_start"), first - 1)
    return Header(number, first, last, verifier, origin, scope, rule_sets, tree_start, version)


def _rule_sets(number: int, given: Any) -> dict[str, RuleSet]:
    if not isinstance(given, dict):
        raise Disagreement(number, "the header's rule_sets is not an object")
    rule_sets: dict[str, RuleSet] = {}
    for name, mapping in given.items():
        try:
            rules = from_mapping(mapping)
        except (RuleSetError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise Disagreement(number, f"rule set {name!r} cannot be read: {exc}") from None
        if rules.name != name:
            raise Disagreement(number, f"the rule set listed as {name!r} is {rules.name!r}")
        rule_sets[name] = rules
    return rule_sets


def _tree_start(number: int, start: Any, size: int) -> tuple[bytes, ...]:
    """The frontier of the tree of the `size` events before the file: one hash per
    complete subtree, largest first."""
    hashes = start.get("hashes") if isinstance(start, dict) else None
    if not isinstance(start, dict) or start.get("size") != size or not isinstance(hashes, list):
        raise Disagreement(number, f"the header's tree_start is not the tree of {size} events")
    if len(hashes) != size.bit_count():
        raise Disagreement(
            number,
            f"the tree of {size} events has {size.bit_count()} complete subtrees, "
            f"tree_start gives {len(hashes)}",
        )
    return tuple(fields.hashes(number, hashes, "tree_start hash"))
