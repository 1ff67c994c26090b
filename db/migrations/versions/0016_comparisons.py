"""comparisons: training objectives launched side by side on one parent and one freeze of the votes

Revision ID: 0016_comparisons
Revises: 0015_replicas
Create Date: 2026-12-02 15:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0016_comparisons'
down_revision = "0015_replicas"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'comparisons',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('parent_contestant_id', sa.Integer(), nullable=True),
        sa.Column('spec', sa.JSON(), nullable=False),
        sa.Column('job_ids', sa.JSON(), nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['parent_contestant_id'], ['contestants.id'],
            name=op.f('fk_comparisons_parent_contestant_id_contestants'), ondelete='SET NULL',
        ),
        sa.ForeignKeyConstraint(
            ['created_by'], ['users.id'], name=op.f('fk_comparisons_created_by_users'), ondelete='SET NULL'
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_comparisons')),
    )


def downgrade() -> None:
    op.drop_table('comparisons')
