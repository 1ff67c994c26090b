"""battle end: how a battle ended (ended_reason) and its last activity by the database's clock (active_at)

Existing battles get their last activity from their newest turn or vote (else their start); ended battles get
an ``ended_reason`` from what is known: ``revealed`` when they were revealed, ``error`` when they errored, else
``ended``.

Revision ID: 0011_battle_end
Revises: 0010_lifecycle
Create Date: 2026-12-01 16:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_battle_end"
down_revision = "0010_lifecycle"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("battles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ended_reason", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("active_at", sa.DateTime(), nullable=True))
        batch_op.create_index(batch_op.f("ix_battles_active_at"), ["active_at"], unique=False)
    op.execute("UPDATE battles SET active_at = created_at")
    for table in ("turns", "votes"):
        op.execute(
            f"UPDATE battles SET active_at = (SELECT MAX(x.created_at) FROM {table} x WHERE x.battle_id = battles.id) "
            f"WHERE EXISTS (SELECT 1 FROM {table} x WHERE x.battle_id = battles.id AND x.created_at > battles.active_at)"
        )
    op.execute(
        "UPDATE battles SET ended_reason = CASE WHEN status = 'errored' THEN 'error' "
        "WHEN revealed_at IS NOT NULL THEN 'revealed' ELSE 'ended' END WHERE status <> 'open'"
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_battles_active_at"), table_name="battles")
    for column in ("active_at", "ended_reason"):
        _drop_column("battles", column)


def _drop_column(table: str, column: str) -> None:
    """Drop a column in place. On SQLite a batch "move and copy" DROPs the old battles table, and with foreign keys
    on that DROP deletes every turn and vote (they cascade from it): use SQLite's ALTER TABLE ... DROP COLUMN."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column(table, column)
