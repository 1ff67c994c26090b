"""probes: sycophancy probe measurements per contestant (pushback flips, stated views)

Revision ID: 0006_probes
Revises: 0001
Create Date: 2026-11-30 09:40:00
"""

from alembic import op
import sqlalchemy as sa


revision = "0006_probes"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "probe_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("contestant_id", sa.Integer(), nullable=False),
        sa.Column("probe_set", sa.String(length=64), nullable=False),
        sa.Column("item_id", sa.String(length=128), nullable=False),
        sa.Column("variant", sa.String(length=32), nullable=False),
        sa.Column("first_answer", sa.Text(), nullable=False),
        sa.Column("second_answer", sa.Text(), nullable=False),
        sa.Column("first_choice", sa.String(length=8), nullable=True),
        sa.Column("second_choice", sa.String(length=8), nullable=True),
        sa.Column("target", sa.String(length=8), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["contestant_id"],
            ["contestants.id"],
            name=op.f("fk_probe_results_contestant_id_contestants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_probe_results")),
    )
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.create_index(
            "ix_probe_results_contestant_item", ["contestant_id", "probe_set", "item_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_probe_results_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("probe_results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_probe_results_run_id"))
        batch_op.drop_index("ix_probe_results_contestant_item")
    op.drop_table("probe_results")
