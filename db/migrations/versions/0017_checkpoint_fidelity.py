"""checkpoint fidelity: each deployed form of a checkpoint measured against the trained model, and the chosen one

Revision ID: 0017_checkpoint_fidelity
Revises: 0016_comparisons
Create Date: 2026-12-05 21:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_checkpoint_fidelity"
down_revision = "0016_comparisons"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(sa.Column("fidelity", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("fidelity")
