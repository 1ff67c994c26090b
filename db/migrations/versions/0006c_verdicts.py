"""verdicts: checkpoint verdicts and the hold / release decisions of researchers

Revision ID: 0006_verdicts
Revises: 0001
Create Date: 2026-12-03 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006_verdicts'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'verdict_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('contestant_id', sa.Integer(), nullable=False),
        sa.Column('action', sa.String(length=16), nullable=False),
        sa.Column('verdict', sa.String(length=16), nullable=True),
        sa.Column('held', sa.Boolean(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=True),
        sa.Column('reason', sa.Text(), nullable=True),
        sa.Column('details', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['contestant_id'], ['contestants.id'],
            name=op.f('fk_verdict_events_contestant_id_contestants'), ondelete='CASCADE',
        ),
        sa.ForeignKeyConstraint(
            ['user_id'], ['users.id'], name=op.f('fk_verdict_events_user_id_users'), ondelete='SET NULL',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_verdict_events')),
    )
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_verdict_events_contestant_id'), ['contestant_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('verdict_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_verdict_events_contestant_id'))
    op.drop_table('verdict_events')
