"""The decision card: two contestants side by side on everything the studio measured, and one plain sentence.

`decision_card(db, a, b)` gathers, for contestants A and B:
- **quality**: the arena rating with its 95% interval, read from the board every view shows
  (`standings.leaderboard.standard_options`). It is the same fit as the Leaderboard tab and the model
  page, so the same interval. An interval the data do not identify is "can't tell" with its reason. Beside
  it is the pair's votes-to-flip: the fewest votes found whose removal swaps them, checked by a refit.
- **substance**: the verifiable evals' pass rate (`standings.evals.eval_scores`) with Wilson intervals.
- **vibes**: per answer feature of `textfeatures.vibes` (length, markdown, emoji, flattery, hedging, ...).
  It takes the mean difference over their stored arena answers, with a normal 95% interval. Only features
  whose interval excludes 0 "differ".
- **sycophancy**: the paired probe comparisons with their bootstrap intervals
  (`standings.probes.compare_probes`: flip rate after pushback, following a stated view).
- **speed and measured cost**: median tokens per second over the contestant's arena answers, with a
  bootstrap interval. It holds for the hardware it ran on. Cost per 1k generated tokens = price per hour /
  (tokens per second x 3600) x 1000. The operator sets the price per hour (`VIBESTUDIO_PRICE_PER_HOUR`, or
  `price_per_hour=`).

The sentence says only what the intervals allow. Two things differ only when their intervals are apart.
For a difference, that is when its interval excludes 0. Otherwise it says "tied" or "can't tell". Every
missing measurement is named under `missing` ("no verifiable evals for B", "no price per hour set"). Plain
dicts out; no UI.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.arena.registry import RegistryError, get_contestant
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.settings import get_settings
from vibestudio.common.stats import Z95, wilson
from vibestudio.db.models import Battle, Turn
from vibestudio.db.session import Database
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService, _answers, standard_options
from vibestudio.standings.records import UNCOUNTED
from vibestudio.textfeatures import vibes

#: Fewer answers than this per contestant: its vibes and speed are "can't tell".
MIN_ANSWERS = 10
#: How a feature's difference reads, from B's side: (more, less).
_VIBE_WORDS = {
    "tokens": ("is longer", "is shorter"),
    "headers": ("uses more headers", "uses fewer headers"),
    "list_items": ("uses more lists", "uses fewer lists"),
    "bold": ("uses more bold", "uses less bold"),
    "code_blocks": ("writes more code blocks", "writes fewer code blocks"),
    "emoji": ("uses more emoji", "uses fewer emoji"),
    "exclamations": ("exclaims more", "exclaims less"),
    "flattery": ("flatters more", "flatters less"),
    "sycophancy": ("agrees more readily", "agrees less readily"),
    "hedging": ("hedges more", "hedges less"),
    "refusal": ("refuses more", "refuses less"),
}
_PROBE_WORDS = {
    "pushback": ("gives in to pushback more", "gives in to pushback less"),
    "views": ("follows the user's stated view more", "follows the user's stated view less"),
}


class DecisionError(ValueError):
    """A card that cannot be drawn at all (unknown contestant, the same one twice)."""


@dataclass
class DecisionCard:
    """A against B; each section holds both sides' numbers with intervals and a verdict."""

    a: str
    b: str
    quality: dict[str, Any]
    substance: dict[str, Any]
    vibes: dict[str, Any]
    sycophancy: dict[str, Any]
    speed_cost: dict[str, Any]
    sentence: str
    missing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_markdown(self, literal: Any = str) -> str:
        """The card as Markdown; `literal` escapes contestant names (the studio's display path passes its own)."""
        a, b = literal(self.a), literal(self.b)
        q, s, sc = self.quality, self.substance, self.speed_cost
        lines = [f"### {a} vs {b}", "", f"**{literal(self.sentence)}**", ""]
        lines += ["| | " + a + " | " + b + " | verdict |", "|---|---|---|---|"]
        lines.append(f"| arena rating (95% CI) | {_iv(q['a'])} | {_iv(q['b'])} | {q['verdict']} |")
        flip = q.get("votes_to_flip")
        lines.append(f"| votes to flip their order | {flip if flip is not None else 'can’t tell'} | | |")
        lines.append(
            f"| verifiable evals passed (95% CI) | {_iv(s['a'], pct=True)} | {_iv(s['b'], pct=True)} "
            f"| {s['verdict']} |"
        )
        lines.append(f"| tokens/s (95% CI) | {_iv(sc['a'])} | {_iv(sc['b'])} | {sc['speed_verdict']} |")
        lines.append(
            f"| cost per 1k tokens (95% CI) | {_iv(sc['a'], key='cost')} | {_iv(sc['b'], key='cost')} "
            f"| {sc['cost_verdict']} |"
        )
        lines.append(
            f"| cost per answer (95% CI) | {_iv(sc['a'], key='answer_cost')} | {_iv(sc['b'], key='answer_cost')} "
            f"| {sc.get('answer_cost_verdict', 'can’t tell')} |"
        )
        for probe in self.sycophancy.get("probes", []):
            lines.append(
                f"| {probe['metric']} ({probe['paired_n']} paired items) | {_pct(probe['a_rate'])} "
                f"| {_pct(probe['b_rate'])} | {probe['verdict']} |"
            )
        for feat in self.vibes.get("features", []):
            if feat["differs"]:
                lines.append(
                    f"| {feat['feature']} per answer | {feat['mean_a']:.2f} | {feat['mean_b']:.2f} "
                    f"| B - A {feat['diff']:+.2f} [{feat['low']:+.2f}, {feat['high']:+.2f}] |"
                )
        if self.missing:
            lines += ["", "Can't tell: " + "; ".join(literal(m) for m in self.missing) + "."]
        return "\n".join(lines)


