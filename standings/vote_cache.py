"""An incremental, column-store copy of the vote store for the leaderboard: read everything once, then only
new votes.

Each vote becomes one compact numeric row. It holds the vote and battle id, contestant ids, outcome code,
sampling probability, time, prompt category code, turn, and the flags the rating filters need. The rows
live in growable numpy arrays in vote-id order. `refresh()` reads only votes with an id above the last one
seen, in one indexed range query. So a refresh after one new vote costs milliseconds, whatever the size of
the store. DuckDB runs the group-bys over a zero-copy Arrow view of the arrays (`query`). DuckDB cannot
attach the SQLite file here (no sqlite_scanner extension offline). That is why the rows are copied rather
than scanned in place.

**Past rows can change in one way**: the battle of a vote read while open ends later.
- A vote counts nowhere while its battle is open. A board, count or chart that moved after a vote, or
  after answers arrived, would tell a second tab who plays. Its row is read and flagged ``open``. It is
  left out of the aggregates and of the ``votes`` view.
- Such battles are watched: their status is re-read on each refresh. Once revealed or ended by *New
  round*, their rows join the aggregates.
- A battle that stopped on an engine error is never rated; its rows are flagged ``errored``.
- A self-play battle's rows (one contestant on both sides, `arena.self_play`) are flagged ``self_play``.
  They count nowhere, whatever a board's filters say.
- A count check detects deleted votes, and votes committed below the last id seen (possible with
  concurrent writers on PostgreSQL). Either triggers a full re-read.

The arrays are saved as Parquet under the data home (`cache/leaderboard/<database hash>/`). That happens
after a full read and whenever they grew by a twentieth. So a restarted studio reads the Parquet file and
only the votes since.

Every vote's prompt has a category with its source (`csrc`, `CATEGORY_SOURCES`):
- "set": the prompt set's own;
- "labelled": the one given when the battle started (a person chose it);
- "predicted": for a typed prompt with neither, the kind the prompt classifier predicts from the first
  typed turn (`standings.prompt_kinds`, trained on the studio's labelled prompt sets).
The prediction is made once, when the vote is first read, by the classifier of that moment. It is kept
with the row; a cleared cache predicts afresh. With no labelled prompts to train on, a typed prompt stays
without a category. The classifier is retrained only when the prompt sets change. A prediction costs about
0.2 ms. So a first read of a store with a million typed battles spends a few minutes once; then the rows
are saved.

Style and vibe feature counts are computed on demand, only for the rows a controlled board needs. They are
`textfeatures.vibes.features` of each side's assistant text up to the voted turn. They are kept (and
saved) with the rows.

This module knows nothing about ratings or contestant names. It stores contestant ids; callers map names.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Float, cast, func, select
from sqlalchemy.engine import Connection

from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.filelocks import atomic_write_bytes, file_lock, unique_tmp
from vibestudio.common.outcomes import CODES
from vibestudio.db.models import Battle, Turn, Vote
from vibestudio.db.session import Database, data_home
from vibestudio.textfeatures import vibes

#: The file format; outcome codes are `common.outcomes.CODES`, which never change.
FORMAT = 4
COLUMNS: dict[str, Any] = {
    "i": np.int64,  # row position (handy in SQL)
    "vote_id": np.int64,
    "battle_id": np.int64,
    "a": np.int32,  # contestant ids
    "b": np.int32,
    "outcome": np.int8,
    "p": np.float64,  # sampling probability of the pair, NaN when the pair was chosen
    "ts": np.float64,  # vote time, Unix seconds (UTC)
    "cat": np.int32,  # index into `categories`, -1 when the battle has none
    "csrc": np.int8,  # where the category came from: index into CATEGORY_SOURCES
    "turn": np.int16,  # voted turn, from 1
    "anon": np.bool_,  # anonymous battle (not named mode)
    "revealed": np.bool_,  # identity leaked before the vote
    "errored": np.bool_,  # the battle stopped on an engine error: never rated
    "open": np.bool_,  # the battle has not ended yet: counted nowhere until it does
    "self_play": np.bool_,  # one contestant on both sides: counted nowhere
}
#: Where a vote's category came from (the `csrc` code is the position here).
CATEGORY_SOURCES: tuple[str, ...] = ("none", "set", "labelled", "predicted")
#: Features kept per side for style and vibe control.
FEATURES: tuple[str, ...] = vibes.STYLE_FEATURES + vibes.VIBE_FEATURES
FEATURE_COLUMNS = [f"style_{f}_{side}" for f in FEATURES for side in ("a", "b")]
_CHUNK = 900  # ids per IN (...) query (SQLite allows 999 parameters by default)
#: The aggregated cells: vote counts and summed inverse sampling probabilities per combination of what boards filter on.
CELL_KEYS = "a, b, outcome, nop, cat, csrc, multi, anon, revealed"
CELL_SCHEMA = (
    "a INTEGER, b INTEGER, outcome TINYINT, nop BOOLEAN, cat INTEGER, csrc TINYINT, multi BOOLEAN, anon BOOLEAN, "
    "revealed BOOLEAN, n BIGINT, inv DOUBLE"
)


@dataclass
class RefreshStats:
    new_votes: int
    rebuilt: bool
    seconds: float
    rows: int


class VoteCache:
    """Compact rows of every vote, kept in step with the database by `refresh()`. Thread-safe."""

    #: The cells table is compacted once its rows (deltas included) pass twice max(cells at last compaction, this).
    compact_min = 1000

    def __init__(self, db: Database, cache_dir: Path | None = None, persist: bool = True) -> None:
        self.db = db
        self.persist = persist
        self.cache_dir = cache_dir or (data_home() / "cache" / "leaderboard" / _url_hash(db.url)[:16])
        self.lock = threading.RLock()
        self._kinds_model: tuple[tuple[Any, ...], Any] | None = None  # (prompts stamp, classifier or None)
        self._con = duckdb.connect()
        self._con.execute("SET threads TO 2")
        self._reset()

    # -- state ------------------------------------------------------------------------------------------------
    def _reset(self) -> None:
        self.n = 0
        self._cols: dict[str, np.ndarray] = {c: np.empty(0, dtype=t) for c, t in COLUMNS.items()}
        self._feat: np.ndarray | None = None  # (capacity, 2 * len(FEATURES)) float32, NaN = not computed
        self.categories: list[str] = []
        self._cat_index: dict[str, int] = {}
        self.last_vote_id = 0
        self.version = 0  # bumped on every change
        self.exclusions = 0  # bumped when rows already read change (a watched battle ended or errored)
        self.watch: set[int] = set()  # battles that were open when their votes were read
        self.extras: dict[str, Any] = {}  # callers' state derived from the rows (JSON), saved with them
        self.loaded = False
        self._saved_rows = 0
        self._arrow: tuple[int, int, pa.Table] | None = None  # (n, version, table) of the last full view
        self._con.execute(f"CREATE OR REPLACE TABLE cells ({CELL_SCHEMA})")
        self._cell_rows = 0  # rows in the cells table (deltas included)
        self._cell_keys = 0  # rows right after the last compaction

    def column(self, name: str) -> np.ndarray:
        """A read-only view of one column (rows 0..n-1)."""
        view = self._cols[name][: self.n]
        view.flags.writeable = False
        return view

    def _grow(self, extra: int) -> None:
        need = self.n + extra
        cap = len(self._cols["vote_id"])
        if need <= cap:
            return
        new_cap = max(need + need // 8, 3 * cap // 2, 1024)
        for name, arr in self._cols.items():
            grown = np.empty(new_cap, dtype=arr.dtype)
            grown[: self.n] = arr[: self.n]
            self._cols[name] = grown
        if self._feat is not None:
            grown_f = np.full((new_cap, self._feat.shape[1]), np.nan, dtype=np.float32)
            grown_f[: self.n] = self._feat[: self.n]
            self._feat = grown_f

    def _category_code(self, value: str | None) -> int:
        if value is None:
            return -1
        code = self._cat_index.get(value)
        if code is None:
            code = self._cat_index[value] = len(self.categories)
            self.categories.append(value)
        return code

    # -- reading the database ---------------------------------------------------------------------------------
    def _select_since(self, conn: Connection, last_id: int) -> dict[str, np.ndarray]:
        """Votes with an id above `last_id`, in id order, as numpy columns (read through the raw DBAPI cursor:
        a million rows as SQLAlchemy Row objects would cost seconds)."""
        if conn.dialect.name == "sqlite":
            ts = (func.julianday(Vote.created_at) - 2440587.5) * 86400.0
        else:
            ts = cast(func.extract("epoch", Vote.created_at), Float)
        q = (
            select(
                Vote.id,
                Vote.battle_id,
                Battle.a_id,
                Battle.b_id,
                Vote.outcome,
                Battle.sampling_prob,
                ts,
                Battle.category,
                Battle.prompt_id,
                Vote.turn_idx,
                Battle.mode,
                Vote.revealed_before_vote,
                Battle.status,
            )
            .join(Battle, Vote.battle_id == Battle.id)
            .where(Vote.id > int(last_id))
            .order_by(Vote.id)
        )
        sql = str(q.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        cursor = conn.connection.cursor()
        try:
            cursor.execute(sql)
            parts: list[list[tuple[Any, ...]]] = []
            while rows := cursor.fetchmany(200_000):
                parts.append(list(zip(*rows, strict=True)))
        finally:
            cursor.close()
        names = "vote_id battle_id a b outcome p ts category prompt_id turn_idx mode revealed status".split()
        return {
            name: np.concatenate([np.asarray(part[k], dtype=object) for part in parts])
            if parts
            else np.empty(0, dtype=object)
            for k, name in enumerate(names)
        }

    def _with_kinds(self, conn: Connection, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Each row's category source; typed prompts with no category get the classifier's prediction."""
        category = rows["category"].copy()
        has_cat = ~pd.isna(category).astype(bool)
        from_set = ~pd.isna(rows["prompt_id"]).astype(bool)
        csrc = np.where(has_cat, np.where(from_set, 1, 2), 0).astype(np.int8)
        typed = np.flatnonzero(~has_cat & ~from_set)
        if len(typed):
            predicted = self._predict_kinds(conn, rows["battle_id"][typed].astype(np.int64))
            for pos, battle_id in zip(typed.tolist(), rows["battle_id"][typed].tolist(), strict=True):
                kind = predicted.get(int(battle_id))
                if kind is not None:
                    category[pos], csrc[pos] = kind, 3
        return {**rows, "category": category, "csrc": csrc}

    def _predict_kinds(self, conn: Connection, battle_ids: np.ndarray) -> dict[int, str]:
        """Battle id -> the predicted kind of its first typed turn ({} when there is nothing to train on)."""
        from sqlalchemy.orm import Session

        from vibestudio.db.models import Prompt
        from vibestudio.standings.prompt_kinds import classifier

        # retrained only when the labelled prompts changed (a refresh after one typed vote costs one small query)
        stamp = tuple(conn.execute(select(func.count(Prompt.id), func.max(Prompt.id))).one())
        if self._kinds_model is None or self._kinds_model[0] != stamp:
            with Session(bind=conn) as session:
                self._kinds_model = (stamp, classifier(session))
        model = self._kinds_model[1]
        if model is None:
            return {}
        out: dict[int, str] = {}
        ids = sorted(set(battle_ids.tolist()))
        for start in range(0, len(ids), _CHUNK):
            q = select(Turn.battle_id, Turn.user_msg).where(
                Turn.battle_id.in_(ids[start : start + _CHUNK]), Turn.idx == 0
            )
            for battle_id, text in conn.execute(q):
                out[int(battle_id)] = model.predict(text or "")[0]
        return out

    def _append(self, rows: dict[str, np.ndarray]) -> None:
        k = len(rows["vote_id"])
        if k == 0:
            return
        self._grow(k)
        lo, hi = self.n, self.n + k
        c = self._cols
        c["i"][lo:hi] = np.arange(lo, hi)
        for name in ("vote_id", "battle_id", "a", "b"):
            c[name][lo:hi] = rows[name].astype(c[name].dtype)
        c["outcome"][lo:hi] = _codes(rows["outcome"], lambda v: CODES.get(v, -1))  # -1: unknown, not counted
        c["p"][lo:hi] = rows["p"].astype(np.float64)  # None -> NaN
        c["ts"][lo:hi] = rows["ts"].astype(np.float64)
        c["cat"][lo:hi] = _codes(rows["category"], lambda v: -1 if v is None else self._category_code(str(v)))
        c["csrc"][lo:hi] = rows["csrc"] if "csrc" in rows else 0
        c["turn"][lo:hi] = rows["turn_idx"].astype(np.int16) + 1
        c["anon"][lo:hi] = _codes(rows["mode"], lambda v: v == "anonymous").astype(bool)
        c["self_play"][lo:hi] = _codes(rows["mode"], lambda v: v == SELF_PLAY).astype(bool)
        c["revealed"][lo:hi] = rows["revealed"].astype(bool)
        status = _codes(rows["status"], lambda v: {"open": 1, "errored": 2}.get(v, 0))
        c["errored"][lo:hi] = status == 2
        c["open"][lo:hi] = status == 1
        self.watch.update(rows["battle_id"][status == 1].astype(np.int64).tolist())
        self.n = hi
        self.last_vote_id = int(c["vote_id"][hi - 1])
        self.version += 1

    def _check_watched(self, conn: Connection) -> None:
        """Re-read the status of battles that were open: the rows of those that ended join the aggregates, the
        rows of those that errored are flagged (and stay out)."""
        if not self.watch:
            return
        ids = sorted(self.watch)
        errored: list[int] = []
        ended: list[int] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            for battle_id, status in conn.execute(
                select(Battle.id, Battle.status).where(Battle.id.in_(chunk))
            ).all():
                if status == "open":
                    continue
                self.watch.discard(battle_id)
                (errored if status == "errored" else ended).append(battle_id)
        if not errored and not ended:
            return
        battles, is_open = self._cols["battle_id"][: self.n], self._cols["open"][: self.n]
        if errored:
            hit = np.flatnonzero(np.isin(battles, errored) & is_open)
            self._cols["errored"][hit] = True
            is_open[hit] = False
            self.exclusions += 1
        if ended:
            hit = np.flatnonzero(np.isin(battles, ended) & is_open)
            is_open[hit] = False
            self._add_cells(hit)  # the battle ended: its votes count from now on
            self.exclusions += 1  # rows already read changed: order-dependent views (online Elo) replay
        self.version += 1

    def refresh(self) -> RefreshStats:
        """Bring the rows up to date with the database; a full re-read only when the store changed under us."""
        t0 = time.perf_counter()
        with self.lock:
            rebuilt = False
            if not self.loaded:
                self._load_saved()
            before = self.n
            with self.db.engine.connect() as conn:
                rows = self._with_kinds(conn, self._select_since(conn, self.last_vote_id))
                got = len(rows["vote_id"])
                upto = int(rows["vote_id"][-1]) if got else self.last_vote_id
                if (
                    self._count_upto(conn, upto) != self.n + got
                ):  # deleted votes, or ids committed out of order
                    self._reset()
                    rows = self._with_kinds(conn, self._select_since(conn, 0))
                    rebuilt = True
                self._append(rows)
                self._add_cells(slice(before if not rebuilt else 0, self.n))
                self._check_watched(conn)
            self.loaded = True
            new = self.n - before if not rebuilt else self.n
            if self.persist and (rebuilt or self.n - self._saved_rows >= max(1, self._saved_rows // 20)):
                self.save()
            return RefreshStats(new, rebuilt, time.perf_counter() - t0, self.n)

    @staticmethod
    def _count_upto(conn: Connection, upto: int) -> int:
        """Votes with id <= upto, as (all votes) - (votes above upto) in one statement (one snapshot): a full
        count runs over the smallest index, a count over an id range walks the table itself (10x slower)."""
        total = select(func.count()).select_from(Vote).scalar_subquery()
        above = select(func.count()).select_from(Vote).where(Vote.id > upto).scalar_subquery()
        return int(conn.execute(select(total - above)).scalar_one())

    # -- DuckDB -----------------------------------------------------------------------------------------------
    def _view(self, positions: np.ndarray | slice | None = None, with_features: bool = False) -> pa.Table:
        """Arrow view of the rows, all of them or those at `positions` (zero-copy for numeric columns unless
        `positions` is an index array)."""
        if (
            positions is None
            and not with_features
            and self._arrow
            and self._arrow[:2] == (self.n, self.version)
        ):
            return self._arrow[2]
        pick = (lambda a: a[: self.n]) if positions is None else (lambda a: a[positions])
        arrays = {name: pa.array(pick(arr)) for name, arr in self._cols.items()}
        if with_features:
            feat = self._features()
            for k, name in enumerate(FEATURE_COLUMNS):
                arrays[name] = pa.array(np.ascontiguousarray(pick(feat[:, k])))
        table = pa.table(arrays)
        if positions is None and not with_features:
            self._arrow = (self.n, self.version, table)
        return table

    def table(self, with_features: bool = False) -> pa.Table:
        """All rows as an Arrow table (with the feature columns, NaN where not computed, when asked)."""
        with self.lock:
            return self._view(with_features=with_features)

    def query(self, sql: str, params: Iterable[Any] = (), since_vote_id: int = 0) -> dict[str, np.ndarray]:
        """Run `sql` in DuckDB; numpy columns back. The rows are the view `votes` (rated rows only: battle not
        open, not errored, not self-play, known outcome; plus `multi` = turn > 1), restricted to vote ids above
        `since_vote_id`; the aggregates are the table `cells`."""
        with self.lock:
            start = int(np.searchsorted(self._cols["vote_id"][: self.n], since_vote_id, side="right"))
            self._con.register("vote_rows", self._view(None if start == 0 else slice(start, self.n)))
            try:
                self._con.execute(
                    "CREATE OR REPLACE TEMP VIEW votes AS SELECT *, turn > 1 AS multi FROM vote_rows "
                    "WHERE NOT errored AND NOT open AND NOT self_play AND outcome >= 0"
                )
                return self._con.execute(sql, list(params)).fetchnumpy()
            finally:
                self._con.unregister("vote_rows")

    def _add_cells(self, positions: np.ndarray | slice, sign: int = 1) -> None:
        """Add (sign=-1: remove) the rows at `positions` to the aggregated cells: an appended delta, compacted by
        a DuckDB group-by once the deltas outnumber the cells."""
        size = len(range(self.n)[positions]) if isinstance(positions, slice) else len(positions)
        if not size:
            return
        self._con.register("fresh", self._view(positions))
        try:
            added = self._con.execute(
                f"INSERT INTO cells SELECT a, b, outcome, isnan(p), cat, csrc, turn > 1, anon, revealed, "
                f"{sign} * count(*), {sign} * sum(CASE WHEN isnan(p) THEN 0 ELSE 1.0 / p END) "
                "FROM fresh WHERE NOT errored AND NOT open AND NOT self_play AND outcome >= 0 GROUP BY ALL"
            ).fetchall()
        finally:
            self._con.unregister("fresh")
        self._cell_rows += int(added[0][0]) if added else 0
        if self._cell_rows > 2 * max(self._cell_keys, self.compact_min):
            self._con.execute(
                f"CREATE OR REPLACE TABLE cells AS SELECT {CELL_KEYS}, sum(n)::BIGINT AS n, sum(inv) AS inv "
                f"FROM cells GROUP BY ALL HAVING sum(n) <> 0"
            ).fetchall()
            self._cell_rows = self._cell_keys = int(
                self._con.execute("SELECT count(*) FROM cells").fetchall()[0][0]
            )

    # -- style and vibe features ------------------------------------------------------------------------------
    def _features(self) -> np.ndarray:
        if self._feat is None:
            self._feat = np.full((len(self._cols["vote_id"]), len(FEATURE_COLUMNS)), np.nan, np.float32)
        return self._feat

    def features(self, positions: np.ndarray) -> np.ndarray:
        """Feature counts (len(positions), 2 * len(FEATURES)) in `FEATURE_COLUMNS` order, computing missing ones."""
        with self.lock:
            feat = self._features()
            missing = positions[np.isnan(feat[positions, 0])]
            if len(missing):
                self._compute_features(missing)
                if self.persist and len(missing) >= max(
                    1000, self.n // 20
                ):  # else with the next regular save
                    self.save()
            return feat[positions]

    def _compute_features(self, positions: np.ndarray) -> None:
        feat = self._features()
        battle_ids = self._cols["battle_id"][positions]
        turns = self._cols["turn"][positions]
        order = np.argsort(battle_ids, kind="stable")
        with self.db.engine.connect() as conn:
            for start in range(0, len(order), _CHUNK):
                block = order[start : start + _CHUNK]
                ids = sorted({int(b) for b in battle_ids[block]})
                answers: dict[int, list[tuple[int, str, str]]] = {}
                for battle_id, idx, answer_a, answer_b in conn.execute(
                    select(Turn.battle_id, Turn.idx, Turn.answer_a, Turn.answer_b)
                    .where(Turn.battle_id.in_(ids))
                    .order_by(Turn.battle_id, Turn.idx)
                ):
                    answers.setdefault(battle_id, []).append((idx, answer_a or "", answer_b or ""))
                for k in block:
                    shown = [t for t in answers.get(int(battle_ids[k]), []) if t[0] < int(turns[k])]
                    # the same text the ratings use: all assistant turns up to the voted one, blank-line joined
                    fa = vibes.features("\n\n".join(t[1] for t in shown))
                    fb = vibes.features("\n\n".join(t[2] for t in shown))
                    feat[positions[k]] = [fa[f] if side == "a" else fb[f] for f in FEATURES for side in "ab"]
        self.version += 1

    # -- persistence ------------------------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "database": _url_hash(self.db.url),  # a hash: a PostgreSQL URL can hold a password
            "rows": self.n,
            "last_vote_id": self.last_vote_id,
            "categories": self.categories,
            "watch": sorted(self.watch),
            "exclusions": self.exclusions,
            "extras": self.extras,
            "markers_version": vibes.markers_version(),
            "features_version": vibes.FEATURES_VERSION,
        }

    def save(self) -> None:
        """Write the rows (and computed features) as Parquet plus a small JSON header; atomic replace.

        Several app processes may share one data home: each writes its own temporary files, and the pair is
        replaced under a file lock (``common.filelocks``), so a reader never pairs one writer's rows with another's
        header. A process whose rows are fewer than the saved ones leaves the newer file in place."""
        with self.lock:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            table = self._view(with_features=self._feat is not None)
            data_path, meta_path = self.cache_dir / "votes.parquet", self.cache_dir / "meta.json"
            tmp = unique_tmp(data_path)
            try:
                pq.write_table(table, tmp, compression="zstd")
                with file_lock(self.cache_dir / ".lock"):
                    if self._saved_rows_on_disk(meta_path) > self.last_vote_id:
                        return  # another process saved newer rows: keep them
                    os.replace(tmp, data_path)
                    atomic_write_bytes(meta_path, json.dumps(self._meta()).encode())
                self._saved_rows = self.n
            finally:
                tmp.unlink(missing_ok=True)

    @staticmethod
    def _saved_rows_on_disk(meta_path: Path) -> int:
        """The last vote id of the saved file (0 when there is none or it cannot be read)."""
        try:
            return int(json.loads(meta_path.read_text()).get("last_vote_id", 0))
        except (OSError, ValueError, AttributeError):
            return 0

    def _load_saved(self) -> None:
        """Start from the saved rows when there are any for this database (replaces what is in memory)."""
        meta_path, data_path = self.cache_dir / "meta.json", self.cache_dir / "votes.parquet"
        if not self.persist or not meta_path.exists() or not data_path.exists():
            return
        self._reset()
        try:
            with file_lock(self.cache_dir / ".lock"):  # the header and the rows of one save, not of two
                meta = json.loads(meta_path.read_text())
                table = pq.read_table(data_path)
            if meta.get("format") != FORMAT or meta.get("database") != _url_hash(self.db.url):
                return
            if table.num_rows != meta["rows"]:
                return
            n = table.num_rows
            self._grow(n)
            for name in COLUMNS:
                self._cols[name][:n] = table.column(name).to_numpy()
            if (
                FEATURE_COLUMNS[0] in table.column_names
                and meta.get("markers_version") == vibes.markers_version()
                and meta.get("features_version") == vibes.FEATURES_VERSION
            ):
                feat = self._features()
                for k, name in enumerate(FEATURE_COLUMNS):
                    feat[:n, k] = table.column(name).to_numpy()
            self.n = n
            self.categories = list(meta["categories"])
            self._cat_index = {c: k for k, c in enumerate(self.categories)}
            self.last_vote_id = int(meta["last_vote_id"])
            self.watch = set(meta["watch"])
            self.exclusions = int(meta.get("exclusions", 0))
            self.extras = dict(meta.get("extras") or {})
            self._saved_rows = n
            self.version += 1
            self._add_cells(slice(0, n))
        except (OSError, ValueError, KeyError, pa.ArrowException):
            self._reset()


def _url_hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()


def _codes(values: np.ndarray, code: Any) -> np.ndarray:
    """`code(v)` for every value of an object array, calling it once per distinct value."""
    uniq, first, inverse = _unique(values)
    return (
        np.array([code(values[i]) for i in first], dtype=np.int64)[inverse]
        if len(uniq)
        else np.zeros(0, np.int64)
    )


def _unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    first = np.zeros(len(uniques), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return np.asarray(uniques), first, codes
