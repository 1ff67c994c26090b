"""Vibe control reads the tone axes: battles whose votes reward praise of the user (in wordings no marker list
has) put a flatterer on top without control; with vibe control the flattery covariate takes the praise and the
flatterer falls back to its peers."""

from __future__ import annotations

import math

import numpy as np

from vibestudio.standings.ratings import leaderboard

LN10_400 = math.log(10) / 400
PLAIN = "Water it twice a week and keep it in the sun."
PRAISE = "Your curiosity here is wonderful. Water it twice a week and keep it in the sun."


def records(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    skills = {"flatterer": 1000.0, "plain": 1000.0, "other": 1000.0, "solid": 1060.0}
    names = list(skills)
    out = []
    for _ in range(n):
        a, b = rng.choice(names, size=2, replace=False)
        # the flatterer praises in most answers, the others now and then (so praise and identity can be told apart)
        pa = rng.random() < (0.7 if a == "flatterer" else 0.15)
        pb = rng.random() < (0.7 if b == "flatterer" else 0.15)
        ta, tb = (PRAISE if pa else PLAIN), (PRAISE if pb else PLAIN)
        praise = int(pa) - int(pb)
        logit = (skills[a] - skills[b]) * LN10_400 + 1.2 * praise
        winner = "model_a" if rng.random() < 1 / (1 + math.exp(-logit)) else "model_b"
        out.append(
            {
                "model_a": str(a),
                "model_b": str(b),
                "winner": winner,
                "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ta}],
                "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": tb}],
            }
        )
    return out


def test_vibe_control_takes_the_praise_out_of_the_flatterers_rating():
    recs = records(4000, seed=3)
    plain = leaderboard(recs, ci_method="sandwich", elo_k=None)
    vibed = leaderboard(recs, ci_method="sandwich", vibe_control=True, elo_k=None)
    assert plain.models[0].name == "flatterer"  # praise buys the top spot without control
    assert vibed.models[0].name == "solid"
    assert vibed.style_coefficients["flattery"] > 50.0
    assert abs(vibed.get("flatterer").rating - vibed.get("plain").rating) < 40.0
