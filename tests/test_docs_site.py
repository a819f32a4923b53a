"""docs/ as a site: `mkdocs build --strict` passes (so no link or anchor is broken and no
page is left out of the nav), with nothing fetched from elsewhere when a page is read;
the README's links into docs/ resolve; and every shell block a page prints defines the
variables it uses, so a reader who pastes a page's blocks in order has them all."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict`, as `make docs` runs it; no network is asked for."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True, text=True, timeout=300, env=env, cwd=config.parent,
    )  # fmt: skip


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    pages = {p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md")}
    assert pages <= {p.relative_to(tmp_path / "site") for p in (tmp_path / "site").rglob("*.html")}


class _Assets(HTMLParser):
    """Every address a page loads when it is read: scripts, stylesheets, fonts, icons,
    images (a plain link the reader follows is not loaded)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("script", "img", "source", "iframe") and found.get("src"):
            self.loaded.append(found["src"] or "")
        if tag == "link" and found.get("rel") != "canonical" and found.get("href"):
            self.loaded.append(found["href"] or "")


def test_the_site_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    """No CDN at run time: Material's Google fonts are off (`theme.font: false`), and
    every script, stylesheet and image a page loads is the site's own."""
    built = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert pages
    for page in pages:
        parser = _Assets()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.loaded, page
        remote = [a for a in parser.loaded if re.match(r"([a-z]+:)?//", a)]
        assert not remote, (page.name, remote)
    css = "".join(p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*.css"))
    assert "fonts.googleapis" not in css and "fonts.gstatic" not in css


@pytest.mark.parametrize(
    "breakage",
    [
        ("croupier.md", "[a page](no-such-page.md)"),  # a link to no page
        ("croupier.md", "[a section](player.md#no-such-section)"),  # to no heading
        ("stray.md", "# A page the nav leaves out"),
    ],
    ids=["page", "anchor", "nav"],
)
def test_a_broken_link_or_a_page_left_out_of_the_nav_fails_the_build(
    tmp_path: Path, breakage: tuple[str, str]
) -> None:
    """The strictness the site's test relies on, shown on a copy of the docs."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page, text = breakage
    with (tmp_path / "docs" / page).open("a", encoding="utf-8") as out:
        out.write(f"\n{text}\n")
    built = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert built.stderr.count("WARNING -") == 1, built.stderr  # this one, and no other


def _anchors(page: Path) -> set[str]:
    """A page's headings as the site and the forges name them."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    titles = re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)
    return {slugify(re.sub(r"[`*]", "", title), "-") for title in titles}


def test_the_readme_s_links_resolve() -> None:
    text = re.sub(r"```.*?```", "", README.read_text(encoding="utf-8"), flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in local), "the README links into docs/"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.is_file(), link
        if anchor:
            assert anchor in _anchors(target), link


_SHELL_OWN = {"HOME", "PATH", "PWD"}


def _words(block: str) -> str:
    """A shell block as the shell expands it: single-quoted text (a jq program's own
    `$`, a JSON body) and comments dropped, double-quoted text kept."""
    kept: list[str] = []
    quote = ""
    i = 0
    while i < len(block):
        ch = block[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\" and i + 1 < len(block):
            kept.append(block[i : i + 2])
            i += 1
        elif quote == '"':
            quote = "" if ch == '"' else quote
            kept.append(ch)
        elif ch == "'":
            quote = "'"
        elif ch == '"':
            quote = '"'
            kept.append(ch)
        elif ch == "#" and (i == 0 or block[i - 1].isspace()):
            while i < len(block) and block[i] != "\n":
                i += 1
            continue
        else:
            kept.append(ch)
        i += 1
    return "".join(kept)


def _defined(words: str) -> set[str]:
    start = r"(?:^\s*|[;&|({]\s*|\bexport\s+|\blocal\s+)"
    names = set(re.findall(rf"(?m){start}([A-Za-z_]\w*)=", words))
    names |= set(re.findall(r"\bfor\s+([A-Za-z_]\w*)\s+in\b", words))
    names |= set(re.findall(r"\bread\s+(?:-r\s+)?([A-Za-z_]\w*)", words))
    return names


def _used(words: str) -> set[str]:
    return set(re.findall(r"\$\{?([A-Za-z_]\w*)", words))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_variable_a_page_s_shell_blocks_use_they_define(page: Path) -> None:
    """What a page's ```sh blocks expand, its blocks set first (or the shell has):
    pasted in order, nothing comes out empty. docs/api.md's and the read-only walks
    also run against a real server (tests/api/test_docs_walk.py)."""
    blocks = re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    defined: set[str] = set(_SHELL_OWN)
    for block in blocks:
        words = _words(block)
        defined |= _defined(words)
        missing = _used(words) - defined
        assert not missing, f"{page.name}: {sorted(missing)} used before it is set in\n{block}"
