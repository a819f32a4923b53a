"""One event vocabulary: the `Event` union is the list, and everything else agrees with it."""

from __future__ import annotations

import dataclasses
import typing

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
