"""label unique: one human label per assignment, so two concurrent submits store one

Duplicates that an earlier version let through (two submits of one assignment racing) are removed first: the
earliest label of each assignment stays, the later copies and their rubric scores go.

Revision ID: 0012_label_unique
Revises: 0011_battle_end
Create Date: 2026-12-01 16:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_label_unique"
down_revision = "0011_battle_end"
branch_labels = None
depends_on = None

_LATER_COPIES = (
    "SELECT l.id FROM labels l WHERE l.assignment_id IS NOT NULL AND EXISTS "
    "(SELECT 1 FROM labels e WHERE e.assignment_id = l.assignment_id AND e.id < l.id)"
)


def upgrade() -> None:
    op.execute(sa.text(f"DELETE FROM rubric_scores WHERE label_id IN ({_LATER_COPIES})"))
    op.execute(sa.text(f"DELETE FROM labels WHERE id IN ({_LATER_COPIES})"))
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.create_unique_constraint(batch_op.f("uq_labels_assignment_id"), ["assignment_id"])


def downgrade() -> None:
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_labels_assignment_id"), type_="unique")
