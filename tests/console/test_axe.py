"""axe-core on every console page, as every role reaches it: 0 violations.

The pages are found, not listed (tests/console/pagekit.py: the console's GET routes,
asked for as each role after a small evening, and each role's error pages), so a page
the console gains is checked without a line here. axe-core 4.14.1 is vendored beside
this file (no CDN), injected into each page after it has loaded, and run with its
default rules: WCAG 2.0, 2.1 and 2.2 A and AA, and its best practices, at a desktop's
width and a phone's (a box that scrolls at one may not at the other). A failure lists
each violation's page, rule, impact, the elements it found and axe's help."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.pagekit import Page
from tests.console.sitekit import Site, each_width, evening_site

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
WIDTHS = (1280, 390)

RUN = """async () => {
  const found = await axe.run(document, {resultTypes: ["violations"]});
  return found.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, url: v.helpUrl,
    targets: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with evening_site(tmp_path_factory.mktemp("axe")) as found:
        yield found


def violations(tab: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = tab.evaluate(RUN)
    return found


@pytest.mark.parametrize("role", ["setter", "croupier", "auditor", "player", None])
def test_every_page_a_role_reaches_has_no_axe_violation(
    browser: Any, site: Site, role: str | None
) -> None:
    seen: list[str] = []

    def loaded(tab: Any, page: Page, answer: Any) -> None:
        assert answer is not None and answer.status == page.status, (page, answer)
        tab.add_script_tag(path=str(AXE))

    for page, width, tab in each_width(browser, site, role, WIDTHS, loaded):
        for v in violations(tab):
            seen.append(
                f"{page.url} ({page.endpoint}) at {width} px: {v['id']} [{v['impact']}] "
                f"{v['help']}\n    at {'; '.join(v['targets'][:8])}\n    {v['url']}"
            )
    assert not seen, f"axe-core found {len(seen)} violations as {role or 'no one'}:\n" + (
        "\n".join(seen)
    )
