"""Pushing the log's checkpoints to its witnesses, in the background (C2SP tlog-witness).

A club's policy (HAZARD_POLICY, C2SP tlog-policy) names the log, by the service's own
key, and its witnesses; those with a URL are pushed to. At most every interval
(HAZARD_WITNESS_INTERVAL, 2 s), for each witness, the pusher takes the newest stored
checkpoint and, unless the witness cosigned it already, sends it:

    POST <witness>/add-checkpoint
    old <the size it last cosigned here>
    <the consistency proof from that size to the checkpoint's, a base64 hash a line>

    <the checkpoint, as the log signed it>

and keeps the cosignature it answers with, once it verifies against the witness's key
(ledger.store.log.witnessed.record). A witness that cosigned another size than the
ledger knows of (a lost answer, a restored database) says which, with a 409: the push
is made once more from there.

Writes never wait on a witness. A write's receipt is signed by the bank at once and
cosigned later; a push reads the newest checkpoint and the proof on a connection of
its own, closed before the request is sent, and keeps the cosignature in a
transaction of its own after the answer has come. Each witness is pushed to by a
thread of its own, with short timeouts, so a witness that hangs holds only its own
thread. One that is down or refuses is tried again less often (up to 16 intervals
apart), and how it answered is kept in the database (ledger.store.log.pushes) as it
changes, for /readyz, logged, and counted in the metrics.

One process pushes, of all the workers and servers of a database: the one that holds
the pusher's lock (ledger.store.log.pushes.Leadership). The others' threads wait, and
one takes over when it is let go (its process ended).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import http.client
import logging
import os
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from ledger.store import db
from ledger.store.eventstore import EventStore, utc_now
from ledger.store.log import merkle, proofs, pushes, tree, witnessed
from ledger.store.log.checkpoint import NoteError, parse_note
from ledger.store.log.keys import Verifier
from ledger.store.log.policy import Policy, PolicyError, Witness

POLICY_ENV = "HAZARD_POLICY"
INTERVAL_ENV = "HAZARD_WITNESS_INTERVAL"
INTERVAL_S = 2.0
"""Seconds between two pushes to a witness, at least."""
TIMEOUT_S = 5.0
"""How long a witness may take to accept a connection, and then to send each part of
its answer, before the push is given up as down."""
MAX_ANSWER = 64 * 1024
"""The longest answer read from a witness: a few cosignature lines are a few hundred bytes."""
MAX_PROOF = 63
"""tlog-witness: a client sends at most 63 consistency proof lines."""
BACKOFF = 16
"""A witness that keeps failing is tried every 1, 2, 4, 8, then 16 intervals."""
CONTENT_TYPE = "text/plain; charset=utf-8"
log = logging.getLogger("hazard.pusher")


class State(enum.StrEnum):
    """How a witness answered the last push, as /readyz shows it."""

    WAITING = "waiting"
    """Nothing pushed yet: no checkpoint, or this pusher has not reached it."""
    OK = "ok"
    """It cosigned the newest checkpoint it was pushed."""
    DOWN = "down"
    """It could not be reached, timed out, or failed (5xx): tried again later."""
    REFUSED = "refused"
    """It answered but would not cosign (403, 404, 422, a 409 again after the retry, a
    bad cosignature): someone must look, the witness's operator or the bank's."""


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one push came to: the witness's state, the largest size it has cosigned
    here, and the error in words (None when it cosigned)."""

    state: State
    cosigned_size: int
    error: str | None = None


class _Failed(Exception):
    def __init__(self, state: State, error: str) -> None:
        super().__init__(error)
        self.state = state


def _down(error: str) -> _Failed:
    return _Failed(State.DOWN, error)


def _refused(error: str) -> _Failed:
    return _Failed(State.REFUSED, error)


# -- configuration ------------------------------------------------------------------


