"""On-policy, half or off-policy: who wrote the two answers of each preference pair, seen from one policy.

The point of arena preference data is that it comes from the model being tuned. Each snapshot row records
the contestants that wrote its chosen and rejected answers (``provenance.chosen_model`` /
``rejected_model``). These are public names, so each published checkpoint is its own policy version. For a
parent contestant, a pair is:
- ``on``: both answers are the parent's;
- ``half``: one is;
- ``off``: neither is;
- ``unknown``: imported rows without provenance.
A self-play battle in the arena (`arena.self_play`: one contestant sampled twice) collects ``on`` pairs on
purpose. ``pair_mix`` counts them; ``filter_rows`` keeps the kinds a researcher asks for. This module
knows nothing about jobs or the database.
"""

from __future__ import annotations

from typing import Any

MIX_KINDS = ("on", "half", "off", "unknown")
# what a job's ``pairs`` field keeps
PAIR_FILTERS: dict[str, tuple[str, ...]] = {
    "all": MIX_KINDS,
    "on_policy": ("on",),
    "on_and_half": ("on", "half"),
    "off_policy": ("off",),
}


def pair_kind(row: dict[str, Any], policy: str) -> str:
    prov = row.get("provenance") or {}
    a, b = prov.get("chosen_model"), prov.get("rejected_model")
    if not a or not b:
        return "unknown"
    mine = (a == policy) + (b == policy)
    return ("off", "half", "on")[mine]


def pair_mix(rows: list[dict[str, Any]], policy: str) -> dict[str, int]:
    """{on, half, off, unknown, total} for ``policy`` (a contestant's public name)."""
    out = dict.fromkeys(MIX_KINDS, 0)
    for r in rows:
        out[pair_kind(r, policy)] += 1
    out["total"] = len(rows)
    return out


def filter_rows(rows: list[dict[str, Any]], policy: str, keep: str) -> list[dict[str, Any]]:
    if keep not in PAIR_FILTERS:
        raise ValueError(f"pairs filter {keep!r} unknown; choose one of {', '.join(PAIR_FILTERS)}")
    kinds = PAIR_FILTERS[keep]
    return [r for r in rows if pair_kind(r, policy) in kinds]


def describe_mix(mix: dict[str, int]) -> str:
    total = mix.get("total", 0)
    if not total:
        return "no pairs"
    parts = [f"{mix[k]} {k}" for k in MIX_KINDS if mix.get(k)]
    return f"{total} pairs: " + ", ".join(parts)
