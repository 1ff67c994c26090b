"""task sets: tasks with checkable answers for RLVR, split into train and held-out by content hash

Revision ID: 0013_task_sets
Revises: 0012_label_unique
Create Date: 2026-12-01 16:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0013_task_sets'
down_revision = "0012_label_unique"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'task_sets',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('hash', sa.String(length=64), nullable=False),
        sa.Column('source', sa.String(length=16), nullable=False),
        sa.Column('provenance', sa.JSON(), nullable=False),
        sa.Column('verifier', sa.JSON(), nullable=False),
        sa.Column('heldout_fraction', sa.Float(), nullable=False),
        sa.Column('n_train', sa.Integer(), nullable=False),
        sa.Column('n_heldout', sa.Integer(), nullable=False),
        sa.Column('n_skipped', sa.Integer(), nullable=False),
        sa.Column('created_by', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['created_by'], ['users.id'], name=op.f('fk_task_sets_created_by_users'), ondelete='SET NULL',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_task_sets')),
        sa.UniqueConstraint('name', name=op.f('uq_task_sets_name')),
    )
    with op.batch_alter_table('task_sets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_sets_hash'), ['hash'], unique=False)
    op.create_table(
        'tasks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('set_id', sa.Integer(), nullable=False),
        sa.Column('idx', sa.Integer(), nullable=False),
        sa.Column('content_hash', sa.String(length=64), nullable=False),
        sa.Column('split', sa.String(length=8), nullable=False),
        sa.Column('prompt', sa.Text(), nullable=False),
        sa.Column('answer', sa.Text(), nullable=False),
        sa.Column('choices', sa.JSON(), nullable=True),
        sa.Column('verifier', sa.JSON(), nullable=True),
        sa.Column('meta', sa.JSON(), nullable=False),
        sa.Column('line', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ['set_id'], ['task_sets.id'], name=op.f('fk_tasks_set_id_task_sets'), ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tasks')),
        sa.UniqueConstraint('set_id', 'content_hash', name=op.f('uq_tasks_set_id')),
    )
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tasks_set_id'), ['set_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_tasks_content_hash'), ['content_hash'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tasks_content_hash'))
        batch_op.drop_index(batch_op.f('ix_tasks_set_id'))
    op.drop_table('tasks')
    with op.batch_alter_table('task_sets', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_sets_hash'))
    op.drop_table('task_sets')
