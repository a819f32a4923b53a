"""`hazard serve`: the service under gunicorn, on DATABASE_URL or the embedded SQLite.

The master does what must happen once, before any worker forks:
  - the schema: bootstrap upgrades SQLite; any other database must already be current
    (`hazard db upgrade`), or serve stops with that message instead of starting;
  - the shared directory for prometheus-client's multiprocess mode, made before
    anything imports prometheus_client (see ledger.api.metrics), removed at exit; the
    ones servers killed by SIGKILL left behind are removed first (a live server's
    is locked, and stays);
  - the witnesses' policy (HAZARD_POLICY), refused unless its log is the service's
    key: each worker pushes only once it holds the pusher's lock (ledger.pusher);
  - on a database with no tokens, the first setter token, printed once with the URL
    of the docs. That happens in gunicorn's when_ready hook: after the port is bound
    (so a port in use costs no token, and --port 0 can report the real port) and before
    the first fork (so several workers still make one token), in one serialised
    transaction (so two servers started at once make one token between them).
Each worker then builds its own app (create_app): an engine must not cross a fork.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication
from sqlalchemy.engine import make_url

from ledger import house, jsonlogging
from ledger.api import slowclients
from ledger.bootstrap import ensure_key, open_book, witnesses
from ledger.commands import significant
from ledger.store import db
from ledger.web.tokens import SERVE, first_setter

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
WORKER_TIMEOUT_S = 30
"""gunicorn's worker timeout: a worker silent for longer is killed. A write waiting
for the database's lock gives up first (ledger.store.db.LOCK_TIMEOUT_S) and answers 503."""


def check_lock_timeout() -> float:
    """The lock timeout, refused unless it is below the worker timeout (BadSetting)."""
    seconds = db.default_lock_timeout()
    if seconds >= WORKER_TIMEOUT_S:
        raise db.BadSetting(
            f"{db.LOCK_TIMEOUT_ENV}={seconds:g} must be below gunicorn's worker timeout "
            f"({WORKER_TIMEOUT_S} s), or a waiting write's worker is killed unanswered"
        )
    return seconds


