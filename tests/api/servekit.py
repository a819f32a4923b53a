r"""`hazard serve` run for real, in a process of its own, and a request sent to it.

with serving(tmp_path, "--workers", "2") as served:
    port = re.search(r"serving at http://127\.0\.0\.1:(\d+)", served.banner())
    status, headers, body = call(f"http://127.0.0.1:{port[1]}/healthz")
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START_SECONDS = 30
"""How long `hazard serve` may take to print its banner."""
ROOT = Path(__file__).resolve().parents[2]
"""This checkout, whose code the server runs."""


@dataclass
class Served:
    proc: subprocess.Popen[str]
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)

    def banner(self) -> str:
        """stdout up to the banner's closing rule."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            text = "".join(self.out)
            if text.count("=" * 78) >= 2:
                return text
            assert self.proc.poll() is None, "".join(self.err)
            time.sleep(0.05)
        raise AssertionError(f"no banner in {START_SECONDS}s: {''.join(self.err)}")


def drain(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line)


def hazard() -> list[str]:
    script = Path(sys.executable).with_name("hazard")  # the installed entry point
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from ledger.cli import main; main()"]


@contextlib.contextmanager
def serving(tmp_path: Path, *options: str, env_drop: tuple[str, ...] = ()) -> Iterator[Served]:
    """`hazard serve --port 0 --workers 2 [options]` on a fresh SQLite file in tmp_path;
    `env_drop` names variables to leave unset, as a new user's shell would (without
    DATABASE_URL and HAZARD_KEY: hazard.sqlite3 and hazard.key in tmp_path)."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'serve.sqlite3'}"
    for name in env_drop:
        env.pop(name, None)
    env["TMPDIR"] = str(tmp_path)  # where serve makes its metrics directory
    # This checkout's code, whichever checkout the installed entry point was made from.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [*hazard(), "serve", "--port", "0", "--workers", "2", *options],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    served = Served(proc)
    pumps = [
        threading.Thread(target=drain, args=(proc.stdout, served.out), daemon=True),
        threading.Thread(target=drain, args=(proc.stderr, served.err), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    try:
        yield served
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for pump in pumps:
            pump.join(timeout=5)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def call(
    url: str, token: str | None = None, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode())
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()
