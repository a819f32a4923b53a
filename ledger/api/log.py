"""The tamper-evident log over HTTP: its key, its signed checkpoints, proofs, what
witnesses cosigned of it, and what others report being shown.

Every write answers with a receipt (the positions it wrote and a signed checkpoint
whose tree holds them). These are what a holder of a receipt asks for later: the
log's public key, to check a checkpoint's signature; the newest checkpoint, and the
newest that witnesses cosigned; a consistency proof that the tree of their receipt is
a prefix of today's, which any rewrite of history breaks; an inclusion proof that an
event is in a checkpoint's tree, also as a C2SP tlog-proof file to check offline; and
the gossip, the checkpoints anyone reported being shown, where two of one size are a
fork for everyone to see. What they read is ledger.store.log's.

The key, checkpoints, cosignatures, consistency proofs and the gossip reveal no event,
so anyone may have them, without a token (ledger.web.anonymous): a server that cannot
tell who asks cannot show one reader a history of their own. An inclusion proof's
hashes are as public; its event (and the record its leaf covers) goes only to a
token that may see it: the setter and auditors any, a croupier those it recorded, a
player their own. A tlog-proof carries its event, and takes the same token. (A
ProofRefused is mapped to problems in ledger.api.problems' manner, here: 404 for what
the log does not hold, 422 naming the parameter a tree does not reach.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from flask import Response, g
from flask_smorest import abort

from engine.state import SETTER
from ledger.api.bodies import Blueprint
from ledger.api.callers import require
from ledger.api.problems import ProblemSchema
from ledger.books.accounts import account_stream, player_account
from ledger.commands import Role
from ledger.service import NotFound
from ledger.store.eventstore import NoSigningKey
from ledger.store.log import proofs, tlogproof, witnessed
from ledger.store.log.chains import parsed
from ledger.store.log.checkpoint import Checkpoint, NoteError, open_checkpoint, parse_note
from ledger.store.log.keys import Verifier
from ledger.web import club
from ledger.web import logschemas as ls
from ledger.web.anonymous import open_to_all
from ledger.web.tokens import Holder

blp = Blueprint(
    "log",
    __name__,
    description="The signed log: its key, checkpoints, proofs, cosignatures and gossip",
)

ANYONE = (Role.CROUPIER, Role.AUDITOR, Role.PLAYER)
"""Every role (the setter may do anything): what the log's reads ask of a token sent."""


def _anyone() -> Holder | None:
    """The caller, when they sent a token (any role may have what is asked), or None."""
    return None if g.get("holder") is None else require(*ANYONE)


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
@open_to_all(blp)
@blp.response(200, ls.LogKeySchema)
@blp.alt_response(
    503,
    schema=ProblemSchema,
    description="The service has no signing key; or it answers as many callers without a "
    "token as it takes at once (`urn:hazard:overloaded`, with Retry-After)",
)
def log_key() -> dict[str, Any]:
    """The log's public key, to check its checkpoints' signatures with."""
    _anyone()
    verifier = _log_key("it has no key to show")
    return {"origin": verifier.name, "key": verifier.text()}


def _log_key(so: str) -> Verifier:
    store = club().store
    if store.signer is None:
        raise NoSigningKey(f"the service has no signing key, so {so}")
    return store.signer.verifier


@blp.route("/log/checkpoint", methods=["GET"])
@open_to_all(blp)
@blp.response(200, ls.CheckpointSchema)
@blp.alt_response(404, schema=ProblemSchema, description="Nothing written yet")
def latest_checkpoint() -> dict[str, Any]:
    """The newest checkpoint: the signed tree of the whole log as of the last write."""
    _anyone()
    with _reading() as conn:
        return proofs.latest(conn).view()


