"""Where a watcher reads the log: the ledger over HTTP (anonymous reads, the API's
`/log/...`), or a database directly (an auditor's copy; the tests and the bench).

A source answers four questions, and is trusted for none of them: every note it gives
is checked against the reader's policy, and every proof against the notes.

- the newest checkpoint that witnesses cosigned (`cosigned`), or the newest the log
  signed (`latest`), for a policy that asks no witness;
- the proof that the tree of one size is a prefix of another's, with the log's own
  signed checkpoints of both sizes (`consistency`);
- the checkpoints others reported being shown (`gossip`), a page at a time;
- and, if asked, it keeps a report of the checkpoint this watcher verified (`report`).
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from ledger.store.log.checkpoint import NoteError
from ledger.store.log.keys import Verifier

if TYPE_CHECKING:
    import sqlalchemy as sa

TIMEOUT = 15.0
"""Seconds a request may take before the ledger is called unreachable."""
MAX_ANSWER = 8 << 20
"""The largest answer read: a page of gossip is a few hundred kilobytes."""
PAGE = 100


class SourceError(Exception):
    """The source could not be asked, or answered what is not an answer: nothing can
    be concluded from it."""


class NotHeld(Exception):
    """The source answered that it holds no such checkpoint (or none of that size)."""


@dataclasses.dataclass(frozen=True)
class Consistency:
    """The log's signed checkpoints of two sizes and the proof (RFC 9162, 2.1.4) that
    the older tree is a prefix of the newer."""

    old: str
    new: str
    proof: tuple[bytes, ...]


@dataclasses.dataclass(frozen=True)
class Report:
    id: int
    note: str
    reported_by: str | None


class Source(Protocol):
    where: str
    """Where it reads, for messages: the ledger's URL or the database's."""

    def cosigned(self) -> str | None: ...

    def latest(self) -> str | None: ...

    def consistency(self, old: int, new: int) -> Consistency: ...

    def gossip(self, after: int) -> tuple[list[Report], int | None]:
        """The reports after id `after`, a page of them, and the id to ask after for
        the next page (None: this was the last)."""
        ...

    def report(self, note: str) -> None: ...


class HttpSource:
    """The ledger's anonymous reads: no token is sent, so the ledger cannot tell one
    watcher from another and show each its own history."""

    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SourceError(f"{url!r} is not an http:// or https:// address")
        self.where = url.rstrip("/")
        self.timeout = timeout

    def _ask(self, path: str, body: dict[str, Any] | None = None) -> Any:
        # Here, not at the top: `hazard watch check`, which reads a file, never asks,
        # and starts without HTTP's client and the ssl and email modules under it.
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.where + path,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Accept": "application/json", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                data = answer.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as e:
            detail = _detail(e.read(4096))
            if e.code == 404:
                raise NotHeld(f"{self.where}{path} answered 404: {detail}") from None
            raise SourceError(f"{self.where}{path} answered {e.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SourceError(f"cannot reach {self.where}: {reason}") from None
        if len(data) > MAX_ANSWER:
            raise SourceError(f"{self.where}{path} answered more than {MAX_ANSWER >> 20} MiB")
        try:
            return json.loads(data)
        except ValueError:
            raise SourceError(f"{self.where}{path} answered what is not JSON") from None

    def _note(self, answer: Any, *keys: str) -> str:
        found = answer
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        if not isinstance(found, str):
            raise SourceError(f"{self.where} answered no `{'.'.join(keys)}` note")
        return found

    def cosigned(self) -> str | None:
        try:
            return self._note(self._ask("/log/cosigned"), "note")
        except NotHeld:
            return None

    def latest(self) -> str | None:
        try:
            return self._note(self._ask("/log/checkpoint"), "checkpoint")
        except NotHeld:
            return None

    def consistency(self, old: int, new: int) -> Consistency:
        answer = self._ask(f"/log/proofs/consistency?from={old}&to={new}")
        proof = answer.get("proof") if isinstance(answer, dict) else None
        try:
            hashes = tuple(bytes.fromhex(h) for h in proof)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise SourceError(f"{self.where} answered a proof that is not hex hashes") from None
        return Consistency(
            self._note(answer, "old", "checkpoint"), self._note(answer, "new", "checkpoint"), hashes
        )

    def gossip(self, after: int) -> tuple[list[Report], int | None]:
        answer = self._ask(f"/log/gossip?after={after}&limit={PAGE}")
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise SourceError(f"{self.where}/log/gossip answered no list of items")
        reports = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("id"), int):
                raise SourceError(f"{self.where}/log/gossip answered an item without an id")
            by = item.get("reported_by")
            reports.append(
                Report(item["id"], self._note(item, "note"), by if isinstance(by, str) else None)
            )
        following = answer.get("next_after")
        return reports, following if isinstance(following, int) and reports else None

    def report(self, note: str) -> None:
        self._ask("/log/gossip", {"note": note})


def _detail(body: bytes) -> str:
    """A problem's words (RFC 9457 `detail`, or flask-smorest's `message`)."""
    try:
        problem = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:200]
    if isinstance(problem, dict):
        return str(problem.get("detail") or problem.get("message") or problem.get("title") or "")
    return ""


class LocalSource:
    """The log in a database, read as the ledger would serve it.

    The store's modules, and SQLAlchemy under them, are imported by the methods that
    read the database: a watcher over HTTP, or one checking a file, never loads them,
    and starts in a fraction of the time (bench.watch's command figure)."""

    def __init__(self, engine: sa.Engine, log: Verifier | None = None) -> None:
        self.engine = engine
        self.log = log
        self.where = engine.url.render_as_string(hide_password=True)

    def cosigned(self) -> str | None:
        from ledger.store.log import witnessed

        with self.engine.connect() as conn:
            found = witnessed.newest(conn)
        return None if found is None else found.note

    def latest(self) -> str | None:
        from ledger.store.log import proofs

        return proofs.latest_note(self.engine)

    def consistency(self, old: int, new: int) -> Consistency:
        from ledger.store.log import proofs

        with self.engine.connect() as conn:
            try:
                found = proofs.consistency(conn, old, new)
            except proofs.ProofRefused as e:
                raise NotHeld(str(e)) from None
        return Consistency(found.old.note, found.new.note, tuple(found.proof))

    def gossip(self, after: int) -> tuple[list[Report], int | None]:
        from ledger.store.log import witnessed

        with self.engine.connect() as conn:
            found = witnessed.reports(conn, after, PAGE)
        reports = [Report(r.id, r.note, r.reported_by) for r in found]
        return reports, (found[-1].id if len(found) == PAGE else None)

    def report(self, note: str) -> None:
        from ledger.store.log import witnessed

        if self.log is None:
            raise SourceError("no log key to check a report with")
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            with self.engine.begin() as conn:
                witnessed.report(conn, note, self.log, None, at)
        except NoteError as e:
            raise SourceError(f"the report was refused: {e}") from None
