"""merge the early fan: 0002 to 0008 each revised 0001; from here on the chain is strictly linear

Revision ID: 0009_merge_fan
Revises: 0002_annotation, 0003_accounts, 0004_arena, 0005_evals, 0006_probes, 0006_prompt_subcategory,
         0006_verdicts, 0007_contestant_events, 0008_battle_side_sampling
Create Date: 2026-12-01 15:40:00
"""

revision = "0009_merge_fan"
down_revision = (
    "0002_annotation",
    "0003_accounts",
    "0004_arena",
    "0005_evals",
    "0006_probes",
    "0006_prompt_subcategory",
    "0006_verdicts",
    "0007_contestant_events",
    "0008_battle_side_sampling",
)
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
