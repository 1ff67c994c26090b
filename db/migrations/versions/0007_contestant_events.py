"""contestant_events: the removal log (who hid or restored which contestant, when and why)

Revision ID: 0007_contestant_events
Revises: 0001
Create Date: 2026-11-30 09:50:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0007_contestant_events'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'contestant_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('contestant_id', sa.Integer(), nullable=False),
        sa.Column('action', sa.String(length=16), nullable=False),
        sa.Column('by_user', sa.String(length=128), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['contestant_id'], ['contestants.id'],
            name=op.f('fk_contestant_events_contestant_id_contestants'), ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_contestant_events')),
    )
    with op.batch_alter_table('contestant_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_contestant_events_contestant_id'), ['contestant_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('contestant_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_contestant_events_contestant_id'))
    op.drop_table('contestant_events')
