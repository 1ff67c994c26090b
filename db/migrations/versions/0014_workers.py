"""workers: jobs record the worker identity that runs them and its heartbeat (database clock); workers register

Revision ID: 0014_workers
Revises: 0013_task_sets
Create Date: 2026-12-01 20:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0014_workers'
down_revision = "0013_task_sets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('host', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(), nullable=True))
    op.create_table(
        'workers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('kinds', sa.JSON(), nullable=False),
        sa.Column('gpus', sa.String(length=255), nullable=True),
        sa.Column('max_jobs', sa.Integer(), nullable=False),
        sa.Column('data_home', sa.Text(), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('last_seen', sa.DateTime(), nullable=True),
        sa.Column('stopped_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_workers')),
        sa.UniqueConstraint('name', name=op.f('uq_workers_name')),
    )


def downgrade() -> None:
    op.drop_table('workers')
    for column in ('heartbeat_at', 'host'):
        _drop_column('jobs', column)


def _drop_column(table: str, column: str) -> None:
    """Drop a column in place. On SQLite a batch "move and copy" DROPs the old jobs table, and with foreign keys on
    that DROP deletes every checkpoint and job metric (they cascade from it): use SQLite's ALTER TABLE ... DROP
    COLUMN."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    else:
        op.drop_column(table, column)
