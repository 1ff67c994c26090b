"""Tests for standings.ratings: correctness of Bradley-Terry, intervals, style control, Elo, ranks and warnings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from vibestudio.standings.ratings import SCALE, leaderboard, online_elo, rank_intervals

LN10_400 = math.log(10.0) / 400.0


def simulate(
    skills: dict[str, float],
    n: int,
    seed: int,
    *,
    tie_rate: float = 0.0,
    sampling: dict[tuple[str, str], float] | None = None,
) -> list[dict]:
    """Battles from a Bradley-Terry model on the Elo scale; pairs drawn uniformly or with `sampling` probabilities."""
    rng = np.random.default_rng(seed)
    names = list(skills)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    probs = np.array([sampling[p] for p in pairs]) if sampling else np.full(len(pairs), 1 / len(pairs))
    picks = rng.choice(len(pairs), size=n, p=probs / probs.sum())
    out = []
    for k, pick in enumerate(picks):
        a, b = pairs[pick]
        if rng.random() < 0.5:
            a, b = b, a
        p_a = 1.0 / (1.0 + 10 ** ((skills[b] - skills[a]) / 400.0))
        u = rng.random()
        winner = "tie" if u < tie_rate else ("model_a" if rng.random() < p_a else "model_b")
        record = {"model_a": a, "model_b": b, "winner": winner, "tstamp": float(k)}
        if sampling:
            record["sampling_prob"] = float(probs[pick] / probs.sum())
        out.append(record)
    return out


def centred(skills: dict[str, float], value: float = 1000.0) -> dict[str, float]:
    mean = sum(skills.values()) / len(skills)
    return {k: v - mean + value for k, v in skills.items()}


def reference_bt(
    records: list[dict], weights: np.ndarray | None = None, iters: int = 200_000
) -> dict[str, float]:
    """Obviously-correct reference: plain gradient ascent on the per-battle log-likelihood (ties = half a win)."""
    names = sorted({r["model_a"] for r in records} | {r["model_b"] for r in records})
    index = {n: i for i, n in enumerate(names)}
    a = np.array([index[r["model_a"]] for r in records])
    b = np.array([index[r["model_b"]] for r in records])
    y = np.array([{"model_a": 1.0, "model_b": 0.0}.get(r["winner"], 0.5) for r in records])
    w = np.ones(len(records)) if weights is None else weights
    theta = np.zeros(len(names))
    counts = np.bincount(a, w, len(names)) + np.bincount(b, w, len(names))
    step = 4.0 / counts.max() / 2.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
        g = w * (y - p)
        grad = np.bincount(a, g, len(names)) - np.bincount(b, g, len(names))
        theta += step * grad
        if np.abs(grad).max() < 1e-12:
            break
    theta -= theta.mean()
    return {n: SCALE * theta[i] + 1000.0 for n, i in index.items()}


SKILLS = {"alpha": 1250.0, "beta": 1150.0, "gamma": 1050.0, "delta": 1000.0, "eps": 900.0, "zeta": 800.0}


def test_recovers_known_skills() -> None:
    records = simulate(SKILLS, 30_000, seed=1)
    board = leaderboard(records, bootstrap_rounds=50)
    truth = centred(SKILLS)
    for model in board.models:
        assert abs(model.rating - truth[model.name]) < 3 * (model.ci_high - model.ci_low) / 3.92 + 1.0
        assert model.ci_low < model.rating < model.ci_high
    assert [m.name for m in board.models] == sorted(SKILLS, key=lambda k: SKILLS[k], reverse=True)
    assert [m.rank for m in board.models] == [1, 2, 3, 4, 5, 6]
    assert board.n_battles == 30_000
    assert sum(m.n_battles for m in board.models) == 60_000


def test_agrees_with_reference_gradient_ascent() -> None:
    records = simulate({"a": 1100.0, "b": 1000.0, "c": 950.0, "d": 900.0}, 300, seed=2, tie_rate=0.2)
    ours = leaderboard(records, ci_method="sandwich", elo_k=None).ratings()
    ref = reference_bt(records)
    for name, value in ref.items():
        assert ours[name] == pytest.approx(value, abs=1e-6)


def test_agrees_with_reference_weighted() -> None:
    sampling = {("a", "b"): 0.6, ("a", "c"): 0.1, ("a", "d"): 0.1, ("b", "c"): 0.1, ("b", "d"): 0.05}
    sampling[("c", "d")] = 0.05
    records = simulate({"a": 1100.0, "b": 1000.0, "c": 950.0, "d": 900.0}, 400, seed=3, sampling=sampling)
    weights = np.array([1.0 / r["sampling_prob"] for r in records])
    ours = leaderboard(records, ci_method="sandwich", elo_k=None).ratings()
    ref = reference_bt(records, weights / weights.mean())
    for name, value in ref.items():
        assert ours[name] == pytest.approx(value, abs=1e-6)
    unweighted = leaderboard(records, ci_method="sandwich", ipw=False, elo_k=None).ratings()
    assert unweighted != pytest.approx(ours, abs=1e-3)


def test_bootstrap_and_sandwich_cover_truth_near_nominal_rate() -> None:
    skills = {"a": 1100.0, "b": 1030.0, "c": 980.0, "d": 890.0}
    truth = centred(skills)
    methods: dict[str, dict[str, Any]] = {
        "bootstrap": {"ci_method": "bootstrap"},
        "bayesian": {"ci_method": "bootstrap", "resample": "bayesian"},
        "sandwich": {"ci_method": "sandwich"},
    }
    hits = dict.fromkeys(methods, 0)
    total = 0
    for sim in range(100):
        records = simulate(skills, 400, seed=100 + sim)
        for method, options in methods.items():
            board = leaderboard(records, bootstrap_rounds=100, seed=sim, elo_k=None, **options)
            hits[method] += sum(m.ci_low <= truth[m.name] <= m.ci_high for m in board.models)
        total += len(skills)
    for method, count in hits.items():
        rate = count / total
        assert 0.90 <= rate <= 0.99, (method, rate)


def test_bayesian_and_multinomial_bootstrap_agree() -> None:
    records = simulate(SKILLS, 20_000, seed=9)
    multi = leaderboard(records, bootstrap_rounds=200)
    bayes = leaderboard(records, bootstrap_rounds=200, resample="bayesian")
    for m in multi.models:
        other = bayes.get(m.name)
        assert other.rating == m.rating
        assert 0.75 < (other.ci_high - other.ci_low) / (m.ci_high - m.ci_low) < 1.33
    with pytest.raises(ValueError, match="resample"):
        leaderboard(records, resample="jackknife")


def test_bootstrap_is_seeded() -> None:
    records = simulate(SKILLS, 2000, seed=4)
    first = leaderboard(records, bootstrap_rounds=30, seed=7).to_dict()
    again = leaderboard(records, bootstrap_rounds=30, seed=7).to_dict()
    other = leaderboard(records, bootstrap_rounds=30, seed=8).to_dict()
    assert first == again
    assert first != other


def test_ties_count_as_half_a_win() -> None:
    records = [
        {"model_a": "x", "model_b": "y", "winner": "model_a"},
        {"model_a": "x", "model_b": "y", "winner": "tie"},
        {"model_a": "x", "model_b": "y", "winner": "tie (bothbad)"},
        {"model_a": "y", "model_b": "x", "winner": "model_a"},
        {"model_a": "x", "model_b": "y", "winner": "tie (bothgood)"},
    ]
    board = leaderboard(records, ci_method="sandwich")
    assert board.get("x").rating == pytest.approx(1000.0, abs=1e-9)
    assert board.get("y").rating == pytest.approx(1000.0, abs=1e-9)
    assert board.get("x").ties == 3 and board.get("x").wins == 1 and board.get("x").losses == 1
    # dropping both-bad and both-good votes leaves 1 win each plus one tie
    dropped = leaderboard(records, ci_method="sandwich", both_bad="drop", both_good="drop")
    assert dropped.n_battles == 3 and dropped.get("x").ties == 1
    # 3 wins to 1 (+ a tie): rating difference is 400 * log10(3.5 / 1.5)
    lopsided = records + [{"model_a": "x", "model_b": "y", "winner": "model_a"}] * 2
    board = leaderboard(lopsided, ci_method="sandwich", both_bad="drop", both_good="drop")
    diff = board.get("x").rating - board.get("y").rating
    assert diff == pytest.approx(400 * math.log10(3.5 / 1.5), abs=1e-6)


def test_anchor_pins_a_model() -> None:
    records = simulate(SKILLS, 3000, seed=5)
    free = leaderboard(records, ci_method="sandwich")
    pinned = leaderboard(records, ci_method="sandwich", anchor="delta", anchor_rating=1200.0)
    assert pinned.get("delta").rating == pytest.approx(1200.0)
    assert pinned.get("delta").ci_low == pytest.approx(1200.0) == pinned.get("delta").ci_high
    shift = pinned.get("alpha").rating - free.get("alpha").rating
    for name in SKILLS:
        assert pinned.get(name).rating - free.get(name).rating == pytest.approx(shift)
    assert np.mean([m.rating for m in free.models]) == pytest.approx(1000.0)
    boot = leaderboard(records, bootstrap_rounds=20, anchor="delta")
    assert boot.get("delta").ci_low == pytest.approx(1000.0)


def test_rank_rule_and_intervals() -> None:
    lo = np.array([1100.0, 1090.0, 1000.0, 900.0])
    hi = np.array([1200.0, 1150.0, 1095.0, 950.0])
    best, worst = rank_intervals(lo, hi)
    # model 2's upper bound (1095) is below model 0's lower bound (1100) only
    assert best.tolist() == [1, 1, 2, 4]
    assert worst.tolist() == [2, 3, 3, 4]


def test_to_dict_shape() -> None:
    board = leaderboard(simulate(SKILLS, 500, seed=6), bootstrap_rounds=10)
    data = board.to_dict()
    assert set(data) == {"models", "style_coefficients", "warnings"}
    assert {"name", "rating", "ci_low", "ci_high", "rank", "n_battles"} <= set(data["models"][0])
    assert data["style_coefficients"] == {}


def test_disconnected_graph_and_few_battles_warnings() -> None:
    records = [{"model_a": "a", "model_b": "b", "winner": w} for w in ("model_a", "model_b", "tie")] + [
        {"model_a": "c", "model_b": "d", "winner": w} for w in ("model_a", "model_b", "model_b")
    ]
    board = leaderboard(records, ci_method="sandwich", min_battles=5)
    assert any("disconnected" in w and "a, b" in w and "c, d" in w for w in board.warnings)
    assert any("fewer than 5 battles" in w for w in board.warnings)
    assert board.get("a").rating == pytest.approx(1000.0)


def test_perfect_record_warning_keeps_ratings_finite() -> None:
    records = [{"model_a": "champ", "model_b": "b", "winner": "model_a"}] * 5
    records += [{"model_a": "b", "model_b": "c", "winner": w} for w in ("model_a", "model_b")]
    board = leaderboard(records, ci_method="sandwich")
    assert any("never lost" in w and "champ" in w for w in board.warnings)
    assert all(math.isfinite(m.rating) for m in board.models)
    assert board.models[0].name == "champ"


def test_online_elo_chronological() -> None:
    records = [
        {"model_a": "a", "model_b": "b", "winner": "model_a", "tstamp": 2.0},
        {"model_a": "a", "model_b": "b", "winner": "model_b", "tstamp": 1.0},
    ]
    board = leaderboard(records, ci_method="sandwich", elo_k=32)
    # b wins first (at 1000/1000: +16), then a wins against 1016 (expected 0.477)
    first = 16.0
    expect = 1.0 / (1.0 + 10 ** ((1000 + first - (1000 - first)) / 400))
    a_final = 1000 - first + 32 * (1 - expect)
    assert board.get("a").elo == pytest.approx(a_final)
    raw = online_elo(np.array([0, 0]), np.array([1, 1]), np.array([0.0, 1.0]), 2, k=32)
    assert raw[0] == pytest.approx(a_final)


def style_records(n: int, seed: int, bias: float, *, texts: bool) -> list[dict]:
    """Equal-skill models except 'solid' (+60); 'verbose' writes long answers; longer answers win more often."""
    rng = np.random.default_rng(seed)
    skills = {"verbose": 1000.0, "terse": 1000.0, "plain": 1000.0, "solid": 1060.0}
    mean_len = {"verbose": 400.0, "terse": 60.0, "plain": 150.0, "solid": 150.0}
    names = list(skills)
    out = []
    for _ in range(n):
        a, b = rng.choice(names, size=2, replace=False)
        la = float(rng.poisson(mean_len[a]) + 1)
        lb = float(rng.poisson(mean_len[b]) + 1)
        feature = (la - lb) / (la + lb + 1.0)
        logit = (skills[a] - skills[b]) * LN10_400 + bias * feature
        winner = "model_a" if rng.random() < 1 / (1 + math.exp(-logit)) else "model_b"
        record: dict[str, Any] = {"model_a": str(a), "model_b": str(b), "winner": winner}
        if texts:
            record["conversation_a"] = [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "w " * int(la)},
            ]
            record["conversation_b"] = [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "w " * int(lb)},
            ]
        else:
            record.update(style_tokens_a=la, style_tokens_b=lb, style_headers_a=0.0, style_headers_b=0.0)
            record.update(style_list_items_a=0.0, style_list_items_b=0.0, style_bold_a=0.0, style_bold_b=0.0)
        out.append(record)
    return out


@pytest.mark.parametrize("texts", [False, True])
def test_style_control_removes_planted_length_bias(texts: bool) -> None:
    records = style_records(6000 if texts else 20_000, seed=11, bias=3.0, texts=texts)
    plain = leaderboard(records, ci_method="sandwich", elo_k=None)
    styled = leaderboard(records, ci_method="sandwich", style_control=True, elo_k=None)
    assert plain.models[0].name == "verbose"  # length buys the top spot without control
    assert styled.models[0].name == "solid"  # with control the genuinely better model leads
    gap = styled.get("solid").rating - styled.get("plain").rating
    assert abs(gap - 60.0) < 25.0
    assert abs(styled.get("verbose").rating - styled.get("plain").rating) < 25.0
    assert styled.style_coefficients["tokens"] > 50.0
    assert "headers" not in styled.style_coefficients or texts
    assert any("never varies" in w for w in styled.warnings)


def test_style_control_bootstrap_matches_sandwich() -> None:
    records = style_records(4000, seed=12, bias=2.0, texts=False)
    boot = leaderboard(records, style_control=True, bootstrap_rounds=100, elo_k=None)
    sand = leaderboard(records, style_control=True, ci_method="sandwich", elo_k=None)
    for m in boot.models:
        other = sand.get(m.name)
        assert m.rating == pytest.approx(other.rating)
        width_ratio = (m.ci_high - m.ci_low) / (other.ci_high - other.ci_low)
        assert 0.7 < width_ratio < 1.4
    lo, hi = boot.style_intervals["tokens"]
    assert lo < boot.style_coefficients["tokens"] < hi


def test_vibe_control_adds_vibe_coefficients() -> None:
    """Flattery wins votes; 'flatterer' flatters more often but is otherwise as good as the others."""
    rng = np.random.default_rng(13)
    rate = {"flatterer": 0.6, "plain": 0.1, "other": 0.1}
    records = []
    for _ in range(4000):
        a, b = (str(x) for x in rng.choice(list(rate), size=2, replace=False))
        fa, fb = rng.random() < rate[a], rng.random() < rate[b]
        logit = 1.5 * (float(fa) - float(fb))
        text = {True: "Great question! Here it is.", False: "Here it is."}
        records.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": "model_a" if rng.random() < 1 / (1 + math.exp(-logit)) else "model_b",
                "conversation_a": [{"role": "assistant", "content": text[bool(fa)]}],
                "conversation_b": [{"role": "assistant", "content": text[bool(fb)]}],
            }
        )
    plain = leaderboard(records, ci_method="sandwich", elo_k=None)
    board = leaderboard(records, ci_method="sandwich", vibe_control=True, elo_k=None)
    assert plain.get("flatterer").rating - plain.get("plain").rating > 80
    # "Great question!" carries flattery, enthusiasm and an exclamation at once: their effects are one
    # identifiable coefficient (the first of them kept), the others read can't tell with the reason
    assert board.style_coefficients["exclamations"] > 0
    assert board.style_cant_tell["flattery"].startswith("exactly collinear with exclamations")
    assert abs(board.get("flatterer").rating - board.get("plain").rating) < 40
    flatterer = board.get("flatterer")
    assert flatterer.ci_low < flatterer.rating < flatterer.ci_high


def test_collinear_covariate_warns() -> None:
    records = []
    for k in range(300):
        a, b = ("loud", "quiet") if k % 2 else ("quiet", "loud")
        texts = {"loud": "Wow!!", "quiet": "Fine."}
        records.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": "model_a" if k % 3 else "model_b",
                "conversation_a": [{"role": "assistant", "content": texts[a]}],
                "conversation_b": [{"role": "assistant", "content": texts[b]}],
            }
        )
    board = leaderboard(records, ci_method="sandwich", vibe_control=True, elo_k=None)
    assert any("collinear" in w for w in board.warnings)
