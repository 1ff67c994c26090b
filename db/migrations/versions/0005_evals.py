"""evals: results of the verifiable eval set per contestant (one row per answered item)

Revision ID: 0005_evals
Revises: 0001
Create Date: 2026-12-02 10:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005_evals'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'eval_results',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.String(length=32), nullable=False),
        sa.Column('contestant_id', sa.Integer(), nullable=False),
        sa.Column('eval_set', sa.String(length=64), nullable=False),
        sa.Column('item_id', sa.String(length=128), nullable=False),
        sa.Column('category', sa.String(length=64), nullable=True),
        sa.Column('passed', sa.Boolean(), nullable=False),
        sa.Column('answer', sa.Text(), nullable=False),
        sa.Column('detail', sa.Text(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('tokens', sa.Integer(), nullable=True),
        sa.Column('latency', sa.Float(), nullable=True),
        sa.Column('tps', sa.Float(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['contestant_id'], ['contestants.id'],
            name=op.f('fk_eval_results_contestant_id_contestants'), ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_eval_results')),
    )
    with op.batch_alter_table('eval_results', schema=None) as batch_op:
        batch_op.create_index(
            'ix_eval_results_contestant_item', ['contestant_id', 'eval_set', 'item_id'], unique=False
        )
        batch_op.create_index(batch_op.f('ix_eval_results_run_id'), ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('eval_results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_eval_results_run_id'))
        batch_op.drop_index('ix_eval_results_contestant_item')
    op.drop_table('eval_results')
