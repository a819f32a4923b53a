"""docs/api.md followed word for word, as a new user would: every ```sh block, in order,
pasted into one bash against a real `hazard serve` in a fresh directory, then the other
pages' blocks that read the service with curl (the README's and docs/'s), and every
output the pages print held to what the commands print. (The pages' `hazard` commands
and what they show them printing are tests/test_readme.py's; that every variable a
page's blocks use is defined in them, tests/test_docs_site.py's.)

The walk changes only what a reader's own machine changes: the port (the OS picks a free
one for the server, and `localhost:8000` is rewritten to it) and the setter token, which
the page asks the reader to paste from what `make run` printed (`SETTER=hz_...`), taken
here from the banner `hazard serve` printed. Every other line runs as printed, in a
directory holding `.venv` (this test's own), so `.venv/bin/hazard ...` runs as printed
too, on the server's own hazard.sqlite3 and hazard.key.

What the page says a command prints, it must print. In a ```sh block:
  - `# → TEXT` after a command: the command prints TEXT (`…` stands for any text);
  - `# ↓` after a command: it prints what the next ```text block shows, or JSON that
    the next ```json block shows, where every key the example gives has the value it
    shows ("…" stands for any value, and a list shows some of the list's items, in
    order);
  - `# refused (CODE)`: the request is refused with the problem `urn:hazard:rule:CODE`
    (or `urn:hazard:CODE`).
And every request the walk sends is answered below 400 unless the page says it is
refused: the server's access log is read to the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.api.servekit import serving

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "api.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

pytestmark = pytest.mark.skipif(
    not (shutil.which("curl") and shutil.which("jq")) and not os.environ.get("CI"),
    reason="the walk runs the page's curl and jq (.ci/run installs both)",
)


@dataclass
class Said:
    """A command whose output the page states."""

    command: str
    prints: str | None = None
    example: Any = None
    refused: str | None = None


_FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def walk_script(text: str) -> tuple[str, list[Said]]:
    """The page's sh blocks as one bash script, each command whose output the page
    states wrapped in markers, and what the page says of each."""
    fences = [(m.group(1), m.group(2)) for m in _FENCE.finditer(text)]
    script: list[str] = []
    said: list[Said] = []
    for index, (lang, body) in enumerate(fences):
        if lang != "sh":
            continue
        lines = body.splitlines()
        pending: list[str] = []
        for line in lines:
            pending.append(line)
            if line.rstrip().endswith("\\"):
                continue  # a command continued on the next line
            command = "\n".join(pending)
            pending = []
            comment = _comment(command)
            claim = _claim(comment, fences[index + 1 :])
            if claim is None:
                script.append(command)
                continue
            claim.command = command
            script.append(f"printf '\\n@@@ {len(said)}\\n'")
            script.append(command)
            script.append("printf '\\n@@@ end\\n'")
            said.append(claim)
    return "\n".join(script) + "\n", said


def _comment(command: str) -> str:
    """The comment on a command's last line (outside quotes, as bash reads it)."""
    last = (command.splitlines() or [""])[-1]
    quote = ""
    for i, ch in enumerate(last):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or last[i - 1].isspace()):
            return last[i + 1 :].strip()
    return ""


def _claim(comment: str, later: list[tuple[str, str]]) -> Said | None:
    if comment.startswith("→"):
        return Said("", prints=comment.removeprefix("→").strip())
    if comment.startswith("↓"):
        lang, body = next((lang, body) for lang, body in later if lang != "sh")
        if lang == "text":
            return Said("", prints=body.strip("\n"))
        assert lang == "json", f"`# ↓` is followed by a ```{lang} block, not ```json or text"
        return Said("", example=json.loads(body))
    refused = re.match(r"refused \(([a-z-]+)\)", comment)
    if refused is not None:
        return Said("", refused=refused.group(1))
    return None


def outputs(stdout: str) -> dict[int, str]:
    """Each marked command's output, by its number."""
    found: dict[int, str] = {}
    for match in re.finditer(r"\n@@@ (\d+)\n(.*?)\n@@@ end\n", stdout, re.S):
        found[int(match.group(1))] = match.group(2).strip("\n")
    return found