@blp.route("/log/checkpoints/<int:size>", methods=["GET"])
@open_to_all(blp)
@blp.response(200, ls.CheckpointSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No checkpoint of that size")
def checkpoint_of_size(size: int) -> dict[str, Any]:
    """The checkpoint of the tree of `size` events, as the write that made it signed it."""
    _anyone()
    with _reading() as conn:
        return proofs.checkpoint(conn, size).view()


def _may_see(conn: sa.Connection, who: Holder, position: int) -> str | None:
    """Why `who` may not see the event at `position`, or None when they may: a croupier
    sees the events it recorded (with its token, or under its name before events named
    their token), a player their own (the setter and auditors every event)."""
    if who.role is Role.CROUPIER:
        if not who.recorded(proofs.event(conn, position).actor):
            return (f"a croupier may see the events it recorded only, and {who.name!r} did "
                    f"not record position {position}")  # fmt: skip
    elif who.role is Role.PLAYER:
        account = player_account(who.name)
        if who.name == SETTER or not proofs.concerns(
            conn, position, account_stream(account), account, who.name
        ):
            return (f"a player may see their own events only, and the event at position "
                    f"{position} is not {who.name!r}'s")  # fmt: skip
    return None


@blp.route("/log/proofs/inclusion", methods=["GET"])
@open_to_all(blp)
@blp.arguments(ls.InclusionQuerySchema, location="query", unknown=None)
@blp.response(200, ls.InclusionSchema)
@blp.alt_response(404, schema=ProblemSchema, description="No such event or checkpoint")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def inclusion_proof(query: dict[str, Any]) -> dict[str, Any]:
    """The proof that the event at `position` is in the tree of a checkpoint (RFC 9162,
    2.1.3): its leaf hash and audit path, and that checkpoint, signed; and, to a token
    that may see the event, its record and the event."""
    who = _anyone()
    position = query["position"]
    with _reading() as conn:
        found = proofs.inclusion(conn, position, query.get("size"))
        shown = who is not None and _may_see(conn, who, position) is None
    answer: dict[str, Any] = {
        "position": position,
        "leaf_index": found.leaf_index,
        "tree_size": found.checkpoint.size,
        "leaf_hash": found.leaf_hash.hex(),
        "proof": _hex(found.proof),
        "checkpoint": found.checkpoint.view(),
    }
    if shown:
        row = found.event
        view = {**row._asdict(), "payload": parsed(row.payload)}
        if view["payload"] is None:
            view["payload_text"] = row.payload  # as GET /events shows a damaged event
        answer["record"] = row.hashed().decode()
        answer["event"] = view
    return answer


TLOG_PROOF = {
    "description": "The proof as a C2SP tlog-proof (`c2sp.org/tlog-proof@v1`), to save as "
    "`<name>.tlog-proof` and check with no server: `extra` is base64 of the bytes the "
    "event's leaf covers (leaf = SHA-256(0x00 || them)), `index` its position - 1, then "
    "the inclusion path (base64, the leaf's sibling first), a blank line, and the newest "
    "checkpoint witnesses cosigned, with their cosignatures (the newest checkpoint, signed "
    "by the log alone, when none cosigned yet holds the event)",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}


@blp.route("/log/proofs/tlog-proof", methods=["GET"])
@blp.arguments(ls.PositionQuerySchema, location="query", unknown=None)
@blp.doc(responses={"200": TLOG_PROOF})
@blp.alt_response(403, schema=ProblemSchema, description="Not an event this caller may see")
@blp.alt_response(404, schema=ProblemSchema, description="No such event")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def tlog_proof(query: dict[str, Any]) -> Response:
    """The event at `position`, its inclusion proof and the newest cosigned checkpoint
    that holds it, as one C2SP tlog-proof file: a receipt checked offline."""
    who = require(*ANYONE)
    position = query["position"]
    with _reading() as conn:
        refused = _may_see(conn, who, position)
        if refused is not None:
            abort(403, message=refused)
        text = tlogproof.of(conn, position)
    return Response(text, mimetype="text/plain")


@blp.route("/log/proofs/consistency", methods=["GET"])
@open_to_all(blp)
@blp.arguments(ls.ConsistencyQuerySchema, location="query", unknown=None)
@blp.response(200, ls.ConsistencySchema)
@blp.alt_response(404, schema=ProblemSchema, description="No checkpoint of a size asked for")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def consistency_proof(query: dict[str, Any]) -> dict[str, Any]:
    """The proof that the tree of checkpoint `from` is a prefix of that of `to` (RFC
    9162, 2.1.4), with both checkpoints, signed: what a receipt is checked with."""
    _anyone()
    with _reading() as conn:
        found = proofs.consistency(conn, query["from_"], query.get("to"))
    return {
        "from_": found.old.size,
        "to": found.new.size,
        "proof": _hex(found.proof),
        "old": found.old.view(),
        "new": found.new.view(),
    }


# -- what witnesses cosigned, and what others were shown -----------------------------------


@blp.route("/log/cosigned", methods=["GET"])
@open_to_all(blp)
@blp.arguments(ls.SizeQuerySchema, location="query", unknown=None)
@blp.response(200, ls.CosignedSchema)
@blp.alt_response(404, schema=ProblemSchema, description="None cosigned, or no such checkpoint")
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def cosigned(query: dict[str, Any]) -> dict[str, Any]:
    """The newest checkpoint a witness cosigned, with every cosignature it has; or, with
    `size`, that checkpoint with whatever cosignatures it has (maybe none)."""
    _anyone()
    size = query.get("size")
    with _reading() as conn:
        found = witnessed.newest(conn) if size is None else witnessed.at(conn, size)
    if found is None:
        if size is None:
            raise NotFound("no witness has cosigned a checkpoint of this log yet")
        raise NotFound(f"no checkpoint of size {size}: the log signs one at the size each "
                       f"write leaves it, and no write left it at that size")  # fmt: skip
    text, _ = parse_note(found.note)
    return {
        "size": found.size,
        "root": Checkpoint.parse(text).root.hex(),
        "note": found.note,
        "witnesses": [{"key": k, "cosigned_at": t} for k, t in sorted(found.witnesses.items())],
    }


@blp.route("/log/gossip", methods=["POST"])
@open_to_all(blp)
@blp.arguments(ls.GossipSchema)
@blp.response(201, ls.GossipAnswerSchema)
@blp.alt_response(200, schema=ls.GossipAnswerSchema, description="Reported here before")
@blp.alt_response(422, schema=ProblemSchema, description="Not a checkpoint the log signed")
@blp.alt_response(
    503,
    schema=ProblemSchema,
    description="The service has no signing key; the database is busy; or it answers as "
    "many callers without a token as it takes at once (the last two with Retry-After)",
)
def report_gossip(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Report a checkpoint you were shown, signed by the log's key: kept once per tree
    (201 the first time, 200 after), for everyone to compare with what they were shown."""
    _anyone()
    store = club().store
    log_key = _log_key("it cannot tell a checkpoint it signed")
    try:
        checkpoint = open_checkpoint(body["note"], [log_key])
    except NoteError as refused:
        abort(422, messages={"json": {"note": [
            f"not a checkpoint signed by the log's key {log_key.text()}: {refused}"
        ]}})  # fmt: skip
    root = checkpoint.root.hex()
    with store.engine.connect() as conn:
        known = witnessed.reported(conn, checkpoint.size, root)
    if known is None:
        try:
            with store.transaction() as conn:
                known, new = witnessed.report(
                    conn, body["note"], log_key, body["reported_by"], store.clock()
                )
            return {"report": known.view(), "new": new}, 201 if new else 200
        except sa.exc.IntegrityError:  # reported by another request meanwhile
            with store.engine.connect() as conn:
                known = witnessed.reported(conn, checkpoint.size, root)
    assert known is not None
    return {"report": known.view(), "new": False}, 200


@blp.route("/log/gossip", methods=["GET"])
@open_to_all(blp)
@blp.arguments(ls.GossipQuerySchema, location="query", unknown=None)
@blp.response(200, ls.GossipPageSchema)
@blp.alt_response(422, schema=ProblemSchema, description="A bad parameter, named")
def gossip(query: dict[str, Any]) -> dict[str, Any]:
    """The checkpoints reported here, in the order they came: one per tree the log
    signed, so that two of one size, with two roots, are a fork anyone can see."""
    _anyone()
    limit = query["limit"]
    with _reading() as conn:
        found = witnessed.reports(conn, query["after"], limit + 1)
    items = found[:limit]
    return {
        "items": [report.view() for report in items],
        "next_after": items[-1].id if len(found) > limit else None,
    }
