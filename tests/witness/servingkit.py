r"""`hazard witness serve` run for real, in a process group of its own, and killed whole
(master and workers at once, as a machine that loses power) when asked.

with witness_serving(where) as served:
    status, headers, body = served.post("/add-checkpoint", body)
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.api.servekit import ROOT, Served, drain, hazard


@dataclass
class Witnessed:
    served: Served
    port: int

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, str, bytes]:
        """One request on a connection of its own: status, Content-Type, body."""
        conn = self.connection()
        try:
            conn.request(method, path, body=body)
            answer = conn.getresponse()
            return answer.status, answer.getheader("Content-Type") or "", answer.read()
        finally:
            conn.close()

    def kill(self) -> None:
        """SIGKILL to the whole group: no worker finishes what it was doing."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.served.proc.pid, signal.SIGKILL)
        self.served.proc.wait(timeout=10)


@contextlib.contextmanager
def witness_serving(where: Path, *options: str) -> Iterator[Witnessed]:
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [*hazard(), "witness", "serve", "--port", "0", "--dir", str(where), *options],
        cwd=where.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, to be killed whole
    )
    served = Served(proc)
    pumps = [
        threading.Thread(target=drain, args=(proc.stdout, served.out), daemon=True),
        threading.Thread(target=drain, args=(proc.stderr, served.err), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    witnessed = None
    try:
        port = re.search(r"serving at http://127\.0\.0\.1:(\d+)", served.banner())
        assert port is not None, served.banner()
        witnessed = Witnessed(served, int(port[1]))
        yield witnessed
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        for pump in pumps:
            pump.join(timeout=5)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
