"""Per-battle covariates for style and vibe control, and the text helpers the ratings need.

For each battle and feature we need the count on side a and side b. They come from, in order of
preference:
- flat numeric columns `style_<feature>_a` / `style_<feature>_b` (our extension, handy for big precomputed
  data);
- FastChat's `conv_metadata` (token, header, list and bold counts);
- the assistant turns of `conversation_a` / `conversation_b`, through `textfeatures.vibes.features`.
The covariate is the normalised difference (a - b) / (a + b + 1), standardised over the battles. A feature
that never varies is left out with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vibestudio.textfeatures import vibes

from ._input import BattleRecords, RatingsInputError

_META_KEYS = {
    "tokens": "sum_assistant_{side}_tokens",
    "headers": "header_count_{side}",
    "list_items": "list_count_{side}",
    "bold": "bold_count_{side}",
}


def _messages(conversation: Any) -> list[Mapping[str, Any]] | None:
    if isinstance(conversation, (list, tuple, np.ndarray)):
        return [m for m in conversation if isinstance(m, Mapping)]
    return None


def assistant_text(conversation: Any) -> str | None:
    """All assistant turns of one conversation joined by blank lines; None when there is no conversation."""
    messages = _messages(conversation)
    if messages is None:
        return None
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "assistant")


def prompt_text(conversation: Any) -> str | None:
    """All user turns of one conversation joined by blank lines; None when there is no conversation."""
    messages = _messages(conversation)
    if messages is None:
        return None
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def user_turns(conversation: Any) -> int:
    """Number of user messages in a conversation (0 when there is none)."""
    messages = _messages(conversation)
    return 0 if messages is None else sum(1 for m in messages if m.get("role") == "user")


def _meta_value(meta: Mapping[str, Any], feature: str, side: str) -> float | None:
    value = meta.get(_META_KEYS[feature].format(side=side))
    if value is None:
        return None
    if isinstance(value, Mapping):
        return float(sum(v for v in value.values() if v is not None))
    return float(value)


def side_counts(
    records: BattleRecords, rows: np.ndarray, names: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Feature counts (len(rows), F) for side a and side b of the given record positions."""
    frame = records.frame
    n, n_feat = len(rows), len(names)
    fa = np.full((n, n_feat), np.nan)
    fb = np.full((n, n_feat), np.nan)
    for k, name in enumerate(names):
        col_a, col_b = f"style_{name}_a", f"style_{name}_b"
        if col_a in frame.columns and col_b in frame.columns:
            fa[:, k] = frame[col_a].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            fb[:, k] = frame[col_b].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
    todo = np.isnan(fa).any(axis=1) | np.isnan(fb).any(axis=1)
    if todo.any() and "conv_metadata" in frame.columns:
        meta_cols = [k for k, name in enumerate(names) if name in _META_KEYS]
        metas = frame["conv_metadata"].to_numpy()
        for i in np.flatnonzero(todo):
            meta = metas[rows[i]]
            if not isinstance(meta, Mapping):
                continue
            for k in meta_cols:
                if np.isnan(fa[i, k]):
                    fa[i, k] = _nan_if_none(_meta_value(meta, names[k], "a"))
                if np.isnan(fb[i, k]):
                    fb[i, k] = _nan_if_none(_meta_value(meta, names[k], "b"))
        todo = np.isnan(fa).any(axis=1) | np.isnan(fb).any(axis=1)
    if todo.any():
        has_conv = "conversation_a" in frame.columns and "conversation_b" in frame.columns
        conv_a = frame["conversation_a"].to_numpy() if has_conv else None
        conv_b = frame["conversation_b"].to_numpy() if has_conv else None
        cache: dict[str, dict[str, float]] = {}
        for i in np.flatnonzero(todo):
            pos = int(rows[i])
            text_a = assistant_text(conv_a[pos]) if conv_a is not None else None
            text_b = assistant_text(conv_b[pos]) if conv_b is not None else None
            if text_a is None or text_b is None:
                missing = [names[k] for k in range(n_feat) if np.isnan(fa[i, k]) or np.isnan(fb[i, k])]
                raise RatingsInputError(
                    f"{records.where(pos)}, field 'conversation_a': style/vibe control needs the answers "
                    f"(conversation_a and conversation_b) or precomputed counts for {', '.join(missing)}",
                    line=records.line_of(pos),
                    index=None if records.lines is not None else pos,
                    field="conversation_a",
                )
            counts_a = cache.get(text_a) or cache.setdefault(text_a, vibes.features(text_a))
            counts_b = cache.get(text_b) or cache.setdefault(text_b, vibes.features(text_b))
            for k, name in enumerate(names):
                if np.isnan(fa[i, k]):
                    fa[i, k] = counts_a[name]
                if np.isnan(fb[i, k]):
                    fb[i, k] = counts_b[name]
    return fa, fb


def _nan_if_none(value: float | None) -> float:
    return np.nan if value is None else value


def covariates(
    fa: np.ndarray, fb: np.ndarray, names: tuple[str, ...]
) -> tuple[np.ndarray, list[str], list[str]]:
    """Standardised (a - b) / (a + b + 1) per feature; returns (X, kept feature names, warnings)."""
    diff = (fa - fb) / (fa + fb + 1.0)
    mean = diff.mean(axis=0)
    std = diff.std(axis=0)
    keep = std > 1e-12 * np.maximum(1.0, np.abs(mean))
    warnings = [
        f"style feature '{name}' never varies between the two answers; it was left out of the fit"
        for name, ok in zip(names, keep, strict=True)
        if not ok
    ]
    X = (diff[:, keep] - mean[keep]) / std[keep]
    return X, [n for n, ok in zip(names, keep, strict=True) if ok], warnings
