"""One live token to a role and name, and a tag for each token that events name it by.

Revision ID: 0014
Revises: 0013

An event's actor was `role:name`, and token names were not unique: two croupier tokens
named cecil wrote as one actor. From here a role's live tokens have different names
(a partial unique index over the live ones: a revoked token's name may be given again),
and every token has a `tag`, unique among all tokens ever made, that events name it by
(`croupier:cecil#<tag>`): the first eight characters of its id.

A database written before may hold what the new rule refuses, and is not refused for
it. Of two or more live tokens of one role and name, the newest (by created_at, then
id) stays live and the others are revoked now, as `hazard token revoke` would: their
rows stay, and their holders get a 401 and ask for a token of their own. Where two ids
begin with the same eight characters, each of them is tagged with its whole id, which
no other token's tag can equal. Events already written keep their actors, untagged.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

NEWER_LIVE_TWIN = (
    "SELECT 1 FROM tokens AS t WHERE t.role = tokens.role AND t.name = tokens.name "
    "AND t.revoked_at IS NULL AND (t.created_at > tokens.created_at "
    "OR (t.created_at = tokens.created_at AND t.id > tokens.id))"
)
SHARED_START = "SELECT count(*) FROM tokens AS t WHERE substr(t.id, 1, 8) = substr(tokens.id, 1, 8)"


def upgrade() -> None:
    now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    op.get_bind().execute(
        sa.text(
            f"UPDATE tokens SET revoked_at = :now "
            f"WHERE revoked_at IS NULL AND EXISTS ({NEWER_LIVE_TWIN})"
        ),
        {"now": now},
    )
    op.add_column("tokens", sa.Column("tag", sa.String(32), nullable=True))
    op.execute(f"UPDATE tokens SET tag = substr(id, 1, 8) WHERE ({SHARED_START}) = 1")
    op.execute("UPDATE tokens SET tag = id WHERE tag IS NULL")
    with op.batch_alter_table("tokens") as batch:  # SQLite: the table made again
        batch.alter_column("tag", existing_type=sa.String(32), nullable=False)
    op.create_index(op.f("ix_tokens_tag"), "tokens", ["tag"], unique=True)
    op.create_index(
        "ix_tokens_live_role_name",
        "tokens",
        ["role", "name"],
        unique=True,
        sqlite_where=sa.text("revoked_at IS NULL"),
        postgresql_where=sa.text("revoked_at IS NULL"),
    )


def downgrade() -> None:
    # The tokens revoked on the way up stay revoked: a token is never revived.
    op.drop_index("ix_tokens_live_role_name", table_name="tokens")
    op.drop_index(op.f("ix_tokens_tag"), table_name="tokens")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("tag")
