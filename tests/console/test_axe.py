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

from tests.console.sitekit import Site, as_role, evening_site, visit

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
    _, pages = site.pages[role]
    seen: list[str] = []
    with as_role(browser, site, role) as tab:
        for page in pages:
            answer = visit(tab, site.served.url + page.url)
            assert answer is not None and answer.status == page.status, (page, answer)
            tab.add_script_tag(path=str(AXE))
            for width in WIDTHS:  # the page laid out again at each width
                tab.set_viewport_size({"width": width, "height": 900})
                for v in violations(tab):
                    seen.append(
                        f"{page.url} ({page.endpoint}) at {width} px: {v['id']} [{v['impact']}] "
                        f"{v['help']}\n    at {'; '.join(v['targets'][:8])}\n    {v['url']}"
                    )
    assert not seen, f"axe-core found {len(seen)} violations as {role or 'no one'}:\n" + (
        "\n".join(seen)
    )
