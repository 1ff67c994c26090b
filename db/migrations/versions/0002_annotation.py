"""annotation: queues, assignments and labels; prompt, content key and checklist on queue items; judge kind,
side and label on judgements; the label or judgement behind each rubric score

Revision ID: 0002_annotation
Revises: 0001
Create Date: 2026-11-30 12:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0002_annotation'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('annotation_queues',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('prompt_set_id', sa.Integer(), nullable=True),
    sa.Column('policy_contestant_id', sa.Integer(), nullable=True),
    sa.Column('rubric', sa.JSON(), nullable=False),
    sa.Column('overlap', sa.Integer(), nullable=False),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('source', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['policy_contestant_id'], ['contestants.id'], name=op.f('fk_annotation_queues_policy_contestant_id_contestants')),
    sa.ForeignKeyConstraint(['prompt_set_id'], ['prompt_sets.id'], name=op.f('fk_annotation_queues_prompt_set_id_prompt_sets')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_annotation_queues')),
    sa.UniqueConstraint('name', name=op.f('uq_annotation_queues_name'))
    )
    op.create_table('assignments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('queue', sa.String(length=128), nullable=False),
    sa.Column('annotator', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('order_key', sa.String(length=16), nullable=False),
    sa.Column('left_is_first', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('done_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['item_id'], ['queue_items.id'], name=op.f('fk_assignments_item_id_queue_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_assignments_user_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_assignments')),
    sa.UniqueConstraint('item_id', 'annotator', name='uq_assignment_item_annotator')
    )
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_assignments_annotator'), ['annotator'], unique=False)
        batch_op.create_index(batch_op.f('ix_assignments_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_assignments_queue'), ['queue'], unique=False)

    op.create_table('labels',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('queue', sa.String(length=128), nullable=False),
    sa.Column('annotator', sa.String(length=128), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('assignment_id', sa.Integer(), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=False),
    sa.Column('left_is_first', sa.Boolean(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('meta', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['assignment_id'], ['assignments.id'], name=op.f('fk_labels_assignment_id_assignments'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['item_id'], ['queue_items.id'], name=op.f('fk_labels_item_id_queue_items'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_labels_user_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labels'))
    )
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_labels_item_id'), ['item_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_labels_queue'), ['queue'], unique=False)

    with op.batch_alter_table('judgements', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=16), server_default='pairwise', nullable=False))
        batch_op.add_column(sa.Column('side', sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column('label_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_judgements_label_id_labels'), 'labels', ['label_id'], ['id'], ondelete='SET NULL')

    with op.batch_alter_table('queue_items', schema=None) as batch_op:
        batch_op.add_column(sa.Column('prompt_messages', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('content_key', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('checklist', sa.JSON(), nullable=True))
        batch_op.create_index(batch_op.f('ix_queue_items_content_key'), ['content_key'], unique=False)

    with op.batch_alter_table('rubric_scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('label_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('judgement_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_rubric_scores_judgement_id'), ['judgement_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_rubric_scores_label_id'), ['label_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_rubric_scores_judgement_id_judgements'), 'judgements', ['judgement_id'], ['id'], ondelete='CASCADE')
        batch_op.create_foreign_key(batch_op.f('fk_rubric_scores_label_id_labels'), 'labels', ['label_id'], ['id'], ondelete='CASCADE')


def downgrade() -> None:
    with op.batch_alter_table('rubric_scores', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_rubric_scores_label_id_labels'), type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('fk_rubric_scores_judgement_id_judgements'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_rubric_scores_label_id'))
        batch_op.drop_index(batch_op.f('ix_rubric_scores_judgement_id'))
        batch_op.drop_column('judgement_id')
        batch_op.drop_column('label_id')

    with op.batch_alter_table('queue_items', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_queue_items_content_key'))
        batch_op.drop_column('checklist')
        batch_op.drop_column('content_key')
        batch_op.drop_column('prompt_messages')

    with op.batch_alter_table('judgements', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_judgements_label_id_labels'), type_='foreignkey')
        batch_op.drop_column('label_id')
        batch_op.drop_column('side')
        batch_op.drop_column('kind')

    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_labels_queue'))
        batch_op.drop_index(batch_op.f('ix_labels_item_id'))

    op.drop_table('labels')
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_assignments_queue'))
        batch_op.drop_index(batch_op.f('ix_assignments_item_id'))
        batch_op.drop_index(batch_op.f('ix_assignments_annotator'))

    op.drop_table('assignments')
    op.drop_table('annotation_queues')
