"""prompt subcategory: Arena-Hard v2.0's ``subcategory`` (v0.1's ``cluster``) kept beside the category

Revision ID: 0006_prompt_subcategory
Revises: 0001
Create Date: 2026-11-30 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006_prompt_subcategory'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('prompts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('subcategory', sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('prompts', schema=None) as batch_op:
        batch_op.drop_column('subcategory')
