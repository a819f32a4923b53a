"""One vocabulary: the `Event` union is the list of events, and everything else agrees
with it; the setter's account name is spelt once, as `SETTER`."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import engine
from engine import events as ev
from engine.fold import _APPLY


def _event_classes(module: object) -> set[type]:
    """Every class in `module` shaped like an event: a dataclass whose first field is
    its place in a stream."""
    return {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and value.__module__ == getattr(module, "__name__", None)
        and dataclasses.fields(value)[0].name == "version"
    }


def test_table_events_are_the_event_union_in_its_order() -> None:
    assert typing.get_args(ev.Event) == ev.TABLE_EVENTS


def test_every_event_class_of_the_engine_is_in_the_vocabulary() -> None:
    assert _event_classes(ev) == set(ev.TABLE_EVENTS)


def test_the_fold_has_a_handler_for_every_event_and_no_other() -> None:
    assert set(_APPLY) == set(ev.TABLE_EVENTS)


def test_the_engine_spells_the_setter_only_as_setter() -> None:
    """The setter's account name is written once, in engine/state.py; elsewhere the
    engine names it `SETTER`, so that renaming it cannot miss one."""
    spelt = [
        path.name
        for path in sorted(Path(engine.__file__).parent.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == engine.SETTER
    ]
    assert spelt == ["state.py"]


def test_the_engine_keeps_out_for_the_game() -> None:
    """The engine names no variable `out`: it is a game word (the caster throws out)."""
    named_out = [
        f"{path.name}:{node.lineno}"
        for path in sorted(Path(engine.__file__).parent.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.Name) and node.id == "out")
        or (isinstance(node, ast.arg) and node.arg == "out")
    ]
    assert named_out == []
