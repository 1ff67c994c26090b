"""Verdict rules for learning tests: the built-in rules without the evals rule.

A learning test turns the evals off (``eval_items: 0``) to stay fast. Under the built-in rules that child could
never get a verdict, so the pre-launch check refuses it. These tests measure what the child learned, not the gate,
so they name rules that do not require the evals.
"""

from __future__ import annotations

import yaml

from vibestudio.db.session import data_home
from vibestudio.training.report.verdict import RULES_PATH

NO_EVALS = "no_evals.yaml"


def rules_without_evals() -> str:
    """Write the built-in rules less those on ``evals/*`` into the data home's rules folder; returns the name a
    config's ``verdict_rules`` takes."""
    rules = yaml.safe_load(RULES_PATH.read_text())
    rules["rules"] = [r for r in rules["rules"] if not str(r["measure"]).startswith("evals/")]
    folder = data_home() / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NO_EVALS).write_text(yaml.safe_dump(rules, sort_keys=False))
    return NO_EVALS
