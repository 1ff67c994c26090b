"""Errors the training package raises to its callers (UI, CLI). Their messages are meant to be shown as they
are.
"""

from __future__ import annotations


class JobError(ValueError):
    """A job cannot be launched or changed (bad config, missing snapshot, too few pairs, already finished...)."""
