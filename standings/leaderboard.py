"""The studio's leaderboard: votes from the database -> ratings, boards, matrices and rating over time as
plain data.

`LeaderboardService(db)` keeps a `VoteCache`: compact rows of every vote, refreshed incrementally. Beside
them is a DuckDB table of aggregated cells, kept up to date by deltas. Each view is answered from it.
- A DuckDB group-by over the cells under the board's filters gives (model a, model b, outcome) counts and
  summed inverse sampling probabilities.
- These expand into battle records for `standings.ratings`. The cell's harmonic-mean sampling probability
  keeps every cell's weight sum. So point estimates and the bootstrap match the raw votes. Only sandwich
  intervals lose the spread of weights within a cell.
- Online Elo depends on the order of the votes. It is carried forward vote by vote per filter instead of
  being replayed.
- Boards are memoised per options until the next change. So a refresh after one new vote reads one row and
  refits once.

Style- and vibe-controlled boards need one row per vote with the answers' feature counts. Those are
computed once per vote (`VoteCache.features`) and kept. Vibe profiles read stored answers directly from
the turns table, of ended battles only. Nothing here counts a battle that is still open. Self-play battles
(`arena.self_play`: one contestant sampled twice, at temperatures a researcher chose) count nowhere here,
profiles included.

The arena's active pair sampler reads the same cache. `sampler_inputs()` is the board `SAMPLER_BOARD`
(Bradley-Terry, sandwich intervals, every contestant with a vote) by contestant id, plus rated votes per
pair. It is memoised per data version. So the sampler and the Leaderboard tab share one copy of the votes
and refit once per change.

One computed object per quantity: `standard_options()` is the board every view shows unless its user picks
other options. Those views are the Leaderboard tab's defaults, the decision card, the model page's rating,
families, and `vibestudio ratings` on the studio database. So each model's rating and interval is one
memoised fit, read the same everywhere. An interval the data do not identify reads "can't tell" with the
reason (`cant_tell`, see `standings.ratings._board`).

The tests hold the service to the plain path: every vote through the ORM, then
`standings.ratings.leaderboard`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.arena.registry import RegistryError, get_contestant
from vibestudio.arena.sampling import RatingInfo, SamplerInputs
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.outcomes import FASTCHAT_WINNERS, SCORE_A
from vibestudio.common.settings import get_settings
from vibestudio.db.models import Battle, Contestant, Turn
from vibestudio.db.session import Database
from vibestudio.standings.ratings import BattleRecords, online_elo
from vibestudio.standings.records import UNCOUNTED
from vibestudio.standings.vote_cache import CATEGORY_SOURCES, FEATURE_COLUMNS, VoteCache
from vibestudio.textfeatures import vibes

#: Board names besides "category:<name>".
BOARDS = ("all", "single-turn", "multi-turn")
CI_METHODS = ("bootstrap", "sandwich")
#: Board methods; "auto" picks the best predictor of held-out votes.
METHODS = ("auto", "bt", "rao-kupper", "davidson")
_SCORE_A = np.array(SCORE_A)  # by outcome code
#: An Elo replay over at least this many votes saves the cache right away (a restart then carries it on).
REPLAY_SAVE_ROWS = 100_000


@dataclass(frozen=True)
class BoardOptions:
    """What to rate and how. `board`: "all", "single-turn", "multi-turn" or "category:<name>"."""

    ci_method: str = "bootstrap"
    bootstrap: int = 100
    style_control: bool = False
    vibe_control: bool = False
    board: str = "all"
    include_named: bool = False
    include_revealed: bool = False
    both_good: str = "tie"
    both_bad: str = "tie"
    min_battles: int = 10
    elo_k: float | None = 4.0
    seed: int = 0
    #: "bt", "rao-kupper", "davidson", or "auto": the one that predicts held-out votes best (`predict`).
    method: str = "bt"

    def check(self) -> None:
        if self.ci_method not in CI_METHODS:
            raise ValueError(f"ci_method must be one of {', '.join(CI_METHODS)}, got {self.ci_method!r}")
        if self.ci_method == "bootstrap" and self.bootstrap < 2:
            raise ValueError("bootstrap needs at least 2 rounds; use ci_method='sandwich' for none")
        if self.board not in BOARDS and not self.board.startswith("category:"):
            raise ValueError(
                f"board must be one of {', '.join(BOARDS)} or 'category:<name>', got {self.board!r}"
            )
        for label, policy in (("both_good", self.both_good), ("both_bad", self.both_bad)):
            if policy not in ("tie", "drop"):
                raise ValueError(f"{label} must be 'tie' or 'drop', got {policy!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")


def standard_options(**changes: Any) -> BoardOptions:
    """The board every view shows by default (see the module docstring): best-predicting method, bootstrap
    intervals with the studio's `leaderboard_bootstrap` rounds (sandwich below 2), anonymous votes, ties as ties,
    intervals floored below 10 battles. `changes` replace fields (the Leaderboard tab's filters)."""
    rounds = get_settings().leaderboard_bootstrap
    base = BoardOptions(
        method="auto", ci_method="bootstrap" if rounds >= 2 else "sandwich", bootstrap=max(rounds, 2)
    )
    return replace(base, **changes)


#: The board the arena's active sampler reads: anonymous, not revealed, ties as ties, everyone with a vote, no Elo.
SAMPLER_BOARD = BoardOptions(ci_method="sandwich", min_battles=0, elo_k=None)


class LeaderboardService:
    """Leaderboards over one database, refreshed incrementally. One per process and database; thread-safe."""

    def __init__(self, db: Database, cache: VoteCache | None = None) -> None:
        self.db = db
        self.cache = cache or VoteCache(db)
        self._memo: dict[tuple[Any, ...], Any] = {}

    # -- plumbing ---------------------------------------------------------------------------------------------
    def refresh(self) -> dict[str, Any]:
        """Read new votes; returns {"new_votes", "rebuilt", "seconds", "rows"}."""
        stats = self.cache.refresh()
        if len(self._memo) > 64:
            self._memo.clear()
        return asdict(stats)

    def _contestants(self) -> list[tuple[int, str, bool]]:
        with self.db.engine.connect() as conn:
            q = select(Contestant.id, Contestant.public_name, Contestant.active).order_by(Contestant.id)
            return [(int(i), str(n), bool(a)) for i, n, a in conn.execute(q)]

    def _names(self) -> dict[int, str]:
        return {i: n for i, n, _ in self._contestants()}

    def _where(self, o: BoardOptions) -> tuple[str, list[Any]]:
        """The SQL filter for `o`, on the columns shared by the `votes` view and the `cells` table."""
        clauses, params = ["TRUE"], []
        if not o.include_named:
            clauses.append("anon")
        if not o.include_revealed:
            clauses.append("NOT revealed")
        dropped = [code for code, drop in ((3, o.both_bad == "drop"), (4, o.both_good == "drop")) if drop]
        if dropped:
            clauses.append(f"outcome NOT IN ({', '.join(map(str, dropped))})")
        if o.board == "single-turn":
            clauses.append("NOT multi")
        elif o.board == "multi-turn":
            clauses.append("multi")
        elif o.board.startswith("category:"):
            name = o.board.split(":", 1)[1]
            clauses.append("cat = ?")
            params.append(self.cache.categories.index(name) if name in self.cache.categories else -2)
        return " AND ".join(clauses), params

    def _battles(self, o: BoardOptions, names: dict[int, str]) -> dict[str, int]:
        """Per model, the battles its rated votes on `o`'s board come from (a battle of two turns has two votes)."""
        where, params = self._where(o)
        rows = self.cache.query(
            f"SELECT m, count(DISTINCT battle_id) AS n FROM (SELECT a AS m, battle_id FROM votes WHERE {where} "
            f"UNION ALL SELECT b AS m, battle_id FROM votes WHERE {where}) GROUP BY m",
            [*params, *params],
        )
        return {names.get(int(m), str(m)): int(n) for m, n in zip(rows["m"], rows["n"], strict=True)}

    def _cells(self, o: BoardOptions, by_day: bool = False) -> dict[str, np.ndarray]:
        """(a, b, outcome, nop, n, inv) per cell of `o`'s votes; with `by_day` also per day (from the rows)."""
        where, params = self._where(o)
        if by_day:
            return self.cache.query(
                "SELECT a, b, outcome, isnan(p) AS nop, floor(ts / 86400) AS day, count(*) AS n, "
                f"sum(CASE WHEN isnan(p) THEN 0 ELSE 1.0 / p END) AS inv FROM votes WHERE {where} "
                "GROUP BY ALL ORDER BY ALL",
                params,
            )
        return self.cache.query(
            f"SELECT a, b, outcome, nop, sum(n) AS n, sum(inv) AS inv FROM cells WHERE {where} "
            "GROUP BY ALL HAVING sum(n) > 0 ORDER BY ALL",
            params,
        )

    def records(self, options: BoardOptions | None = None, *, by_day: bool = False) -> BattleRecords:
        """Battle records (model_a, model_b, winner, sampling_prob[, tstamp]) for `options`, one row per vote,
        rebuilt from the aggregated cells (`tstamp` = midday of the vote's day when `by_day`)."""
        o = options or BoardOptions()
        o.check()
        cells = self._cells(o, by_day)
        return _expand(cells, self._names(), by_day)

    # -- the board --------------------------------------------------------------------------------------------
    def board(self, options: BoardOptions | None = None, refresh: bool = True) -> dict[str, Any]:
        """The leaderboard as plain data: `Leaderboard.to_dict()` plus style intervals, vote counts, the list of
        boards, unrated contestants and refresh statistics."""
        o = options or BoardOptions()
        o.check()
        stats = self.refresh() if refresh else None
        contestants = self._contestants()
        names = {i: n for i, n, _ in contestants}
        # The fit runs outside the cache's lock, on a snapshot taken under it: the arena's sampler (which needs
        # the lock to read new votes) never waits for a board someone is cycling through the options of.
        with self.cache.lock:
            key = ("board", o, self.cache.version, tuple(sorted(names.items())))
            out = self._memo.get(key)
            if out is None:
                if o.style_control or o.vibe_control:
                    records = self._feature_records(o, names)
                else:
                    records = _expand(self._cells(o), names, False)
                elo = self._elo_ratings(o) if o.elo_k is not None and len(records) else None
                battles = self._battles(o, names)
        if out is None:
            out = self._fit(o, records, names, elo)
            # the fit's rows are votes (one per turn): name each count for what it counts
            for m in out["models"]:
                m["n_votes"], m["n_battles"] = m["n_battles"], battles.get(m["name"], 0)
            with self.cache.lock:
                self._memo[key] = out
        out = dict(out)
        rated = {m["name"] for m in out["models"]}
        out["unrated"] = [n for _, n, active in contestants if active and n not in rated]
        out["boards"] = self.boards(o)
        out["refresh"] = stats
        return out

    def _fit(
        self, o: BoardOptions, records: Any, names: dict[int, str], elo: np.ndarray | None
    ) -> dict[str, Any]:
        """The board for `o` from a snapshot of its records (no lock held: this is the slow part)."""
        from vibestudio.standings.ratings import leaderboard

        out: dict[str, Any] = {"models": [], "style_coefficients": {}, "style_intervals": {}, "warnings": []}
        method, why = self._resolve_method(o)
        if len(records):
            board = leaderboard(
                records,
                method=method if not (o.style_control or o.vibe_control) else "bt",
                bootstrap_rounds=o.bootstrap,
                seed=o.seed,
                ci_method=o.ci_method,
                style_control=o.style_control,
                vibe_control=o.vibe_control,
                both_good=o.both_good,
                both_bad=o.both_bad,
                elo_k=None,
                min_battles=o.min_battles,
                record_noun="vote",
            )
            out.update(board.to_dict())
            out["style_intervals"] = {k: list(v) for k, v in board.style_intervals.items()}
            if elo is not None:
                ids = {name: cid for cid, name in names.items()}
                for m in out["models"]:
                    m["elo"] = float(elo[ids[m["name"]]])
        else:
            out["warnings"].append("no rated votes on this board yet")
        out["n_votes"] = len(records)
        out["options"] = asdict(o)
        out["method"] = method if not (o.style_control or o.vibe_control) else "bt"
        out["method_reason"] = why
        return out

    def sampler_inputs(self, refresh: bool = True) -> SamplerInputs:
        """What the arena's active sampler needs (`arena.sampling.RatingSource`): per contestant id its rating,
        95% interval and rated votes on `SAMPLER_BOARD`, and rated votes per pair (low id, high id). Refitted only
        when the votes changed; ratings that cannot be fitted leave everyone unrated (the weights stay valid)."""
        if refresh:
            self.refresh()
        names = self._names()
        with self.cache.lock:
            key = ("sampler", self.cache.version, tuple(sorted(names.items())))
            out = self._memo.get(key)
            if out is None:
                where, params = self._where(SAMPLER_BOARD)
                rows = self.cache.query(
                    f"SELECT least(a, b) AS lo, greatest(a, b) AS hi, sum(n) AS n FROM cells WHERE {where} "
                    "GROUP BY ALL HAVING sum(n) > 0",
                    params,
                )
        if out is not None:
            return out
        counts = {
            (int(lo), int(hi)): int(n)
            for lo, hi, n in zip(rows["lo"].tolist(), rows["hi"].tolist(), rows["n"].tolist(), strict=True)
        }
        ratings: dict[int, RatingInfo] = {}
        if counts:
            try:
                board = self.board(SAMPLER_BOARD, refresh=False)  # fits outside the lock
            except Exception:  # an unfittable board leaves everyone unrated
                board = {"models": []}
            ids = {name: cid for cid, name in names.items()}
            for m in board["models"]:
                if m["name"] in ids:
                    ratings[ids[m["name"]]] = RatingInfo(m["rating"], m["ci_low"], m["ci_high"], m["n_votes"])
        out = SamplerInputs(ratings, counts)
        with self.cache.lock:
            self._memo[key] = out
        return out

    def _feature_records(self, o: BoardOptions, names: dict[int, str]) -> pd.DataFrame:
        where, params = self._where(o)
        rows = self.cache.query(f"SELECT i, a, b, outcome, p FROM votes WHERE {where} ORDER BY i", params)
        positions = np.asarray(rows["i"], dtype=np.int64)
        frame = _frame(np.asarray(rows["a"]), np.asarray(rows["b"]), np.asarray(rows["outcome"]), names)
        frame["sampling_prob"] = np.asarray(rows["p"], dtype=np.float64)
        feat = self.cache.features(positions)
        for k, name in enumerate(FEATURE_COLUMNS):
            frame[name] = feat[:, k].astype(np.float64)
        return BattleRecords(frame)

    def _elo_ratings(self, o: BoardOptions) -> np.ndarray:
        """Online Elo for the votes `o` selects, carried forward from the last call (replayed from the start when
        rows already read changed). Indexed by contestant id. The state is kept in the cache's `extras`, so it is
        saved with the rows and a restarted studio does not replay a million votes."""
        key = json.dumps([o.include_named, o.include_revealed, o.both_good, o.both_bad, o.board, o.elo_k])
        states = self.cache.extras.setdefault("elo", {})
        state = states.get(key)
        if state is None or state["exclusions"] != self.cache.exclusions:
            state = {"last_vote_id": 0, "exclusions": self.cache.exclusions, "ratings": []}
        ratings = np.asarray(state["ratings"], dtype=np.float64)
        where, params = self._where(o)
        rows = self.cache.query(
            f"SELECT a, b, outcome FROM votes WHERE {where} ORDER BY vote_id",
            params,
            since_vote_id=state["last_vote_id"],
        )
        a, b = np.asarray(rows["a"], dtype=np.int64), np.asarray(rows["b"], dtype=np.int64)
        top = int(max(a.max(initial=0), b.max(initial=0))) + 1
        if top > len(ratings):
            ratings = np.concatenate([ratings, np.full(top - len(ratings), 1000.0)])
        y = _SCORE_A[np.asarray(rows["outcome"], dtype=np.int64)]
        ratings = online_elo(a, b, y, len(ratings), k=float(o.elo_k or 0), start=ratings)
        states[key] = {
            "last_vote_id": self.cache.last_vote_id,
            "exclusions": self.cache.exclusions,
            "ratings": ratings.tolist(),
        }
        if len(a) >= REPLAY_SAVE_ROWS and self.cache.persist:
            self.cache.save()  # a long replay: keep its result for the next start
        return ratings

    def boards(self, options: BoardOptions | None = None) -> list[dict[str, Any]]:
        """The boards there are votes for under `options`' filters: [{"board", "label", "n_votes"}], "all" first,
        then one per category with its votes by category source (`sources`), grouped and ordered by
        `standings.ratings.group_boards` as `leaderboard_by` orders the plain path's boards."""
        from vibestudio.standings.ratings import group_boards

        o = replace(options or BoardOptions(), board="all")
        key = ("boards", o, self.cache.version)
        if key in self._memo:
            return list(self._memo[key])
        where, params = self._where(o)
        rows = self.cache.query(
            f"SELECT cat, csrc, multi, sum(n) AS n FROM cells WHERE {where} GROUP BY ALL HAVING sum(n) > 0",
            params,
        )
        cats, src, multi, n = (np.asarray(rows[k]) for k in ("cat", "csrc", "multi", "n"))
        out = [
            {"board": "all", "label": "All votes", "n_votes": int(n.sum())},
            {"board": "single-turn", "label": "Single-turn", "n_votes": int(n[~multi].sum())},
            {"board": "multi-turn", "label": "Multi-turn", "n_votes": int(n[multi].sum())},
        ]
        names = np.array([None, *self.cache.categories], dtype=object)[cats.astype(np.int64) + 1]
        labels = [[] if name is None else [name] for name in names.tolist()]
        origin = [CATEGORY_SOURCES[int(source)] for source in src.tolist()]
        for group in group_boards(labels, n.tolist(), origin):
            predicted = group.sources.get("predicted", 0)
            label = f"Category: {group.label}" + (f" ({predicted} predicted)" if predicted else "")
            out.append(
                {
                    "board": f"category:{group.label}",
                    "label": label,
                    "n_votes": group.n_votes,
                    "sources": group.sources,
                }
            )
        self._memo[key] = out
        return list(out)

    def category_coverage(self, options: BoardOptions | None = None, refresh: bool = True) -> dict[str, Any]:
        """How many rated votes have a category, by source (set, labelled, predicted, none), and the share of
        typed-prompt votes (no prompt from a set) that the category boards now cover."""
        o = replace(options or BoardOptions(), board="all")
        if refresh:
            self.refresh()
        where, params = self._where(o)
        rows = self.cache.query(f"SELECT csrc, sum(n) AS n FROM cells WHERE {where} GROUP BY ALL", params)
        by = {name: 0 for name in CATEGORY_SOURCES}
        for source, count in zip(
            np.asarray(rows["csrc"]).tolist(), np.asarray(rows["n"]).tolist(), strict=True
        ):
            by[CATEGORY_SOURCES[int(source)]] += int(count)
        typed = by["labelled"] + by["predicted"] + by["none"]
        return {
            "by_source": by,
            "n_votes": sum(by.values()),
            "typed_votes": typed,
            "typed_covered": (by["labelled"] + by["predicted"]) / typed if typed else None,
        }

    # -- which method predicts best ---------------------------------------------------------------------------
    def vote_records(self, options: BoardOptions | None = None) -> BattleRecords:
        """One record per vote in vote order (model_a, model_b, winner, sampling_prob, tstamp), for `options`."""
        o = options or BoardOptions()
        where, params = self._where(o)
        rows = self.cache.query(
            f"SELECT a, b, outcome, p, ts, cat FROM votes WHERE {where} ORDER BY vote_id", params
        )
        frame = _frame(
            np.asarray(rows["a"]), np.asarray(rows["b"]), np.asarray(rows["outcome"]), self._names()
        )
        frame["sampling_prob"] = np.asarray(rows["p"], dtype=np.float64)
        frame["tstamp"] = np.asarray(rows["ts"], dtype=np.float64)
        cats = np.array([None, *self.cache.categories], dtype=object)
        frame["category"] = cats[np.asarray(rows["cat"], dtype=np.int64) + 1]
        return BattleRecords(frame)

    def predict(self, options: BoardOptions | None = None, refresh: bool = True) -> dict[str, Any]:
        """Held-out log-loss and Brier score per method (time split and random split), and the best board method:
        {"checks": [PredictiveCheck.to_dict(), ...], "best": str | None, "n_votes"}. Memoised per data version."""
        from vibestudio.standings.ratings import predictive_check
        from vibestudio.standings.ratings._predict import best_board_method

        o = replace(options or BoardOptions(), method="bt", style_control=False, vibe_control=False)
        o.check()
        if refresh:
            self.refresh()
        key = ("predict", o, self.cache.version)
        if key not in self._memo:
            records = self.vote_records(o)
            methods = ("elo", "bt", "rao-kupper", "davidson", "bt+kind")
            checks = [
                predictive_check(records, split=split, methods=methods, both_good=o.both_good, both_bad=o.both_bad)
                for split in ("time", "random")
            ] if len(records) else []  # fmt: skip
            self._memo[key] = {
                "checks": [c.to_dict() for c in checks],
                "best": best_board_method(checks) if checks else None,
                "n_votes": len(records),
            }
        return dict(self._memo[key])

    def for_prompt(
        self, text: str, options: BoardOptions | None = None, refresh: bool = True
    ) -> dict[str, Any]:
        """Which model for this prompt: the prompt-conditioned board (`standings.ratings._prompt_board`: per-kind
        offsets shrunk to the global board) at the prompt's kind probabilities from the prompt classifier.
        {"text", "kinds": {kind: p}, "models": [{name, rating, ci_low, ci_high, rank_low, rank_high}], "global":
        the same with no kind, "board": fit summary, "notes"}. The fit is memoised per data version."""
        from vibestudio.standings.prompt_kinds import classifier
        from vibestudio.standings.ratings._prompt_board import fit_arrays, kind_codes

        o = replace(
            options or BoardOptions(), method="bt", style_control=False, vibe_control=False, board="all"
        )
        o.check()
        if refresh:
            self.refresh()
        if not (text or "").strip():
            raise ValueError("type a prompt to rank the models for")
        with self.cache.lock:
            names = self._names()
            key = ("prompt-board", o, self.cache.version, tuple(sorted(names.items())))
            fitted = self._memo.get(key)
            records = None if fitted is not None else self.vote_records(o)
        if fitted is None:
            assert records is not None
            from vibestudio.standings.ratings._board import prepare

            prep = prepare(records, ipw=False)
            if len(prep.names) < 2:
                raise ValueError("too few rated votes: a board needs votes between at least two contestants")
            kind, kinds = kind_codes(records.frame["category"].to_numpy(dtype=object)[prep.rows])
            fitted = fit_arrays(prep.a, prep.b, prep.y, kind, prep.names, kinds)
            with self.cache.lock:
                self._memo[key] = fitted
        with self.db.session() as s:
            model = classifier(s)
        notes = list(fitted.notes)
        if model is None:
            probs: dict[str, float] = {}
            notes.append("no labelled prompts to train the prompt classifier on: the global board is shown")
        else:
            probs = model.probabilities(text)
            note = _unseen_kinds_note(probs, fitted.kinds)
            if note:
                notes.append(note)
        return {
            "text": text,
            "kinds": dict(sorted(probs.items(), key=lambda kv: -kv[1])),
            "models": fitted.rank(probs),
            "global": fitted.rank({}),
            "board": fitted.to_dict(),
            "notes": notes,
        }

    def _resolve_method(self, o: BoardOptions) -> tuple[str, str]:
        """The board method for `o` and why: as chosen, or for "auto" the best predictor of held-out votes."""
        if o.method != "auto":
            return o.method, "chosen"
        best = self.predict(o, refresh=False)["best"]
        if best is None:
            return "bt", "auto: too little data to compare the methods on held-out votes, so Bradley-Terry"
        return best, f"auto: {best} predicts held-out votes best (time split)"

    # -- how fragile is the order, LC win rate ----------------------------------------------------------------
    def votes_to_flip(
        self,
        options: BoardOptions | None = None,
        refresh: bool = True,
        between: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """For the top pair and each adjacent pair of the plain Bradley-Terry board under `options`' filters, the
        fewest votes found whose removal flips it, checked by a refit (`standings.ratings.votes_to_flip`), with the
        votes themselves: battle id, vote id, time and who cast it (`voter`, None for an anonymous vote).
        {"pairs": [...], "headline", "n_votes", "seconds", "warnings", "votes_to_flip": [{"higher", "lower",
        "votes"}]}; `between=(a, b)`: only that pair. Memoised per data version."""
        from vibestudio.standings.ratings import headline, votes_to_flip

        o = replace(options or BoardOptions(), method="bt", style_control=False, vibe_control=False)
        o.check()
        if refresh:
            self.refresh()
        with self.cache.lock:
            names = self._names()
            key = ("flip", o, between, self.cache.version, tuple(sorted(names.items())))
            out = self._memo.get(key)
            if out is None:
                where, params = self._where(o)
                rows = self.cache.query(
                    f"SELECT a, b, outcome, p, ts, vote_id, battle_id FROM votes WHERE {where} ORDER BY vote_id",
                    params,
                )
                frame = _frame(
                    np.asarray(rows["a"]), np.asarray(rows["b"]), np.asarray(rows["outcome"]), names
                )
                frame["sampling_prob"] = np.asarray(rows["p"], dtype=np.float64)
                frame["tstamp"] = np.asarray(rows["ts"], dtype=np.float64)
                frame["vote_id"] = np.asarray(rows["vote_id"], dtype=np.int64)
                frame["battle_id"] = np.asarray(rows["battle_id"], dtype=np.int64)
                report = votes_to_flip(
                    BattleRecords(frame), both_good=o.both_good, both_bad=o.both_bad, between=between
                )
                out = report.to_dict()
                out["headline"] = headline(report)
                out["votes_to_flip"] = report.summary()
                _add_voters(self.db, out["pairs"])
                self._memo[key] = out
        return dict(out)

    def win_rates(
        self, baseline: str, options: BoardOptions | None = None, rounds: int = 200, refresh: bool = True
    ) -> dict[str, Any]:
        """Win rate and length-controlled win rate of every contestant against `baseline` on `options`' board,
        with bootstrap intervals (`standings.ratings.win_rate_intervals`); lengths are the answers' token counts."""
        from vibestudio.standings.ratings import win_rate_intervals

        o = replace(options or BoardOptions(), style_control=True, vibe_control=False)
        o.check()
        if refresh:
            self.refresh()
        with self.cache.lock:
            names = self._names()
            key = ("winrate", baseline, rounds, o, self.cache.version, tuple(sorted(names.items())))
            out = self._memo.get(key)
            if out is None:
                records = self._feature_records(o, names)
                if baseline not in set(records.frame["model_a"].astype(str)) | set(
                    records.frame["model_b"].astype(str)
                ):
                    raise ValueError(f"{baseline!r} has no rated votes on this board")
                out = win_rate_intervals(
                    records, baseline, rounds=rounds, both_good=o.both_good, both_bad=o.both_bad
                )
                out["notes"].append(
                    "no prompt ids on the board's rows: instruction difficulty is not modelled"
                )
                self._memo[key] = out
        return dict(out)

    # -- other views ------------------------------------------------------------------------------------------
    def matrices(self, options: BoardOptions | None = None, refresh: bool = True) -> dict[str, pd.DataFrame]:
        """Observed win rate (row vs column, ties half), battle counts and BT-predicted win probability, models
        ordered by rating; empty frames when there are no votes."""
        from vibestudio.standings.ratings import pairwise_matrices

        o = options or BoardOptions()
        o.check()
        if refresh:
            self.refresh()
        records = self.records(o)
        if not len(records):
            empty = pd.DataFrame()
            return {"win_rate": empty, "counts": empty, "predicted": empty}
        m = pairwise_matrices(records, both_good=o.both_good, both_bad=o.both_bad)
        return {"win_rate": m.win_rate, "counts": m.counts, "predicted": m.predicted}

    def over_time(
        self, options: BoardOptions | None = None, freq: str = "W", refresh: bool = True
    ) -> pd.DataFrame:
        """The board's rating (same method, fit and scale as `board` with these options, style and vibe control
        aside) on all votes up to the end of each period ("D", "W", "M"); rows: the day of the period's last vote
        (noon of that day: votes are kept by day), columns: models (NaN before a model's first vote)."""
        from vibestudio.standings.ratings import rating_over_time

        o = options or BoardOptions()
        o.check()
        if refresh:
            self.refresh()
        records = self.records(o, by_day=True)
        if not len(records):
            return pd.DataFrame()
        method, _ = self._resolve_method(o)
        return rating_over_time(records, freq, both_good=o.both_good, both_bad=o.both_bad, method=method)


def _unseen_kinds_note(probs: dict[str, float], voted: list[str]) -> str | None:
    """The note for a prompt whose likely kinds have no votes: those kinds by name with their probabilities, in the
    same words as the kinds line, and their total share (the part of the prompt's board that is the global one)."""
    from vibestudio.standings.words import percent

    unseen = sorted(((k, p) for k, p in probs.items() if k not in voted and p > 0), key=lambda kv: -kv[1])
    share = math.fsum(p for _, p in unseen)  # exactly rounded: the same total in any order
    if share < 0.005:
        return None
    shown = ", ".join(f"{k} {percent(p)}" for k, p in unseen[:3]) + (" and others" if len(unseen) > 3 else "")
    what = "this kind has" if len(unseen) == 1 else "these kinds have"
    return (
        f"no votes yet for {shown}: {what} {percent(share)} of the prompt's kind probability, and that "
        "part of its board is the global board"
    )


def _frame(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, names: dict[int, str]) -> pd.DataFrame:
    """The columns `standings.ratings` works on: model_a / model_b categoricals over one list of names, winner."""
    ids = np.union1d(a, b).astype(np.int64)
    return _coded(ids, np.searchsorted(ids, a), np.searchsorted(ids, b), outcome, names)


def _coded(
    ids: np.ndarray, code_a: np.ndarray, code_b: np.ndarray, outcome: np.ndarray, names: dict[int, str]
) -> pd.DataFrame:
    labels = [names.get(int(i), f"contestant {int(i)}") for i in ids]
    order = np.argsort(labels, kind="stable")  # categories sorted by name, as `standings.ratings` builds them
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    categories = pd.Index([labels[k] for k in order])
    return pd.DataFrame(
        {
            "model_a": pd.Categorical.from_codes(rank[code_a], categories=categories),
            "model_b": pd.Categorical.from_codes(rank[code_b], categories=categories),
            "winner": pd.Categorical.from_codes(outcome.astype(np.int64), categories=list(FASTCHAT_WINNERS)),
        }
    )


def _expand(cells: dict[str, np.ndarray], names: dict[int, str], by_day: bool) -> BattleRecords:
    """One record per vote from (a, b, outcome, p unknown?, count, sum of 1/p) cells."""
    n = np.asarray(cells["n"], dtype=np.int64)
    if not len(n):
        return BattleRecords(pd.DataFrame(columns=["model_a", "model_b", "winner", "sampling_prob"]))
    a, b = np.asarray(cells["a"], dtype=np.int64), np.asarray(cells["b"], dtype=np.int64)
    ids = np.union1d(a, b)
    code_a, code_b = np.searchsorted(ids, a), np.searchsorted(ids, b)
    frame = _coded(ids, np.repeat(code_a, n), np.repeat(code_b, n), np.repeat(cells["outcome"], n), names)
    inv = np.asarray(cells["inv"], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = np.where(
            np.asarray(cells["nop"], dtype=bool), np.nan, n / inv
        )  # harmonic mean: same total weight
    frame["sampling_prob"] = np.repeat(prob, n)
    if by_day:
        frame["tstamp"] = np.repeat(np.asarray(cells["day"], dtype=np.float64) * 86400.0 + 43200.0, n)
    return BattleRecords(frame)


def _add_voters(db: Database, pairs: list[dict[str, Any]]) -> None:
    """Who cast each listed vote (user name; None for anonymous votes), read for those votes only."""
    from vibestudio.db.models import User, Vote

    ids = sorted({int(v["vote_id"]) for p in pairs for v in p["removed"] if v.get("vote_id") is not None})
    voters: dict[int, str | None] = {}
    with db.session() as s:
        for start in range(0, len(ids), 900):
            q = (
                select(Vote.id, User.name)
                .outerjoin(User, Vote.user_id == User.id)
                .where(Vote.id.in_(ids[start : start + 900]))
            )
            voters.update({int(i): n for i, n in s.execute(q)})
    for p in pairs:
        for v in p["removed"]:
            v["voter"] = voters.get(int(v["vote_id"])) if v.get("vote_id") is not None else None


# -- vibe profiles ----------------------------------------------------------------------------------------------
def _answers(session: Session, contestant_id: int, limit: int) -> list[str]:
    texts: list[str] = []
    for col, side in ((Battle.a_id, Turn.answer_a), (Battle.b_id, Turn.answer_b)):
        q = (
            select(side)
            .join(Battle, Turn.battle_id == Battle.id)
            .where(col == contestant_id, Battle.status.not_in(UNCOUNTED), Battle.mode != SELF_PLAY)
            .order_by(Turn.id.desc())
            .limit(limit)
        )
        texts.extend(t for t in session.scalars(q) if t)
    return texts[:limit]


def vibe_profile(session: Session, name: str, limit: int = 500) -> dict[str, Any]:
    """`textfeatures.vibes.profile` of a contestant's stored answers (its last `limit` per side) plus the count."""
    try:
        info = get_contestant(session, name)
    except RegistryError as exc:
        raise ValueError(str(exc)) from exc
    texts = _answers(session, info.id, limit)
    return {"name": info.public_name, "n_answers": len(texts), "features": vibes.profile(texts)}


def compare_contestants(session: Session, a: str, b: str, limit: int = 500) -> dict[str, Any]:
    """Side-by-side vibe profiles of two contestants: per feature both means, both rates and the difference."""
    pa, pb = vibe_profile(session, a, limit), vibe_profile(session, b, limit)
    return {
        "a": pa["name"],
        "b": pb["name"],
        "n_answers_a": pa["n_answers"],
        "n_answers_b": pb["n_answers"],
        "features": vibes.compare_profiles(pa["features"], pb["features"]),
    }
