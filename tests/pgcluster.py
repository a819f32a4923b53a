"""A throwaway PostgreSQL cluster, for the store's tests and for bench.store.

initdb on a temporary directory (as the `postgres` user when run as root, since initdb
refuses root), listening only on a Unix socket inside it, stopped and removed after.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


class Unavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_bin(name: str) -> str | None:
    """A PostgreSQL program on PATH, or in Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def as_postgres_user(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def url(sock: Path | str, database: str = "postgres") -> str:
    return f"postgresql+psycopg://postgres@/{database}?host={sock}"


@contextmanager
def temporary_cluster(
    settings: Mapping[str, str], parent: Path | None = None, prefix: str = "hazard-pg-"
) -> Iterator[Path]:
    """Start a cluster with `settings` (-c name=value); yield its socket directory."""
    initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise Unavailable("PostgreSQL is not installed (no initdb)")
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sock, "postgres")
    options = " ".join(
        [f"-k {sock}", "-c listen_addresses=''", "-c max_connections=50"]
        + [f"-c {k}={v}" for k, v in settings.items()]
    )
    try:
        subprocess.run(
            as_postgres_user(
                [initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            as_postgres_user(
                [pg_ctl, "-D", str(data), "-o", options, "-w", "-l", str(base / "log"), "start"]
            ),
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(base, ignore_errors=True)
        stderr = exc.stderr.decode(errors="replace").strip() if exc.stderr else ""
        raise Unavailable(f"could not start PostgreSQL ({exc.cmd[0]}: {stderr or exc})") from None
    try:
        yield sock
    finally:
        subprocess.run(
            as_postgres_user([pg_ctl, "-D", str(data), "-m", "fast", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)
