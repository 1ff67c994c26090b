"""battle side sampling: self-play battles keep each side's sampling override (temperature, seed)

Revision ID: 0008_battle_side_sampling
Revises: 0001
Create Date: 2026-12-01 09:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0008_battle_side_sampling'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('battles', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sampling_a', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('sampling_b', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('battles', schema=None) as batch_op:
        batch_op.drop_column('sampling_b')
        batch_op.drop_column('sampling_a')
