"""accounts: last login time on users; indexes on the user of battles and votes (per-user counts, audits)

Revision ID: 0003_accounts
Revises: 0001
Create Date: 2026-12-01 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_accounts'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_login_at', sa.DateTime(), nullable=True))
    op.create_index(op.f('ix_battles_user_id'), 'battles', ['user_id'], unique=False)
    op.create_index(op.f('ix_votes_user_id'), 'votes', ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_votes_user_id'), table_name='votes')
    op.drop_index(op.f('ix_battles_user_id'), table_name='battles')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('last_login_at')
