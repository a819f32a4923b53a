"""The witness over HTTP, c2sp.org/tlog-witness, and nothing else:

    POST /add-checkpoint              200: the cosignature line; 400 403 404 409 422; 413
    GET  /<sha256(origin) hex>/checkpoint   the newest cosigned checkpoint; 404 if none
    GET  /key                         this witness's public key (a vkey), for a policy

Every answer is plain text, one line saying why when it is a refusal; 409's body is the
size the witness last cosigned, as `text/x.tlog.size`. Any other path is 404 and any
other method 405 (Flask's automatic OPTIONS is off: it is nothing the spec serves).
A body over MAX_BODY is refused (413) before it is read; a state file held by another
submission past its timeout is 503 with Retry-After, never a long wait.
"""

from __future__ import annotations

import logging
import re

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.wrappers import Response as BaseResponse

from ledger.witness.cosigning import Witness
from ledger.witness.judge import NotAtOld, Refused, status
from ledger.witness.state import Busy
from ledger.witness.submission import MAX_BODY, Malformed

log = logging.getLogger("hazard.witness")

TEXT = "text/plain; charset=utf-8"
SIZE = "text/x.tlog.size"
_ORIGIN_HASH = re.compile(r"[0-9a-f]{64}", re.ASCII)


def _text(body: str, code: int = 200) -> Response:
    return Response(body, code, content_type=TEXT)


def _body() -> bytes:
    """The request's body, whole, or 413. werkzeug stops a chunked body (no
    Content-Length) quietly at MAX_CONTENT_LENGTH: a note cut short must not be read as
    if it were the whole, so such a body is read here, one byte past the limit."""
    if request.content_length is not None or not request.environ.get("wsgi.input_terminated"):
        return request.get_data(cache=False)  # 413 when its length is over the limit
    stream = request.environ["wsgi.input"]
    chunks: list[bytes] = []
    got = 0
    while got <= MAX_BODY:
        chunk = stream.read(MAX_BODY + 1 - got)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
    raise RequestEntityTooLarge()


def create_app(witness: Witness) -> Flask:
    app = Flask("ledger.witness")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["hazard.witness"] = witness

    def add_checkpoint() -> Response:
        body = _body()
        try:
            cosignature = witness.add_checkpoint(body)
        except NotAtOld as refused:
            log.info("answered 409: %s", refused)
            return Response(f"{refused.size}\n", 409, content_type=SIZE)
        except (Refused, Malformed) as refused:
            log.info("answered %d: %s", status(refused), refused)
            return _text(f"{refused}\n", status(refused))
        except Busy:
            answer = _text("the witness is busy with another checkpoint; try again\n", 503)
            answer.headers["Retry-After"] = "1"
            return answer
        return _text(cosignature.line())

    def checkpoint(origin_hash: str) -> Response:
        note = witness.newest(origin_hash) if _ORIGIN_HASH.fullmatch(origin_hash) else None
        if note is None:
            return _text("this witness has cosigned no checkpoint of that log\n", 404)
        return _text(note)

    def key() -> Response:
        return _text(witness.key() + "\n")

    app.add_url_rule(
        "/add-checkpoint", view_func=add_checkpoint, methods=["POST"],
        provide_automatic_options=False,
    )  # fmt: skip
    app.add_url_rule(
        "/<origin_hash>/checkpoint", view_func=checkpoint, methods=["GET"],
        provide_automatic_options=False,
    )  # fmt: skip
    app.add_url_rule("/key", view_func=key, methods=["GET"], provide_automatic_options=False)

    @app.errorhandler(HTTPException)
    def plain(error: HTTPException) -> BaseResponse:
        """Flask's own refusals (404, 405, 413, 400) as plain text too."""
        answer = error.get_response()
        answer.set_data(f"{error.description}\n")
        answer.content_type = TEXT
        return answer

    return app