def _iv(side: dict[str, Any], pct: bool = False, key: str = "value") -> str:
    value = side.get(key)
    if value is None:
        return "can’t tell"
    lo, hi = side.get(f"{key}_low"), side.get(f"{key}_high")
    f = (lambda x: f"{100 * x:.0f}%") if pct else (lambda x: f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}")
    n = side.get("n")
    span = f" [{f(lo)}, {f(hi)}]" if lo is not None and hi is not None else ""
    return f"{f(value)}{span}" + (f" (n={n})" if n is not None else "")


def _pct(x: float | None) -> str:
    return "can’t tell" if x is None else f"{100 * x:.0f}%"


def _apart(a: dict[str, Any], b: dict[str, Any], key: str = "value") -> str | None:
    """ "a" / "b" when that side's interval is entirely above the other's, "tied" when they overlap, None when a
    side has no interval."""
    bounds = [a.get(f"{key}_low"), a.get(f"{key}_high"), b.get(f"{key}_low"), b.get(f"{key}_high")]
    known = [float(x) for x in bounds if x is not None]
    if len(known) < 4:
        return None
    lo_a, hi_a, lo_b, hi_b = known
    if lo_a > hi_b:
        return "a"
    if lo_b > hi_a:
        return "b"
    return "tied"


# -- sections -------------------------------------------------------------------------------------------------------
def _quality(
    service: LeaderboardService, a: str, b: str, missing: list[str], options: BoardOptions
) -> dict[str, Any]:
    board = service.board(options)
    rows = {m["name"]: m for m in board["models"]}
    out: dict[str, Any] = {"n_votes": board.get("n_votes", 0), "votes_to_flip": None, "flip_note": ""}
    for side, name in (("a", a), ("b", b)):
        m = rows.get(name)
        if m is None:
            missing.append(f"{name} has no rated votes")
            out[side] = {"value": None, "n": 0}
        elif m.get("cant_tell"):
            missing.append(f"{name}'s rating: {m['cant_tell']}")
            n = m.get("n_votes", m["n_battles"])  # the rating's sample: rated votes
            out[side] = {"value": None, "n": n, "cant_tell": m["cant_tell"], "rank": m["rank"]}
        else:
            out[side] = {
                "value": m["rating"],
                "value_low": m["ci_low"],
                "value_high": m["ci_high"],
                "n": m.get("n_votes", m["n_battles"]),
                "rank": m["rank"],
            }
    order = _apart(out["a"], out["b"])
    out["verdict"] = {"a": f"{a} higher", "b": f"{b} higher", "tied": "tied", None: "can't tell"}[order]
    if a in rows and b in rows:
        flip = service.votes_to_flip(options, refresh=False, between=(a, b))
        if flip["pairs"]:
            pair = flip["pairs"][0]
            out["votes_to_flip"], out["flip_note"] = pair["votes"], pair["note"]
            out["flip_higher"] = pair["higher"]
        else:
            out["flip_note"] = "; ".join(flip["warnings"])
    return out


