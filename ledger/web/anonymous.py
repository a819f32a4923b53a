"""Reads anyone may make without a token, and the cap that keeps strangers from
crowding out the club.

The log's key, its checkpoints and cosignatures, consistency proofs, the hashes of an
inclusion proof and the gossip reveal no event, and are served without a token, so
that the server cannot tell who is checking it and show one reader a history of its
own. A token sent to them is still read (and a dead one refused): an inclusion proof
then carries its event to a caller who may see it.

A caller without a token has no name to be capped by, as a token's heavy reads are
(ledger.web.heavy); and behind a proxy every stranger comes from the proxy's address.
So strangers share a small pool per worker: at most `at_once` of their requests run at
once on a worker, whoever sends them, and one more is answered 503
(`urn:hazard:overloaded`) with Retry-After at once, having read nothing. Each of these
reads takes milliseconds; the cap is there so that a flood of them holds only a few of
a worker's threads, and the club's own requests, with their tokens, keep the rest.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from flask import current_app, g

from ledger.web.heavy import Overloaded

AT_ONCE = 2
"""Requests without a token one worker serves at once, unless told (`hazard serve`: a
quarter of its threads)."""
MARK = "hazard_anonymous"
"""The attribute a view open to strangers carries, which the app's authentication reads."""
SECURITY: list[dict[str, list[str]]] = [{}, {"bearer": []}]
"""The contract's word for "a token is optional" (OpenAPI: an empty requirement)."""

F = TypeVar("F", bound=Callable[..., Any])


class Strangers:
    """One worker's pool of requests without a token."""

    def __init__(self, at_once: int = AT_ONCE) -> None:
        self.at_once = at_once
        self._slots = threading.BoundedSemaphore(at_once)

    def hold(self) -> Callable[[], None]:
        """A slot, or Overloaded (a 503 with Retry-After) when the pool is full."""
        if not self._slots.acquire(blocking=False):
            raise Overloaded(
                f"the server already answers as many requests without a token as it takes "
                f"at once ({self.at_once} a worker); nothing was read: retry, or send a token"
            )
        return self._slots.release


def open_to_all(blp: Any) -> Callable[[F], F]:
    """A view of `blp` that a caller without a token may call: held in the strangers'
    pool while it runs for one, and documented as taking a token or none."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def answering(*args: Any, **kwargs: Any) -> Any:
            if g.get("holder") is not None:
                return view(*args, **kwargs)
            release = strangers().hold()
            try:
                return view(*args, **kwargs)
            finally:
                release()

        setattr(answering, MARK, True)
        return cast(F, blp.doc(security=SECURITY)(answering))

    return decorate


def is_open(view: Any) -> bool:
    """Whether `view` (an app's view function) may be called without a token."""
    return bool(getattr(view, MARK, False))


def strangers() -> Strangers:
    found: Strangers = current_app.extensions["hazard.strangers"]
    return found
