"""Print the fit table: per-GPU memory estimates beside published figures, with sources.

Usage: python scripts/fit_table.py
The rows and sources are ``training.jobs.fit.PUBLISHED``; docs/training.md holds this output.
"""

from __future__ import annotations

from vibestudio.training.jobs.fit import table

if __name__ == "__main__":
    print(table())
