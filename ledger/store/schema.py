"""The database tables, in SQLAlchemy Core: an append-only event log and the read
models written beside it. Migrations in migrations/ create exactly these."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Every event, table or account, in one log. `position` is global and gap-free;
# (stream, version) is unique, which is the optimistic concurrency check. The payload
# is canonical JSON text, so the hash is over exactly the bytes stored.
EXCEPTIONS = "type IN ('ThrowVoided', 'BetVoided', 'DisputeResolved', 'BetAdjusted')"
"""The events of the exceptions report, as its index's condition says them: a query
that says them so is one SQLite sees the partial index serves (ledger.books.significant)."""
PLAYER_LIMITS = "type IN ('LimitSet', 'BreakTaken')"
"""A player's limits and breaks, as their index's condition says them."""

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("stream", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("type", sa.String(64), nullable=False),
    sa.Column("schema_version", sa.SmallInteger, nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("idempotency_key", sa.String(200), nullable=True),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.UniqueConstraint("stream", "version"),
    sa.CheckConstraint("version >= 1", name="version_positive"),
    # The events that open a table, by position: the tables newest first, a page at a
    # time, without reading every table's events (0016).
    sa.Index(
        "ix_events_table_opened",
        "position",
        sqlite_where=sa.text("type = 'TableOpened'"),
        postgresql_where=sa.text("type = 'TableOpened'"),
    ),
    # The club's reports' events, by position: the exceptions report's and the player's
    # limits and breaks the log of significant events lists (0018, ledger.books.significant).
    sa.Index(
        "ix_events_exceptions",
        "position",
        sqlite_where=sa.text(EXCEPTIONS),
        postgresql_where=sa.text(EXCEPTIONS),
    ),
    sa.Index(
        "ix_events_player_limits",
        "position",
        sqlite_where=sa.text(PLAYER_LIMITS),
        postgresql_where=sa.text(PLAYER_LIMITS),
    ),
)

# Each append that held its clock back (ledger.store.eventstore): the first position it
# wrote, what its clock read, and the time it recorded instead, the last event's, so
# that recorded_at never goes back (migration 0013's trigger refuses an event earlier
# than the one before it). Written in the append's transaction; append-only.
clock_holds = sa.Table(
    "clock_holds",
    metadata,
    sa.Column(
        "position",
        sa.BigInteger,
        sa.ForeignKey("events.position"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("clock", sa.String(32), nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
)

# A command's idempotency key and a hash of its request: a repeat with the same body
# gets the stored response back; the same key with another body is refused.
commands = sa.Table(
    "commands",
    metadata,
    sa.Column("idempotency_key", sa.String(200), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("response", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
)

# Read models, written in the same transaction as the events that cause them and
# rebuildable from the events at any time.
accounts = sa.Table(
    "accounts",
    metadata,
    sa.Column("account", sa.String(220), primary_key=True),
    sa.Column("balance", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("credit_limit", sa.BigInteger, nullable=False, server_default="0"),
    # The accounts holding money: every open bet's escrow (and none once it is closed),
    # so that a player's open bets are found without reading every table (0015).
    sa.Index(
        "ix_accounts_held",
        "account",
        sqlite_where=sa.text("balance <> 0"),
        postgresql_where=sa.text("balance <> 0"),
    ),
)

postings = sa.Table(
    "postings",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
    sa.Column("position", sa.BigInteger, sa.ForeignKey("events.position"), nullable=False),
    sa.Column("account", sa.String(220), nullable=False),
    sa.Column("amount", sa.BigInteger, nullable=False),
    sa.Column("counterparty", sa.String(220), nullable=False),
    # The account's balance just after this posting (its running balance, in position
    # and then id order): a balance as of any position is one probe of the index below.
    sa.Column("balance", sa.BigInteger, nullable=False),
    # A statement pages through one account's postings in ledger order.
    sa.Index("ix_postings_account_position", "account", "position", "id"),
)

# A cache of folded table state, keyed by stream and version; safe to delete.
snapshots = sa.Table(
    "snapshots",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("state", sa.LargeBinary, nullable=False),
)

# API bearer tokens. Only a SHA-256 hash of the secret is kept; `id` is the token's
# public name, and a revoked token keeps its row so that the audit trail can name it.
# `tag` is the start of the id that events name the token by (`croupier:cecil#<tag>`),
# unique among every token ever made. One live token to a role and name: a revoked
# token's name may be given again, to a token with another tag.
tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("revoked_at", sa.String(32), nullable=True),
    sa.Column("tag", sa.String(32), nullable=False),
    sa.CheckConstraint("role IN ('setter', 'croupier', 'auditor', 'player')", name="role"),
    sa.Index("ix_tokens_tag", "tag", unique=True),
    sa.Index(
        "ix_tokens_live_role_name",
        "role",
        "name",
        unique=True,
        sqlite_where=sa.text("revoked_at IS NULL"),
        postgresql_where=sa.text("revoked_at IS NULL"),
    ),
)

# Read models of the tables (ledger.books.tableviews), written in the append's transaction
# and rebuilt from the events with the rest.
#
# One row per bet closed, settled or voided: the position of the BetSettled/BetVoided
# event. `transfers` and `sources` are canonical JSON: what the settlement moved, in
# ledger accounts, and the positions of the events it came from. Every listing pages by
# position, so each index ends in it: "after position P" is a range scan in any of them.
settlements = sa.Table(
    "settlements",
    metadata,
    sa.Column(
        "position",
        sa.BigInteger,
        sa.ForeignKey("events.position"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("stream", sa.String(200), nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("bet_id", sa.String(32), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("winner", sa.String(200), nullable=True),
    sa.Column("reason", sa.String(200), nullable=True),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("transfers", sa.Text, nullable=False),
    sa.Column("sources", sa.Text, nullable=False),
    # How many adjustments a dispute's resolution made to the bet since (a read of the
    # settlement then fetches them from `adjustments`, and only then).
    sa.Column("adjusted", sa.Integer, nullable=False, server_default="0"),
    sa.CheckConstraint("outcome IN ('settled', 'voided')", name="outcome"),
    sa.Index("ix_settlements_stream_round", "stream", "round", "position"),
    sa.Index("ix_settlements_stream_position", "stream", "position"),
    sa.Index("ix_settlements_bet_id", "bet_id", "stream"),
    sa.Index("ix_settlements_recorded_at", "recorded_at"),
)

# Who was party to each settlement, by ledger account ("player:ann", "setter"): keyed
# (party, position), so "a player's settlements, paged by position" is a range scan.
settlement_parties = sa.Table(
    "settlement_parties",
    metadata,
    sa.Column(
        "position",
        sa.BigInteger,
        sa.ForeignKey("settlements.position"),
        nullable=False,
        autoincrement=False,
    ),
    sa.Column("party", sa.String(220), nullable=False),
    sa.PrimaryKeyConstraint("party", "position"),
)

# One row per round of a table: who cast, the main and chance, how it ended, and the
# span of the table's stream that belongs to it (open rounds have no result yet).
rounds = sa.Table(
    "rounds",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("caster", sa.String(200), nullable=False),
    sa.Column("main", sa.Integer, nullable=True),
    sa.Column("chance", sa.Integer, nullable=True),
    sa.Column("result", sa.String(16), nullable=True),
    sa.Column("first_version", sa.Integer, nullable=False),
    sa.Column("last_version", sa.Integer, nullable=False),
    sa.Column("first_position", sa.BigInteger, nullable=False),
    sa.Column("last_position", sa.BigInteger, nullable=False),
    sa.Column("started_at", sa.String(32), nullable=False),
    sa.Column("ended_at", sa.String(32), nullable=True),
    # Each caster's rounds in order: where a player may hold the dice (0015).
    sa.Index("ix_rounds_caster", "caster", "first_position"),
)

# The log's Merkle tree (ledger.store.log.tree): every stored hash of RFC 9162's tree over
# the events in position order, by its index in ledger.store.log.merkle's numbering. Record
# n of the tree is the event at position n + 1. Append-only, like the events.
tree_hashes = sa.Table(
    "tree_hashes",
    metadata,
    sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("hash", sa.LargeBinary(32), nullable=False),
    # One B-tree lookup per hash on SQLite, not two (rowid table plus its key's index).
    sqlite_with_rowid=False,
)

# A signed checkpoint of the tree for every write that appended events: the tree's size
# after the write, its root (hex), when, and the signed note (C2SP tlog-checkpoint)
# exactly as it was handed out in the write's receipt. Append-only: never replaced.
checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("size", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("root", sa.String(64), nullable=False),
    sa.Column("issued_at", sa.String(32), nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.CheckConstraint("size >= 1", name="size_positive"),
)

# Every head of the log (ledger.store.log.heads) as each write's seal left it: a row per
# head a write moved, at the seal's position (on a log from before seals, its first
# heads at the last event's). `idx` is the head's leaf in the heads tree, in the order
# each first appeared. The heads at a seal are each head's newest row at or before it.
# Append-only, like the events it is derived from.
heads_log = sa.Table(
    "heads_log",
    metadata,
    sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("name", sa.String(220), nullable=False),
    sa.Column("count", sa.BigInteger, nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Index("ix_heads_log_position", "position"),
)

# Each witness's cosignature line of a stored checkpoint, as the witness returned it
# (C2SP tlog-cosignature); `witness` is the witness key's vkey. The checkpoint's note with
# these lines added is the cosigned checkpoint. Append-only.
cosignatures = sa.Table(
    "cosignatures",
    metadata,
    sa.Column("size", sa.BigInteger, sa.ForeignKey("checkpoints.size"), primary_key=True),
    sa.Column("witness", sa.String(300), primary_key=True),
    sa.Column("line", sa.Text, nullable=False),
    sa.Column("cosigned_at", sa.BigInteger, nullable=False),
    sa.Column("received_at", sa.String(32), nullable=False),
)

# How the ledger's last push to each witness went (ledger.pusher): its state (ok, down,
# refused), the last error in words, and since when; `witness` is the witness key's vkey.
# The one process that pushes writes it as the state changes; every server's /readyz
# reads it. The service's own bookkeeping, not the log: rewritten in place.
witness_states = sa.Table(
    "witness_states",
    metadata,
    sa.Column("witness", sa.String(300), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("last_error", sa.Text),
    sa.Column("since", sa.String(32), nullable=False),
)

# Checkpoints that witnesses and watchers reported being shown, one row per (size, root)
# signed by the log's key: two rows of one size are a fork, for everyone to see.
gossip = sa.Table(
    "gossip",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("root", sa.String(64), nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("reported_by", sa.String(200)),
    sa.Column("reported_at", sa.String(32), nullable=False),
    sa.UniqueConstraint("size", "root"),
)

# The server seed of each caster's turn at a server-dice table (engine.serverdice): kept
# secret until the turn ends and its SeedRevealed carries it into the log. `version` is
# the version of the turn's SeedCommitted in `stream`. Written in the transaction that
# appends that commitment; never exported, never served. Append-only: a seed that could
# be replaced could be chosen after the throws.
server_seeds = sa.Table(
    "server_seeds",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("seed", sa.LargeBinary(32), nullable=False),
)

# Disputes (engine.disputes), one row each: the round disputed, who opened it and why,
# and once resolved, how and why. Written beside the events like the other read models;
# the events (DisputeOpened, DisputeResolved) are the record.
disputes = sa.Table(
    "disputes",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("dispute_id", sa.String(32), primary_key=True),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("claimant", sa.String(200), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("claim", sa.Text, nullable=False),
    sa.Column("throw", sa.Integer, nullable=True),
    sa.Column("die1", sa.Integer, nullable=True),
    sa.Column("die2", sa.Integer, nullable=True),
    sa.Column("opened_version", sa.Integer, nullable=False),
    sa.Column("opened_position", sa.BigInteger, nullable=False),
    sa.Column("opened_by", sa.String(200), nullable=False),
    sa.Column("opened_at", sa.String(32), nullable=False),
    sa.Column("resolution", sa.String(16), nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("resolved_throw", sa.Integer, nullable=True),
    sa.Column("resolved_die1", sa.Integer, nullable=True),
    sa.Column("resolved_die2", sa.Integer, nullable=True),
    sa.Column("resolved_version", sa.Integer, nullable=True),
    sa.Column("resolved_position", sa.BigInteger, nullable=True),
    sa.Column("resolved_by", sa.String(200), nullable=True),
    sa.Column("resolved_at", sa.String(32), nullable=True),
    sa.Index("ix_disputes_stream_round", "stream", "round"),
    sa.Index("ix_disputes_opened_position", "opened_position"),
    sa.Index("ix_disputes_claimant", "claimant", "opened_position"),  # a player's (0015)
)

# Each BetAdjusted: the money a dispute's resolution moved for one bet, in ledger
# accounts, keyed by the event's position like a settlement.
adjustments = sa.Table(
    "adjustments",
    metadata,
    sa.Column(
        "position",
        sa.BigInteger,
        sa.ForeignKey("events.position"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("stream", sa.String(200), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("bet_id", sa.String(32), nullable=False),
    sa.Column("dispute_id", sa.String(32), nullable=False),
    sa.Column("adjustment", sa.String(16), nullable=False),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("transfers", sa.Text, nullable=False),
    sa.Index("ix_adjustments_stream_bet_id", "stream", "bet_id"),
    sa.Index("ix_adjustments_stream_round", "stream", "round", "position"),
)

# The dice-fairness report's counts of the whole club (ledger.books.dicetallies), kept
# beside the events so that the club's report reads a few rows however long the log
# (0017). Every valid throw by its ordered pair, as the dice showed it (a dispute's
# correction moves its throw from the dice recorded to the dice shown); every round
# decided after a main, by the digest of its table's rule set, its main and whether
# the caster won; and each table with such a round, with its rule set's digest. A row
# whose count falls to zero is deleted, so a row is there exactly when its count is not.
dice_counts = sa.Table(
    "dice_counts",
    metadata,
    sa.Column("die1", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("die2", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("throws", sa.BigInteger, nullable=False),
)
main_counts = sa.Table(
    "main_counts",
    metadata,
    sa.Column("rules", sa.String(64), primary_key=True),
    sa.Column("main", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("caster_won", sa.Boolean, primary_key=True),
    sa.Column("rounds", sa.BigInteger, nullable=False),
)
main_tables = sa.Table(
    "main_tables",
    metadata,
    sa.Column("stream", sa.String(200), primary_key=True),
    sa.Column("rules", sa.String(64), nullable=False),
)