def policy_for(path: str | None, log_key: Verifier | None) -> Policy | None:
    """The policy at `path` (None or empty: none), refused (PolicyError) unless one of
    its `log` lines is `log_key`, the service's own: the ledger pushes its own
    checkpoints, and a witness that follows another log would refuse every one."""
    if not path:
        return None
    policy = Policy.read_file(path)
    if log_key is None:
        raise PolicyError(
            f"{POLICY_ENV}={path} names witnesses, but the service has no signing key to "
            "sign the checkpoints they cosign (`hazard key create`)"
        )
    if not any(entry.key.text() == log_key.text() for entry in policy.logs):
        named = ", ".join(entry.key.text() for entry in policy.logs) or "no log"
        raise PolicyError(
            f"{path}: its log line names {named}, not this service's key "
            f"{log_key.text()}: the policy's log must be the one its witnesses are "
            f"pushed (`hazard key show` prints it)"
        )
    return policy


def interval_setting(text: str | None) -> float:
    """HAZARD_WITNESS_INTERVAL's seconds (default 2), or db.BadSetting."""
    if not text:
        return INTERVAL_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not 0 < seconds <= 3600:
        raise db.BadSetting(f"{INTERVAL_ENV} is a number of seconds, above 0 and at most "
                            f"3600, not {text!r}")  # fmt: skip
    return seconds


def pushed_to(policy: Policy | None) -> list[Witness]:
    """The policy's witnesses that have a URL: those the ledger pushes to."""
    return [] if policy is None else [w for w in policy.witnesses.values() if w.url]


def standings(engine: sa.Engine, policy: Policy | None) -> list[dict[str, Any]]:
    """Each pushed-to witness as /readyz lists it: name, url, state, the largest size
    it cosigned here, and its last error, as the pushing process left them."""
    witnesses = pushed_to(policy)
    if not witnesses:
        return []
    keys = [w.key.text() for w in witnesses]
    with engine.connect() as conn:
        saved = pushes.standings(conn)
        sizes = pushes.cosigned_sizes(conn, keys)
    found = []
    for witness, key in zip(witnesses, keys, strict=True):
        standing = saved.get(key)
        found.append(
            {
                "name": witness.name,
                "url": witness.url,
                "state": standing.state if standing else State.WAITING.value,
                "cosigned_size": sizes[key],
                "last_error": standing.last_error if standing else None,
                "since": standing.since if standing else None,
            }
        )
    return found


# -- one witness, over HTTP ------------------------------------------------------------


