"""The tamper-evident log over HTTP: its key, its signed checkpoints, and proofs.

Every write answers with a receipt (the positions it wrote and a signed checkpoint
whose tree holds them). These are what a holder of a receipt asks for later: the
log's public key, to check a checkpoint's signature; the newest checkpoint; a
consistency proof that the tree of their receipt is a prefix of today's, which any
rewrite of history breaks; and an inclusion proof that an event is in a checkpoint's
tree. What they read is ledger.store.log.proofs'.

The key, the checkpoints and consistency proofs reveal no event, so every role may
have them. An inclusion proof gives the event: the setter and auditors may ask for
any, a croupier for those it recorded, a player for their own (ProofRefused is
mapped to problems in ledger.api.problems' manner, here: 404 for what the log does
not hold, 422 naming the parameter a tree does not reach).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from flask_smorest import abort

from engine.state import SETTER
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.books.accounts import account_stream, player_account
from ledger.commands import Role
from ledger.service import NotFound
from ledger.store.eventstore import NoSigningKey
from ledger.store.log import proofs
from ledger.store.log.chains import parsed
from ledger.web import club
from ledger.web import logschemas as ls
from ledger.web.tokens import Holder

blp = Blueprint("log", __name__, description="The signed log: its key, checkpoints and proofs")

ANYONE = (Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
"""Who may have the key, the checkpoints and consistency proofs: every role."""


@contextmanager
def _reading() -> Iterator[sa.Connection]:
    """A connection to read the log on, with its refusals as problems."""
    try:
        with club().store.engine.connect() as conn:
            yield conn
    except proofs.OutOfTree as refused:
        # As the schemas refuse a parameter: a validation problem naming it.
        abort(422, messages={"query": {refused.field: [str(refused)]}})
    except proofs.ProofRefused as refused:
        raise NotFound(str(refused)) from None


def _hex(hashes: list[bytes]) -> list[str]:
    return [digest.hex() for digest in hashes]


@blp.route("/log/key", methods=["GET"])
@blp.response(200, ls.LogKeySchema)
@blp.alt_response(503, schema=ProblemSchema, description="The service has no signing key")
def log_key() -> dict[str, Any]:
    """The log's public key, to check its checkpoints' signatures with."""
    require(*ANYONE)
    store = club().store
    if store.signer is None:
        raise NoSigningKey("the service has no signing key, so it has no key to show")
    verifier = store.signer.verifier
    return {"origin": verifier.name, "key": verifier.text()}


@blp.route("/log/checkpoint", methods=["GET"])
@blp.response(200, ls.CheckpointSchema)
@blp.alt_response(404, schema=ProblemSchema, description="Nothing written yet")
def latest_checkpoint() -> dict[str, Any]:
    """The newest checkpoint: the signed tree of the whole log as of the last write."""
    require(*ANYONE)
    with _reading() as conn:
        return proofs.latest(conn).view()


@blp.route("/log/checkpoints/<int:size>", methods=["GET"])
@blp.response(200, ls.CheckpointSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No checkpoint of that size")
def checkpoint_of_size(size: int) -> dict[str, Any]:
    """The checkpoint of the tree of `size` events, as the write that made it signed it."""
    require(*ANYONE)
    with _reading() as conn:
        return proofs.checkpoint(conn, size).view()


def _may_see(conn: sa.Connection, who: Holder, position: int) -> None:
    """A croupier sees the events it recorded, a player their own (the setter and
    auditors every event)."""
    if who.role is Role.CROUPIER:
        if proofs.event(conn, position).actor != who.actor:
            abort(403, message=f"a croupier may have proofs of the events it recorded only, "
                               f"and {who.name!r} did not record position {position}")  # fmt: skip
    elif who.role is Role.PLAYER:
        account = player_account(who.name)
        if who.name == SETTER or not proofs.concerns(
            conn, position, account_stream(account), account, who.name
        ):
            abort(403, message=f"a player may have proofs of their own events only, and the "
                               f"event at position {position} is not {who.name!r}'s")  # fmt: skip


@blp.route("/log/proofs/inclusion", methods=["GET"])
@blp.arguments(ls.InclusionQuerySchema, location="query", unknown=None)
@blp.response(200, ls.InclusionSchema)
@blp.alt_response(403, schema=ProblemSchema, description="Not an event this caller may see")
@blp.alt_response(404, schema=ProblemSchema, description="No such event or checkpoint")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def inclusion_proof(query: dict[str, Any]) -> dict[str, Any]:
    """The proof that the event at `position` is in the tree of a checkpoint (RFC 9162,
    2.1.3): its record, leaf hash and audit path, and that checkpoint, signed."""
    who = require(*ANYONE)
    position = query["position"]
    with _reading() as conn:
        _may_see(conn, who, position)
        found = proofs.inclusion(conn, position, query.get("size"))
    row = found.event
    view = {**row._asdict(), "payload": parsed(row.payload)}
    if view["payload"] is None:
        view["payload_text"] = row.payload  # as GET /events shows a damaged event
    return {
        "position": position,
        "leaf_index": found.leaf_index,
        "tree_size": found.checkpoint.size,
        "leaf_hash": found.leaf_hash.hex(),
        "record": row.hashed().decode(),
        "event": view,
        "proof": _hex(found.proof),
        "checkpoint": found.checkpoint.view(),
    }


@blp.route("/log/proofs/consistency", methods=["GET"])
@blp.arguments(ls.ConsistencyQuerySchema, location="query", unknown=None)
@blp.response(200, ls.ConsistencySchema)
@blp.alt_response(404, schema=ProblemSchema, description="No checkpoint of a size asked for")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def consistency_proof(query: dict[str, Any]) -> dict[str, Any]:
    """The proof that the tree of checkpoint `from` is a prefix of that of `to` (RFC
    9162, 2.1.4), with both checkpoints, signed: what a receipt is checked with."""
    require(*ANYONE)
    with _reading() as conn:
        found = proofs.consistency(conn, query["from_"], query.get("to"))
    return {
        "from_": found.old.size,
        "to": found.new.size,
        "proof": _hex(found.proof),
        "old": found.old.view(),
        "new": found.new.view(),
    }
