"""replicas: shared rate limits and login throttles, web sessions any app process accepts

Revision ID: 0015_replicas
Revises: 0014_workers
Create Date: 2026-12-01 20:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0015_replicas'
down_revision = "0014_workers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'rate_limits',
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('tat', sa.Float(), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
        sa.Column('last', sa.Float(), nullable=False),
        sa.Column('expires_at', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('key', name=op.f('pk_rate_limits')),
    )
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rate_limits_expires_at'), ['expires_at'], unique=False)
    op.create_table(
        'web_sessions',
        sa.Column('token_hash', sa.String(length=64), nullable=False),
        sa.Column('user_name', sa.String(length=128), nullable=False),
        sa.Column('issued', sa.Float(), nullable=False),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint('token_hash', name=op.f('pk_web_sessions')),
    )
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_web_sessions_user_name'), ['user_name'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('web_sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_web_sessions_user_name'))
    op.drop_table('web_sessions')
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rate_limits_expires_at'))
    op.drop_table('rate_limits')