def matches(example: Any, actual: Any) -> bool:
    """`actual` is as `example` shows it: "…" any value, a dict's keys a subset, a
    list's items a subsequence."""
    if isinstance(example, str) and "…" in example:
        pattern = ".*?".join(re.escape(part) for part in example.split("…"))
        return isinstance(actual, str) and re.fullmatch(pattern, actual, re.S) is not None
    if isinstance(example, dict):
        return isinstance(actual, dict) and all(
            key in actual and matches(value, actual[key]) for key, value in example.items()
        )
    if isinstance(example, list):
        if not isinstance(actual, list):
            return False
        items = iter(actual)
        return all(any(matches(want, got) for got in items) for want in example)
    return bool(example == actual and type(example) is type(actual))


def _line_matches(expected: str, printed: str) -> bool:
    """As a reader compares them: trailing spaces aside, `…` any text."""
    printed = "\n".join(line.rstrip() for line in printed.splitlines())
    pattern = ".*?".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, printed, re.S) is not None


def pages_reads() -> str:
    """The other pages' ```sh blocks that read the service with curl (the auditor's
    taking the day's checkpoint, say), run after the page's walk, with `.venv/bin` on
    PATH as the quick start asks (`. .venv/bin/activate`). Their writes over curl are
    docs/api.md's own (bob's dispute, in docs/setter.md, is the page's)."""
    blocks = [
        block
        for page in PAGES
        if page != GUIDE
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    ]
    reads = [b for b in blocks if "curl" in b and "-X POST" not in b]
    assert reads, "the docs read the service with curl"
    return "".join(f"```sh\n{b}```\n" for b in reads)


def test_docs_api_md_runs_as_printed_and_prints_what_it_says(tmp_path: Path) -> None:
    text = GUIDE.read_text(encoding="utf-8") + pages_reads()
    script, said = walk_script(text)
    assert len(said) >= 5, "the page states what its commands print"
    here = tmp_path / "club"
    here.mkdir()
    (here / ".venv").symlink_to(Path(sys.executable).parent.parent)
    with serving(here, "--workers", "2", env_drop=("HAZARD_KEY", "DATABASE_URL")) as served:
        banner = served.banner()
        port = re.search(r"serving at http://127\.0\.0\.1:(\d+)", banner)
        token = re.search(r"^\s+(hz_\S+)$", banner, re.M)
        assert port is not None and token is not None, banner
        address = f"127.0.0.1:{port.group(1)}"
        assert re.search(r"^SETTER=hz_\.\.\.", script, re.M), "the page says where to paste"
        script = re.sub(r"^SETTER=hz_\.\.\.", f"SETTER={token.group(1)}", script, flags=re.M)
        script = re.sub(r"(localhost|127\.0\.0\.1):8000\b", address, script)
        env = {k: v for k, v in os.environ.items() if k not in ("HAZARD_KEY", "DATABASE_URL")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["PATH"] = os.pathsep.join([str(here / ".venv" / "bin"), env["PATH"]])
        ran = subprocess.run(
            ["bash", "-c", script],
            cwd=here,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        access = [json.loads(line) for line in served.err if '"hazard.access"' in line]
    printed = outputs(ran.stdout)
    for number, claim in enumerate(said):
        where = f"docs/api.md: {claim.command.strip()}"
        assert number in printed, f"{where}: never ran\n{ran.stderr[-2000:]}"
        out = printed[number]
        if claim.prints is not None:
            assert _line_matches(claim.prints, out), f"{where}\nprints:  {out}"
        elif claim.refused is not None:
            problem = json.loads(out)
            assert problem["type"] in (
                f"urn:hazard:rule:{claim.refused}",
                f"urn:hazard:{claim.refused}",
            ), f"{where}\nanswered: {out}"
        else:
            assert matches(claim.example, json.loads(out)), f"{where}\nanswered: {out}"
    refusals = sum(claim.refused is not None for claim in said)
    failed = [f"{a['method']} {a['path']} {a['status']}" for a in access if a["status"] >= 400]
    assert len(failed) == refusals, (failed, ran.stderr[-3000:])
    assert len(access) > 40, "the walk reached the server"
    kept = list(here.glob("checkpoint-*.txt"))  # docs/auditor.md's day's checkpoint, taken
    assert len(kept) == 1 and kept[0].read_text().startswith("hazard.local/ledger\n")
