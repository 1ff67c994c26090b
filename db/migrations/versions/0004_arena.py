"""arena: engine settings on contestants, pair sampler and battle end/reveal times, queue waits and
regenerated answers on turns

Revision ID: 0004_arena
Revises: 0001
Create Date: 2026-11-30 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004_arena'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('contestants', schema=None) as batch_op:
        batch_op.add_column(sa.Column('engine_config', sa.JSON(), server_default='{}', nullable=False))
    with op.batch_alter_table('battles', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sampler', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('ended_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('revealed_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('wait_a', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('wait_b', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('replaced', sa.JSON(), server_default='[]', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.drop_column('replaced')
        batch_op.drop_column('wait_b')
        batch_op.drop_column('wait_a')
    with op.batch_alter_table('battles', schema=None) as batch_op:
        batch_op.drop_column('revealed_at')
        batch_op.drop_column('ended_at')
        batch_op.drop_column('sampler')
    with op.batch_alter_table('contestants', schema=None) as batch_op:
        batch_op.drop_column('engine_config')
