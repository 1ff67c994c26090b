"""lifecycle: one state per contestant (pending / released / held / hidden) replaces the active flag; the
contestant_events log records every change (from and to state, user, details)

Existing rows: active -> released; inactive and the newest verdict event held -> held; other inactive -> hidden.
Each migrated row that is not released gets one "migrate" event saying so.

Revision ID: 0010_lifecycle
Revises: 0009_merge_fan
Create Date: 2026-12-01 16:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_lifecycle"
down_revision = "0009_merge_fan"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contestant_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("from_state", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("to_state", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("details", sa.JSON(), server_default="{}", nullable=False))
        batch_op.create_foreign_key(
            batch_op.f("fk_contestant_events_user_id_users"),
            "users",
            ["user_id"],
            ["id"],
            ondelete="SET NULL",
        )
    # plain ALTER TABLE statements: a batch "move and copy" of contestants would cascade (see _drop_column)
    op.add_column(
        "contestants", sa.Column("state", sa.String(length=16), server_default="released", nullable=False)
    )
    op.create_index(op.f("ix_contestants_state"), "contestants", ["state"], unique=False)

    conn = op.get_bind()
    held = {
        cid
        for cid, was_held in conn.execute(
            sa.text(
                "SELECT e.contestant_id, e.held FROM verdict_events e WHERE e.id = "
                "(SELECT MAX(e2.id) FROM verdict_events e2 WHERE e2.contestant_id = e.contestant_id)"
            )
        )
        if was_held
    }
    inactive = [cid for (cid,) in conn.execute(sa.text("SELECT id FROM contestants WHERE NOT active"))]
    for cid in inactive:
        state = "held" if cid in held else "hidden"
        conn.execute(sa.text("UPDATE contestants SET state = :s WHERE id = :i"), {"s": state, "i": cid})
        conn.execute(
            sa.text(
                "INSERT INTO contestant_events (contestant_id, action, by_user, reason, created_at, "
                "from_state, to_state, details) VALUES (:i, 'migrate', 'migration', :r, CURRENT_TIMESTAMP, "
                "NULL, :s, '{}')"
            ),
            {
                "i": cid,
                "s": state,
                "r": "held by its verdict before the lifecycle"
                if state == "held"
                else "out of pair sampling before the lifecycle",
            },
        )
    _drop_column("contestants", "active")


def _drop_column(table: str, column: str) -> None:
    """Drop a column in place. On SQLite a batch "move and copy" would DROP the old contestants table, and with
    foreign keys on that DROP deletes every row that cascades from it (verdicts, events, evals, probes): use
    SQLite's own ALTER TABLE ... DROP COLUMN (3.35+) instead."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column(table, column)


def downgrade() -> None:
    op.add_column("contestants", sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False))
    op.execute("UPDATE contestants SET active = (state = 'released')")
    op.drop_index(op.f("ix_contestants_state"), table_name="contestants")
    _drop_column("contestants", "state")
    op.execute("DELETE FROM contestant_events WHERE action NOT IN ('hide', 'restore')")
    with op.batch_alter_table("contestant_events", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_contestant_events_user_id_users"), type_="foreignkey")
        batch_op.drop_column("details")
        batch_op.drop_column("user_id")
        batch_op.drop_column("to_state")
        batch_op.drop_column("from_state")
