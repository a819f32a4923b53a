"""Bar charts drawn by the server: the geometry of an SVG, which a template writes out
(templates/_chart.html). No script and no library; every chart has a scale (an axis of
ticks at round figures, each labelled in the chart's own unit: the club's money, or a
count), and its numbers are in a table beside it for anyone who does not read charts.

Two shapes. `columns`: a bar per period (evenings, totals of the dice) along the
bottom, so that one period or a hundred fit the same width: the bars narrow, at most
MAX_BAR wide, and the labels thin out to every second, fifth, ... one, the newest always
labelled. `rows`: a row per name (tables, players), each with a bar per series, the
chart growing downwards with the names, so that a hundred players stay as readable as
two. Figures are whole numbers (minor units, counts): the ticks are too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ledger.house import House

WIDTH = 480
"""The chart's width in the SVG's units: at a phone's width it is drawn at that many
pixels and scrolls in its own box; wider, it scales up."""
HEIGHT = 260
CHAR = 7.0
"""About how wide a character of a 12 px label is."""
MAX_BAR = 40.0
ROW = 30.0
"""A row's height in a `rows` chart."""
NAME_CHARS = 14
"""The most characters of a row's name drawn; the whole name is in its title and the
table beside."""

Labels = Callable[[Sequence[int]], list[str]]
"""The labels of the ticks, all at once (money may drop its pence when every tick is in
whole pounds)."""


def counted(ticks: Sequence[int]) -> list[str]:
    return [f"{t:,}" for t in ticks]


@dataclass(frozen=True)
class Tick:
    value: int
    at: float
    """Its x (a `rows` chart) or y (`columns`)."""
    label: str


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    x: float
    y: float
    width: float
    height: float
    negative: bool
    text: str
    """The value as its tooltip says it."""
    series: int = 0
    mark: float | None = None
    """The y of a reference line across the bar (an expected count), if any."""


@dataclass(frozen=True)
class Name:
    """A category's label: under its column, or beside its row."""

    text: str
    full: str
    x: float
    y: float


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    ticks: list[Tick]
    names: list[Name]
    horizontal: bool
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    zero: float
    """The y (columns) or x (rows) of the value 0."""
    unit: str
    legend: list[str] = field(default_factory=list)


def scale(low: float, high: float, most: int = 6) -> list[int]:
    """Round ticks from at or below min(low, 0) to at or above max(high, 0): a step of 1,
    2 or 5 times a power of ten (at least 1), no more than about `most` of them."""
    low, high = min(low, 0.0), max(high, 0.0)
    if low == high:
        high = 1.0
    rough = (high - low) / (most - 1)
    step = 1
    while step < rough:
        step = _next_step(step)
    first, last = math.floor(low / step) * step, math.ceil(high / step) * step
    return list(range(first, last + step, step))


def _next_step(step: int) -> int:
    """The round step after `step`: 1, 2, 5, 10, 20, 50, ..."""
    digits = str(step)
    following = {"1": "2", "2": "5", "5": "10"}[digits[0]]
    return int(following + digits[1:])


def columns(
    items: Sequence[tuple[str, int]],
    title: str,
    unit: str,
    labels: Labels = counted,
    marks: Sequence[float] | None = None,
    legend: Sequence[str] = (),
) -> Chart:
    """A column per (label, value), negative values below the zero line; `marks`, one
    per column, a reference line across each (the expected figure beside the observed)."""
    values = [v for _, v in items] + list(marks or [])
    ticks = scale(min(values, default=0), max(values, default=0))
    tick_labels = labels(ticks)
    left = 8 + CHAR * max(len(t) for t in tick_labels)
    right, top, bottom = WIDTH - 8, 12.0, HEIGHT - 36.0

    def y(value: float) -> float:
        return bottom - (value - ticks[0]) / (ticks[-1] - ticks[0]) * (bottom - top)

    slot = (right - left) / max(1, len(items))
    width = min(slot * 0.7, MAX_BAR)
    widest = max((len(label) for label, _ in items), default=1)
    every = max(1, math.ceil(len(items) / max(1, int((right - left) // (CHAR * widest + 10)))))
    zero = y(0)
    bars, names = [], []
    for i, (label, value) in enumerate(items):
        x = left + i * slot + (slot - width) / 2
        bars.append(
            Bar(
                label=label,
                value=value,
                x=x,
                y=min(y(value), zero),
                width=width,
                height=abs(zero - y(value)),
                negative=value < 0,
                text=labels([value])[0],
                mark=None if marks is None else y(marks[i]),
            )
        )
        if (len(items) - 1 - i) % every == 0:  # the newest is always named
            names.append(Name(label, label, x + width / 2, HEIGHT - 14))
    return Chart(
        title=title,
        bars=bars,
        ticks=[Tick(t, y(t), s) for t, s in zip(ticks, tick_labels, strict=True)],
        names=names,
        horizontal=False,
        width=WIDTH,
        height=HEIGHT,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        zero=zero,
        unit=unit,
        legend=list(legend),
    )


def rows(
    items: Sequence[tuple[str, Sequence[int]]],
    title: str,
    unit: str,
    series: Sequence[str],
    labels: Labels = counted,
) -> Chart:
    """A row per (name, values): a bar for each of `series` (named in the legend), from
    the zero line, to the left for a negative value."""
    values = [v for _, vs in items for v in vs]
    ticks = scale(min(values, default=0), max(values, default=0), most=5)
    tick_labels = labels(ticks)
    shown = [_short(name) for name, _ in items]
    left = 8 + CHAR * max([4, *(len(s) for s in shown)])
    # Room for the first and last tick's labels, centred on their ticks.
    right = WIDTH - 4 - CHAR * len(tick_labels[-1]) / 2
    left = max(left, 4 + CHAR * len(tick_labels[0]) / 2)
    top = 24.0
    height = top + ROW * max(1, len(items)) + 8

    def x(value: float) -> float:
        return left + (value - ticks[0]) / (ticks[-1] - ticks[0]) * (right - left)

    zero = x(0)
    thick = (ROW - 8) / max(1, len(series))
    bars, names = [], []
    for i, ((name, vs), short) in enumerate(zip(items, shown, strict=True)):
        row_top = top + i * ROW + 4
        names.append(Name(short, name, left - 6, row_top + (ROW - 8) / 2 + 4))
        for k, value in enumerate(vs):
            bars.append(
                Bar(
                    label=f"{name}, {series[k]}" if len(series) > 1 else name,
                    value=value,
                    x=min(x(value), zero),
                    y=row_top + k * thick,
                    width=abs(x(value) - zero),
                    height=thick - 1,
                    negative=value < 0,
                    text=labels([value])[0],
                    series=k,
                )
            )
    return Chart(
        title=title,
        bars=bars,
        ticks=[Tick(t, x(t), s) for t, s in zip(ticks, tick_labels, strict=True)],
        names=names,
        horizontal=True,
        width=WIDTH,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=height - 8,
        zero=zero,
        unit=unit,
        legend=list(series) if len(series) > 1 else [],
    )


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def money_ticks(club_house: House) -> Labels:
    """A chart's scale in the club's money, without the minor units when every tick is
    whole major units ("£50", not "£50.00")."""
    unit = 10**club_house.minor_units

    def labels(ticks: Sequence[int]) -> list[str]:
        if len(ticks) > 1 and all(t % unit == 0 for t in ticks):
            whole = [("-" if t < 0 else "", abs(t) // unit) for t in ticks]
            return [f"{sign}{club_house.symbol}{major:,}" for sign, major in whole]
        return [club_house.money(t, signed=len(ticks) == 1) for t in ticks]

    return labels
