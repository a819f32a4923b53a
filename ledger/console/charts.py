"""Bar charts drawn by the server: the geometry of an SVG, which a template writes out
(templates/_chart.html). No script, no library: the numbers are in a table beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH = 640
HEIGHT = 240
PAD = 28
"""Room below and above the bars for their labels."""


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    x: float
    y: float
    width: float
    height: float
    negative: bool
    mark: float | None = None
    """The y of a reference mark across the bar (an expected count), if any."""


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    width: int = WIDTH
    height: int = HEIGHT
    zero: float = HEIGHT - PAD
    """The y of the baseline."""
    legend: list[str] = field(default_factory=list)


def bars(
    items: Sequence[tuple[str, float]],
    title: str,
    marks: Sequence[float] | None = None,
    legend: Sequence[str] = (),
) -> Chart:
    """A bar per (label, value), negative values below the baseline; `marks`, one per
    bar, a reference line across each (the expected figure beside the observed)."""
    values = [v for _, v in items] + list(marks or [])
    top = max([0.0, *values])
    bottom = min([0.0, *values])
    span = (top - bottom) or 1.0
    inner = HEIGHT - 2 * PAD
    zero = PAD + inner * top / span
    slot = (WIDTH - 2 * PAD) / max(1, len(items))
    drawn = []
    for i, (label, value) in enumerate(items):
        h = inner * abs(value) / span
        mark = None
        if marks is not None:
            mark = zero - inner * marks[i] / span
        drawn.append(
            Bar(
                label=label,
                value=value,
                x=PAD + i * slot + slot * 0.15,
                y=zero - h if value >= 0 else zero,
                width=slot * 0.7,
                height=h,
                negative=value < 0,
                mark=mark,
            )
        )
    return Chart(title=title, bars=drawn, zero=zero, legend=list(legend))