class _Line:
    """A kept-alive connection to one witness (tlog-witness asks clients for keep-alive),
    opened again after any failure."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PolicyError(f"a witness's URL is http:// or https://, not {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port
        self.path = parts.path.rstrip("/") + "/add-checkpoint"
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def post(self, body: bytes) -> tuple[int, str, str]:
        """The witness's status, content type and answer (as text) to `body`."""
        kept = self._conn is not None
        try:
            try:
                return self._exchange(body)
            except _CLOSED_WHILE_IDLE:
                if not kept:
                    raise
                # A connection the witness closed while it was idle (as servers do
                # after a while): sent again once on a new one. A push sent twice is
                # answered 409 at worst, which the pusher follows.
                self.close()
                return self._exchange(body)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise _down(f"no answer from {self.host}: {_words(exc)}") from None

    def _exchange(self, body: bytes) -> tuple[int, str, str]:
        if self._conn is None:
            kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self._conn = kind(self.host, self.port, timeout=self.timeout)
        self._conn.request("POST", self.path, body=body, headers={"Content-Type": CONTENT_TYPE})
        response = self._conn.getresponse()
        data = response.read(MAX_ANSWER + 1)
        if len(data) > MAX_ANSWER or response.will_close:
            self.close()  # what is left of it is never read
        return response.status, response.getheader("Content-Type") or "", _text(data)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_CLOSED_WHILE_IDLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _words(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _text(data: bytes) -> str:
    return data[:MAX_ANSWER].decode("utf-8", "replace")


def _quoted(text: str) -> str:
    """A witness's answer, short and on one line, to quote in an error."""
    flat = " ".join(text.split())
    return repr(flat[:200] + ("..." if len(flat) > 200 else ""))


# -- the pusher ------------------------------------------------------------------------

Observer = Callable[[Witness, Outcome], None]


class Pusher:
    """Pushes `store`'s checkpoints to the witnesses of `policy` that have a URL, from
    threads of its own once `start`ed; `push` is one push, as they make it."""

    def __init__(
        self,
        store: EventStore,
        policy: Policy,
        interval: float = INTERVAL_S,
        timeout: float = TIMEOUT_S,
        observe: Observer | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.interval = interval
        self.timeout = timeout
        self.witnesses = pushed_to(policy)
        self._observe = observe
        self._lines = {w.name: _Line(w.url or "", timeout) for w in self.witnesses}
        self._said: dict[str, tuple[State, str | None]] = {}
        self._leadership = pushes.Leadership(store.engine)
        self._leading = threading.Event()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- running in the background --

    def start(self) -> None:
        """Try for the pusher's lock every interval, and push while holding it."""
        lead = threading.Thread(target=self._lead, name="hazard-pusher", daemon=True)
        self._threads.append(lead)
        lead.start()

    def stop(self) -> None:
        """Stop pushing, and let go of the lock (tests; a process's end does it too)."""
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=self.interval + self.timeout * 4)
        self._leadership.let_go()
        for line in self._lines.values():
            line.close()

    @property
    def leading(self) -> bool:
        """Whether this process is the one that pushes."""
        return self._leading.is_set()

    def _lead(self) -> None:
        while not self._stopped.is_set():
            try:
                held = self._leadership.take()
            except Exception as exc:  # the database is away: try again next time
                log.warning("the pusher's lock could not be asked for: %s", _words(exc))
                held = False
            if held and not self._leading.is_set():
                log.info("this process pushes the log's checkpoints to its witnesses",
                         extra={"pid": os.getpid()})  # fmt: skip
                self._leading.set()
                self._start_witnesses()
            elif not held:
                self._leading.clear()
            self._stopped.wait(self.interval)

    def _start_witnesses(self) -> None:
        if len(self._threads) > 1:
            return  # started the first time this process led; they wait while it does not
        for witness in self.witnesses:
            thread = threading.Thread(
                target=self._keep_pushing, args=(witness,), name=f"hazard-push-{witness.name}",
                daemon=True,
            )  # fmt: skip
            self._threads.append(thread)
            thread.start()

    def _keep_pushing(self, witness: Witness) -> None:
        failures = 0
        while not self._stopped.is_set():
            if self._leading.is_set():
                try:
                    outcome = self.push(witness)
                except Exception:  # the database, or a fault: the witness is not to blame
                    log.exception("a push to witness %s failed here", witness.name)
                    failures += 1
                else:
                    failures = failures + 1 if outcome.state in (State.DOWN, State.REFUSED) else 0
            pause = self.interval * min(2 ** max(failures - 1, 0), BACKOFF)
            self._stopped.wait(pause)

    # -- one push --

    def push(self, witness: Witness) -> Outcome:
        """Push the newest checkpoint to `witness` unless it cosigned it already, keep
        what it answers with, and say how it went (kept, logged and observed)."""
        try:
            outcome = self._push(witness)
        except _Failed as failed:
            with self.store.engine.connect() as conn:
                size = witnessed.last_cosigned(conn, witness.key)
            outcome = Outcome(failed.state, size, str(failed))
        self._said_so(witness, outcome)
        return outcome

    def _push(self, witness: Witness) -> Outcome:
        with self.store.engine.connect() as conn:
            cosigned = witnessed.last_cosigned(conn, witness.key)
            try:
                newest = proofs.latest(conn)
            except proofs.NoCheckpoint:
                return Outcome(State.WAITING, cosigned)
        if cosigned >= newest.size:
            return Outcome(State.OK, cosigned)
        status, kind, answer = self._lines[witness.name].post(self._body(cosigned, newest))
        if status == 409:
            held = self._size(answer, kind, witness)
            if held > newest.size:
                raise _refused(
                    f"the witness has cosigned a tree of size {held}, larger than the log's "
                    f"newest ({newest.size}): it was shown a checkpoint this log does not hold"
                )
            status, kind, answer = self._lines[witness.name].post(self._body(held, newest))
            if status == 409:
                again = self._size(answer, kind, witness)
                raise _refused(f"the witness answered 409 twice: it holds size {held}, "
                               f"then {again}")  # fmt: skip
        if status != 200:
            what = _down if status >= 500 else _refused
            raise what(f"the witness answered {status}: {_quoted(answer)}")
        self._keep(witness, newest, answer)
        return Outcome(State.OK, newest.size)

    def _body(self, old: int, newest: proofs.StoredCheckpoint) -> bytes:
        proof: list[bytes] = []
        if 0 < old < newest.size:
            with self.store.engine.connect() as conn:
                proof = merkle.prove_tree(newest.size, old, tree.reader(conn))
        if len(proof) > MAX_PROOF:  # a tree of more than 2^63 records: never
            raise _refused(f"a consistency proof of {len(proof)} hashes, past the {MAX_PROOF} "
                           "a witness reads")  # fmt: skip
        lines = [f"old {old}\n", *(base64.b64encode(h).decode() + "\n" for h in proof), "\n"]
        return ("".join(lines) + newest.note).encode()

    @staticmethod
    def _size(answer: str, kind: str, witness: Witness) -> int:
        """The size in a 409's body (`text/x.tlog.size`): the witness's last cosigned."""
        text = answer.removesuffix("\n")
        if not text.isascii() or not text.isdigit() or text != str(int(text)):
            raise _refused(f"the witness answered 409 without a size ({kind or 'no type'}): "
                           f"{_quoted(answer)}")  # fmt: skip
        return int(text)

    def _keep(self, witness: Witness, newest: proofs.StoredCheckpoint, answer: str) -> None:
        """Keep the witness's cosignature of `newest` from its answer, once it verifies;
        lines by other keys are left (tlog-witness: a client ignores them)."""
        text, _ = parse_note(newest.note)
        try:
            _, lines = parse_note(text + "\n" + answer)
        except NoteError as exc:
            raise _refused(f"the witness's answer is not signature lines ({exc}): "
                           f"{_quoted(answer)}") from None  # fmt: skip
        own = [line for line in lines if witness.key.matches(line)]
        if not own:
            raise _refused("the witness answered 200 with no cosignature by its key "
                           f"({witness.key.text()})")  # fmt: skip
        try:
            with self.store.transaction() as conn:
                for line in own:
                    witnessed.record(conn, newest.size, witness.key, line, utc_now())
        except witnessed.NotCosigned:
            raise _refused(f"the witness's cosignature of size {newest.size} does not verify "
                           f"against its key ({witness.key.text()})") from None  # fmt: skip
        except sa.exc.IntegrityError:
            pass  # kept meanwhile by another pusher, for the instant two believed they led

    # -- saying so --

    def _said_so(self, witness: Witness, outcome: Outcome) -> None:
        if self._observe is not None:
            self._observe(witness, outcome)
        said = (outcome.state, outcome.error)
        if outcome.state is State.WAITING or self._said.get(witness.name) == said:
            return
        before = self._said.get(witness.name)
        self._said[witness.name] = said
        key = witness.key.text()
        if before is None:  # this process's first word: what another left may be the same
            with self.store.engine.connect() as conn:
                kept = pushes.standings(conn).get(key)
            if kept is not None and (kept.state, kept.last_error) == said:
                return
        with self.store.transaction() as conn:
            pushes.save(conn, key, pushes.Standing(outcome.state, outcome.error, utc_now()))
        extra = {"witness": witness.name, "url": witness.url, "state": outcome.state.value,
                 "cosigned_size": outcome.cosigned_size}  # fmt: skip
        if outcome.state is State.OK:
            log.info("witness %s cosigns, at size %d", witness.name, outcome.cosigned_size,
                     extra=extra)  # fmt: skip
        else:
            log.warning("witness %s is %s: %s", witness.name, outcome.state.value,
                        outcome.error, extra={**extra, "error": outcome.error})  # fmt: skip
