"""`hazard witness serve`: the witness's app under gunicorn, as `hazard serve` runs the
ledger's: gthread workers whose requests arrive in the worker's loop, so a client that
trickles its head or body holds a connection and never a thread
(ledger.api.slowclients), and a body over the limit is refused as it comes.

The master checks the key and the state before it binds (a witness that cannot start
says why, not a worker's traceback), then lets go of them: each worker opens its own,
as no SQLite connection may cross a fork. gunicorn's when_ready hook prints the banner
once the port is bound, with the real port when --port 0 asked for any.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from ledger import jsonlogging
from ledger.witness.home import load_cosigner, open_state
from ledger.witness.state import Followed

WORKER_TIMEOUT_S = 30


class _Server(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    def __init__(self, where: Path, options: dict[str, Any]) -> None:
        self.where = where
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        # In the worker, after the fork.
        from ledger.witness.app import create_app
        from ledger.witness.cosigning import Witness

        jsonlogging.configure()
        return create_app(Witness(open_state(self.where), load_cosigner(self.where)))


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def banner(url: str, vkey: str, followed: list[Followed], workers: int, where: Path) -> str:
    lines = [
        f"Hazard witness serving at {url} ({workers} worker{'s' * (workers != 1)}, {where})",
        f"Its key:  {vkey}",
        "",
    ]
    for log in followed:
        cosigned = log.cosigned
        seen = f"cosigned up to size {cosigned.size}" if cosigned.note else "nothing cosigned yet"
        lines.append(f"Follows {log.origin} ({seen}), trusting {', '.join(log.keys) or 'no key'}")
    rule = "=" * 78
    return "\n".join([rule, *lines, rule])


def _when_ready(
    host: str, vkey: str, followed: list[Followed], workers: int, where: Path
) -> Callable[[Any], None]:
    def when_ready(arbiter: Any) -> None:
        port = arbiter.LISTENERS[0].sock.getsockname()[1]
        print(banner(url_of(host, port), vkey, followed, workers, where), flush=True)

    return when_ready


def serve(where: Path, host: str, port: int, workers: int, threads: int, io_timeout: float) -> None:
    from ledger.api import slowclients

    vkey = load_cosigner(where).key.text()
    state = open_state(where)
    followed = state.followed()
    state.close()
    slowclients.ThreadWorker.io_timeout = io_timeout  # the workers inherit it at fork
    options = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers,
        "worker_class": "ledger.api.slowclients.ThreadWorker",
        "threads": threads,
        "timeout": WORKER_TIMEOUT_S,
        "proc_name": "hazard-witness",
        "accesslog": None,
        "errorlog": "-",
        "logconfig_dict": jsonlogging.GUNICORN_LOGCONFIG,
        "control_socket_disable": True,
        "when_ready": _when_ready(host, vkey, followed, workers, where),
    }
    _Server(where, options).run()