class Server(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn, configured in code rather than by a file or its command line."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            # A setting the installed gunicorn lacks is skipped (control_socket_disable
            # came in 25.1; 27 is required, for ledger.api.slowclients' worker).
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Any:
        # In the worker, after the fork.
        from ledger.api import create_app, servererrors

        jsonlogging.configure()
        servererrors.install()  # gunicorn's own error pages as problems too
        # Half the threads for the heavy reads, at most, and a quarter for callers
        # without a token: the club's light requests keep the rest.
        return create_app(
            HEAVY_READS_AT_ONCE=max(1, self.cfg.threads // 2),
            ANONYMOUS_AT_ONCE=max(1, self.cfg.threads // 4),
        )


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def hazard_command() -> str:
    """How to run `hazard` from where the server was started: plain `hazard` when this
    installation's command is on PATH, otherwise its path (`.venv/bin/hazard` after
    `make run`, whose virtual environment is not activated)."""
    here = Path(sys.executable).with_name("hazard")
    if not here.exists() or shutil.which("hazard") == str(here):
        return "hazard"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


def banner(url: str, token: str | None, workers: int, database: str, key: str | None = None) -> str:
    more = f"`{hazard_command()} token create --role ROLE --name NAME`"
    lines = [
        f"Hazard ledger serving at {url} ({workers} worker{'s' * (workers != 1)}, {database})",
        f"Console:  {url}/  (sign in with a token)",
        f"API docs: {url}/docs",
        "",
    ]
    if key is not None:
        lines += [f"Checkpoints are signed by {key}", ""]
    if token is None:
        lines += [
            f"Use a token you hold; make more with {more}.",
        ]
    else:
        lines += [
            "A setter token (the bank: may do everything) was made for this new database.",
            "It is shown this once: only its hash is kept. Keep it somewhere safe.",
            "",
            f"    {token}",
            "",
            "Send it as `Authorization: Bearer <token>` (in the docs: the Authorize button).",
            f"More tokens: {more}.",
        ]
    rule = "=" * 78
    return "\n".join([rule, *lines, rule])


def _when_ready(
    url_database: str, workers: int, host: str, key: str | None = None, token: str | None = None
) -> Callable[[Any], None]:
    def when_ready(arbiter: Any) -> None:
        port = arbiter.LISTENERS[0].sock.getsockname()[1]
        shown = make_url(url_database).render_as_string(hide_password=True)
        print(banner(url_of(host, port), token, workers, shown, key), flush=True)

    return when_ready


def _child_exit(_arbiter: Any, worker: Any) -> None:
    # The library's bookkeeping for a worker that is gone (live gauges' files).
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


METRICS_PREFIX = "hazard-metrics-"
IN_USE = ".in-use"
"""A file in each metrics directory `hazard serve` makes, flock'ed by the server
using it for as long as it runs (its workers inherit the lock at fork). The kernel
lets go of it however the server ends, SIGKILL too: a directory whose lock can be
taken is a dead server's."""
UNLOCKED_GRACE_S = 60
"""A directory with no lock file is a dead server's only when it is older than this
(a new one has no lock for the instant between mkdtemp and taking it) and none of the
processes its files name is alive (one made before the lock file existed)."""


def sweep_stale_metrics(parent: str | None = None) -> list[str]:
    """Remove the metrics directories dead servers left in `parent` (the temporary
    folder); a live server's, locked, stays. Returns what was removed."""
    removed = []
    for path in Path(parent or tempfile.gettempdir()).glob(METRICS_PREFIX + "*"):
        if path.is_symlink() or not path.is_dir():
            continue
        try:
            fd = os.open(path / IN_USE, os.O_RDWR)
        except FileNotFoundError:
            try:
                young = time.time() - path.stat().st_mtime < UNLOCKED_GRACE_S
            except FileNotFoundError:
                continue
            if young or _any_alive(path):
                continue
        except OSError:
            continue  # not ours to judge (another user's, say)
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live server holds it
            finally:
                os.close(fd)  # our lock goes with it; the directory goes next
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(path))
    return removed


def _any_alive(path: Path) -> bool:
    """Whether a process that wrote metrics here lives: prometheus-client names each
    file for its process (`counter_4242.db`)."""
    for file in path.glob("*_*.db"):
        pid = file.stem.rpartition("_")[2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)  # signal 0: only asks whether it exists
        except (ProcessLookupError, OverflowError):
            continue
        except OSError:
            return True  # there, and not ours to signal
        return True
    return False


def _metrics_dir() -> tuple[str, int]:
    """A fresh metrics directory, locked as in use by this process (IN_USE)."""
    made = tempfile.mkdtemp(prefix=METRICS_PREFIX)
    fd = os.open(os.path.join(made, IN_USE), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return made, fd


def serve(
    host: str,
    port: int,
    workers: int,
    threads: int = slowclients.DEFAULT_THREADS,
    io_timeout: float = slowclients.DEFAULT_IO_TIMEOUT_S,
) -> None:
    check_lock_timeout()
    house.from_settings()  # the club's currency and time zone, or serve stops here
    significant.window_setting(os.environ.get(significant.WINDOW_ENV))  # or stops here
    slowclients.ThreadWorker.io_timeout = io_timeout  # the workers inherit it at fork
    master = os.getpid()
    made = None
    held = -1
    if not os.environ.get(MULTIPROC_ENV):
        sweep_stale_metrics()  # what servers killed by SIGKILL left behind
        made, held = _metrics_dir()
        os.environ[MULTIPROC_ENV] = made  # inherited by the workers at fork
    url = db.database_url()
    try:
        store = open_book(url).store  # creates or checks the schema, then lets go of it
        try:
            new_key = ensure_key(store)  # a key for a log never signed; the log's own, else
            policy, _ = witnesses(store)  # HAZARD_POLICY names the log's key, or serve stops here
            # The club's settings, recorded in the log of significant events where they
            # differ from the last recorded; and on a new database, its first setter token,
            # recorded as made there.
            settings = significant.settings_of(
                house.from_settings(), policy, db.lock_timeout(store.engine)
            )
            significant.record_settings(store, settings, SERVE)
            token = first_setter(store)
        finally:
            store.close()
            store.engine.dispose()
        assert store.signer is not None
        public = store.signer.verifier.text()
        if new_key is not None:
            print(f"made the signing key at {store.key_path}", flush=True)
        options = {
            "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            "workers": workers,
            # Threads that take a request only once it has arrived, in the worker's
            # loop, within io_timeout: a slow client holds no thread (ledger.api.slowclients).
            "worker_class": "ledger.api.slowclients.ThreadWorker",
            "threads": threads,
            "timeout": WORKER_TIMEOUT_S,
            "proc_name": "hazard",
            "accesslog": None,  # each request is logged by the app, as JSON (ledger.api.observe)
            "errorlog": "-",
            "logconfig_dict": jsonlogging.GUNICORN_LOGCONFIG,
            # The default socket is one path per user: a second `hazard serve` (or the
            # tests) would fight over it. gunicorn's signals still work.
            "control_socket_disable": True,
            "when_ready": _when_ready(url, workers, host, public, token),
            "child_exit": _child_exit,
        }
        Server(options).run()
    finally:
        # Workers leave through here too (gunicorn's exit unwinds the forked stack);
        # only the master removes the directory.
        if made is not None and os.getpid() == master:
            shutil.rmtree(made, ignore_errors=True)
            os.close(held)
            del os.environ[MULTIPROC_ENV]