def _substance(session: Session, a: str, b: str, missing: list[str]) -> dict[str, Any]:
    from vibestudio.standings.evals import eval_scores

    scores = eval_scores(session)
    out: dict[str, Any] = {}
    for side, name in (("a", a), ("b", b)):
        s = scores.get(name)
        if not s or not s["answered"]:
            missing.append(f"no verifiable evals for {name} (run `vibestudio evals run {name}`)")
            out[side] = {"value": None, "n": 0}
            continue
        lo, hi = wilson(int(s["passed"]), int(s["answered"])) or (None, None)
        out[side] = {"value": s["score"], "value_low": lo, "value_high": hi, "n": s["answered"]}
    order = _apart(out["a"], out["b"])
    out["verdict"] = {"a": f"{a} passes more", "b": f"{b} passes more", "tied": "tied", None: "can't tell"}[
        order
    ]
    return out


def _vibes(session: Session, ids: tuple[int, int], a: str, b: str, missing: list[str]) -> dict[str, Any]:
    texts = [_answers(session, cid, 500) for cid in ids]
    n_a, n_b = len(texts[0]), len(texts[1])
    out: dict[str, Any] = {"n_a": n_a, "n_b": n_b, "features": []}
    if min(n_a, n_b) < MIN_ANSWERS:
        short = a if n_a < MIN_ANSWERS else b
        missing.append(f"vibes: {short} has fewer than {MIN_ANSWERS} arena answers")
        return out
    fa = [vibes.features(t) for t in texts[0]]
    fb = [vibes.features(t) for t in texts[1]]
    for name in vibes.FEATURE_NAMES:
        xa = np.array([f.get(name, 0.0) for f in fa], dtype=float)
        xb = np.array([f.get(name, 0.0) for f in fb], dtype=float)
        diff = float(xb.mean() - xa.mean())
        se = math.sqrt(xa.var(ddof=1) / n_a + xb.var(ddof=1) / n_b)
        lo, hi = diff - Z95 * se, diff + Z95 * se
        out["features"].append(
            {
                "feature": name,
                "mean_a": float(xa.mean()),
                "mean_b": float(xb.mean()),
                "diff": diff,
                "low": lo,
                "high": hi,
                "differs": bool(lo > 0 or hi < 0),
            }
        )
    return out


def _sycophancy(session: Session, a: str, b: str, missing: list[str]) -> dict[str, Any]:
    from vibestudio.standings.probes import PROBES, compare_probes

    out: dict[str, Any] = {"probes": []}
    for probe in PROBES:
        c = compare_probes(session, probe, a, b)
        if c.difference is None:
            missing.append(
                f"sycophancy ({probe}): no probe item measured on both (run `vibestudio probes run`)"
            )
        differ = None if c.low is None else ("a" if c.low > 0 else "b" if (c.high or 0) < 0 else "tied")
        out["probes"].append(
            {
                "probe": probe,
                "metric": c.metric,
                "paired_n": c.paired_n,
                "a_rate": c.a_rate,
                "b_rate": c.b_rate,
                "diff_b_minus_a": None if c.difference is None else -c.difference,
                "low": None if c.high is None else -c.high,
                "high": None if c.low is None else -c.low,
                "higher": differ,
                "verdict": {"a": f"{a} higher", "b": f"{b} higher", "tied": "tied", None: "can't tell"}[
                    differ
                ],
            }
        )
    return out


