"""Every console page at a phone's, a tablet's and a desktop's width (390, 768 and 1280
px): it never scrolls sideways, and every target a finger presses is at least 44 px
with room around it.

The pages are found as test_axe.py finds them (tests/console/pagekit.py). What is
checked, on each page as a role reaches it, at each width:

- **No sideways scroll**: the document is no wider than the window
  (`scrollWidth <= clientWidth`). A wide table scrolls inside its own box (`.scroll`).
- **Targets of 44 px**: every visible button, link drawn as a button (`a.button`,
  `[role=button]`) or standing alone in a bar (`nav a`, `header a`), select, die
  (`label.die`, the dice pad's radio buttons) and text field is at least 44 px tall,
  and all but the text fields at least 44 px wide. A link inside a sentence or a
  table's cell is not a target of its own here (WCAG 2.5.8 exempts it).
- **Space between them**: no two targets overlap or touch. Two targets are apart when
  the shortest distance between their boxes (0 if they overlap) is at least 4 px, so a
  finger that lands on one's edge does not press the other. A target inside another
  (a button inside a link) is one target.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.sitekit import Site, each_width, evening_site

WIDTHS = (390, 768, 1280)
TARGETS = (
    "button, a.button, [role=button], nav a, header a, select, label.die, textarea, "
    "input:not([type=hidden]):not([type=radio]):not([type=checkbox])"
)
SIZE = 44
GAP = 4

MEASURE = """([selector, size, gap]) => {
  const doc = document.documentElement;
  const shown = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})
    && el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().height > 0;
  const name = (el) => {
    const text = (el.getAttribute("aria-label") || el.textContent || el.name || el.id || "")
      .trim().replace(/\\s+/g, " ").slice(0, 30);
    return `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""} "${text}"`;
  };
  const targets = [...document.querySelectorAll(selector)].filter(shown);
  const boxes = targets.map((el) => el.getBoundingClientRect());
  const small = [];
  targets.forEach((el, i) => {
    const b = boxes[i];
    const field = el.matches("input, textarea");
    if (Math.round(b.height) < size || (!field && Math.round(b.width) < size))
      small.push(`${name(el)} is ${Math.round(b.width)}x${Math.round(b.height)}`);
  });
  const close = [];
  for (let i = 0; i < targets.length; i++) {
    for (let j = i + 1; j < targets.length; j++) {
      const [a, b] = [boxes[i], boxes[j]];
      if (targets[i].contains(targets[j]) || targets[j].contains(targets[i])) continue;
      const dx = Math.max(0, b.left - a.right, a.left - b.right);
      const dy = Math.max(0, b.top - a.bottom, a.top - b.bottom);
      const apart = Math.hypot(dx, dy);
      if (apart < gap - 0.5)
        close.push(`${name(targets[i])} and ${name(targets[j])} are ${apart.toFixed(1)} px apart`);
    }
  }
  return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, small, close};
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with evening_site(tmp_path_factory.mktemp("widths")) as found:
        yield found


def measured(tab: Any) -> dict[str, Any]:
    found: dict[str, Any] = tab.evaluate(MEASURE, [TARGETS, SIZE, GAP])
    return found


@pytest.mark.parametrize("role", ["setter", "croupier", "auditor", "player", None])
def test_no_page_scrolls_sideways_and_every_target_is_44_px_apart(
    browser: Any, site: Site, role: str | None
) -> None:
    wrong: list[str] = []
    # Each page laid out again at each width, as a turned tablet is.
    for page, width, tab in each_width(browser, site, role, WIDTHS):
        found = measured(tab)
        where = f"{page.url} at {width} px"
        if found["scrollWidth"] > found["clientWidth"]:
            wrong.append(
                f"{where}: scrolls sideways ({found['scrollWidth']} px of content "
                f"in {found['clientWidth']})"
            )
        wrong += [f"{where}: {what}, under {SIZE} px" for what in found["small"]]
        wrong += [f"{where}: {what}, under {GAP}" for what in found["close"]]
    assert not wrong, f"{len(wrong)} problems as {role or 'no one'}:\n" + "\n".join(wrong)