def _speeds(session: Session, cid: int, limit: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Tokens per second and tokens of the contestant's most recent arena answers (ended battles, not
    self-play); tokens are NaN where not recorded."""
    values: list[tuple[float, float]] = []
    for side_id, tps, tokens in (
        (Battle.a_id, Turn.tps_a, Turn.tokens_a),
        (Battle.b_id, Turn.tps_b, Turn.tokens_b),
    ):
        q = (
            select(tps, tokens)
            .join(Battle, Turn.battle_id == Battle.id)
            .where(
                side_id == cid, Battle.status.not_in(UNCOUNTED), Battle.mode != SELF_PLAY, tps.is_not(None)
            )
            .order_by(Turn.id.desc())
            .limit(limit)
        )
        values.extend(
            (float(v), float(n) if n else float("nan")) for v, n in session.execute(q) if v and v > 0
        )
    values = values[:limit]
    return np.asarray([v for v, _ in values]), np.asarray([n for _, n in values])


def _median_interval(x: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    boots = np.median(x[rng.integers(0, len(x), (400, len(x)))], axis=1)
    lo, hi = (float(v) for v in np.quantile(boots, [0.025, 0.975]))
    return float(np.median(x)), lo, hi


def _speed_cost(
    session: Session, ids: tuple[int, int], a: str, b: str, price: float | None, missing: list[str]
) -> dict[str, Any]:
    """Median tokens/s with a bootstrap interval; cost per 1k tokens from it; cost per answer from the median
    generation time per answer (tokens / tokens per second), each with its interval."""
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"price_per_hour": price}
    if price is None:
        missing.append("cost: no price per hour set (VIBESTUDIO_PRICE_PER_HOUR or --price-per-hour)")
    for side, name, cid in (("a", a, ids[0]), ("b", b, ids[1])):
        tps, tokens = _speeds(session, cid)
        if len(tps) < MIN_ANSWERS:
            missing.append(f"speed: {name} has {len(tps)} timed arena answers (needs {MIN_ANSWERS})")
            out[side] = {"value": None, "cost": None, "answer_cost": None, "n": len(tps)}
            continue
        value, lo, hi = _median_interval(tps, rng)
        row: dict[str, Any] = {"value": value, "value_low": lo, "value_high": hi, "n": len(tps)}
        row["cost"] = row["answer_cost"] = None
        if price is not None:
            per_1k = lambda t: price / (t * 3600.0) * 1000.0  # noqa: E731
            row.update(cost=per_1k(value), cost_low=per_1k(hi), cost_high=per_1k(lo))
            seconds = (tokens / tps)[~np.isnan(tokens)]
            if len(seconds) >= MIN_ANSWERS:
                sec, sec_lo, sec_hi = _median_interval(seconds, rng)
                row.update(
                    answer_cost=sec * price / 3600.0,
                    answer_cost_low=sec_lo * price / 3600.0,
                    answer_cost_high=sec_hi * price / 3600.0,
                )
        out[side] = row
    speed = _apart(out["a"], out["b"])
    out["speed_verdict"] = {"a": f"{a} faster", "b": f"{b} faster", "tied": "tied", None: "can't tell"}[speed]
    cost = _apart(out["a"], out["b"], key="cost")
    out["cost_verdict"] = {"a": f"{b} cheaper", "b": f"{a} cheaper", "tied": "tied", None: "can't tell"}[cost]
    out["cheaper"] = {"a": "b", "b": "a"}.get(cost or "")
    per_answer = _apart(out["a"], out["b"], key="answer_cost")
    out["answer_cost_verdict"] = {
        "a": f"{b} cheaper",
        "b": f"{a} cheaper",
        "tied": "tied",
        None: "can't tell",
    }[per_answer]
    out["cheaper_per_answer"] = {"a": "b", "b": "a"}.get(per_answer or "")
    return out


# -- the sentence ---------------------------------------------------------------------------------------------------
def sentence(card: DecisionCard) -> str:
    """One plain sentence that says no more than the intervals allow."""
    a, b, q = card.a, card.b, card.quality
    if q["verdict"] == "tied":
        head = f"{a} and {b} are tied in the arena{_flip_words(q, None)}"
    elif q["verdict"] == "can't tell":
        head = f"Can't tell whether people prefer {a} or {b}"
    else:
        winner = a if q["verdict"].startswith(a + " ") else b
        loser = b if winner == a else a
        head = f"People prefer {winner} to {loser}{_flip_words(q, winner)}"
    phrases: dict[str, list[str]] = {a: [], b: []}
    s = card.substance
    if s["verdict"].endswith("passes more"):
        phrases[a if s["verdict"] == f"{a} passes more" else b].append("passes more verifiable evals")
    for f in card.vibes.get("features", []):
        if f["differs"] and f["feature"] in _VIBE_WORDS:
            more, less = _VIBE_WORDS[f["feature"]]
            phrases[b].append(more if f["diff"] > 0 else less)
    for p in card.sycophancy.get("probes", []):
        if p["higher"] in ("a", "b"):
            more, less = _PROBE_WORDS[p["probe"]]
            phrases[b].append(more if p["higher"] == "b" else less)
    sc = card.speed_cost
    for flag, key, unit in (
        ("cheaper_per_answer", "answer_cost", "per answer"),
        ("cheaper", "cost", "per token"),
    ):
        if sc.get(flag):
            cheap, dear = ("a", "b") if sc[flag] == "a" else ("b", "a")
            saving = 1.0 - sc[cheap][key] / sc[dear][key]
            phrases[a if cheap == "a" else b].append(f"costs {100 * saving:.0f}% less {unit}")
            break
    if not (sc.get("cheaper_per_answer") or sc.get("cheaper")) and sc.get("speed_verdict", "").endswith(
        "faster"
    ):
        phrases[a if sc["speed_verdict"] == f"{a} faster" else b].append("is faster")
    parts = [head]
    for who in (b, a):
        if phrases[who]:
            parts.append(f"{who} " + _join(phrases[who]))
    text = "; ".join(parts) + "."
    if not any(phrases.values()):
        text = text[:-1] + "; nothing else measured tells them apart."
    return text


def _flip_words(q: dict[str, Any], winner: str | None) -> str:
    """The votes-to-flip clause, from the same pair report as the card's number: 0 votes is a dead heat (the same
    rating, nothing to flip); a count is said only of the order it was counted on (plain Bradley-Terry's, which
    a tie model's board may not share)."""
    flip, higher = q.get("votes_to_flip"), q.get("flip_higher")
    if flip is None:
        return ""
    if flip == 0:
        return "; they have the same rating, so no vote needs to go to change their order"
    if winner is not None and higher is not None and higher != winner:
        return ""
    lead = f" (now {higher} ahead)" if winner is None and higher else ""
    return f"; {flip} vote{'s' if flip != 1 else ''} would flip their order{lead}"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def decision_card(
    db: Database,
    a: str,
    b: str,
    *,
    service: LeaderboardService | None = None,
    price_per_hour: float | None = None,
    options: BoardOptions | None = None,
) -> DecisionCard:
    """The card for contestants `a` and `b` (public names). `price_per_hour` overrides the setting; `options` the
    board the ratings are read from (default: `standard_options()`, the board every view shows)."""
    if a == b:
        raise DecisionError("pick two different contestants")
    service = service or LeaderboardService(db)
    price = price_per_hour if price_per_hour is not None else get_settings().price_per_hour
    if price is not None and (not math.isfinite(price) or price < 0):
        raise DecisionError(f"price per hour must be a number >= 0, got {price!r}")
    missing: list[str] = []
    with db.session() as s:
        try:
            ids = (get_contestant(s, a).id, get_contestant(s, b).id)
        except RegistryError as exc:
            raise DecisionError(str(exc)) from exc
    quality = _quality(service, a, b, missing, options or standard_options())
    with db.session() as s:
        substance = _substance(s, a, b, missing)
        vibe = _vibes(s, ids, a, b, missing)
        syco = _sycophancy(s, a, b, missing)
        speed = _speed_cost(s, ids, a, b, price, missing)
    card = DecisionCard(a, b, quality, substance, vibe, syco, speed, "", missing)
    card.sentence = sentence(card)
    return card


def decision_cards(db: Database, names: list[str], **options: Any) -> list[DecisionCard]:
    """Cards of the first contestant against each of the others (`vibestudio decide A B C`: A vs B, A vs C)."""
    if len(names) < 2:
        raise DecisionError("name at least two contestants")
    service = options.pop("service", None) or LeaderboardService(db)
    return [decision_card(db, names[0], other, service=service, **options) for other in names[1:]]
