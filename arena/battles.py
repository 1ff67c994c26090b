"""Battle lifecycle: draw a pair, stream both answers side by side, vote on any turn, reveal at the end.

A battle is a conversation between one user and two contestants. They are A and B in the database, left
and right on the screen; ``left_is_a`` is a stored coin flip. Every turn goes to both contestants, each
with its own earlier answers as context.
- **Votes.** Each turn can get one vote, with optional quick rubric scores. The choices are left / right /
  tie / both_good / both_bad, stored in A/B terms. Votes do not reveal anything.
- **Reveal.** ``reveal`` ends the battle. It is the only call that returns names in anonymous mode.
- **Regenerate.** ``regenerate`` re-runs the last, unvoted turn. The replaced answers are kept on the
  turn.
- **New round.** ``new_round`` ends the battle and starts a fresh one. Anonymous mode draws a new pair.
  Named mode keeps the same two contestants. Self-play keeps the contestant and temperatures, with new
  seeds.
- **Idle end.** The idle sweep (`arena.battle_end`) ends a battle idle for ``ArenaLimits.idle_minutes``.
Every ended battle records how (``ended_reason``), and its votes count from then on. A vote, turn or
regeneration on an ended battle is refused, saying how it ended. Its votes stay stored and counted.

**Self-play** (`arena.self_play`, ``start_self_play``) puts one contestant on both sides with two
samplings. It collects on-policy preference pairs. Its name is shown, since the researcher chose it. Only
the reveal says which side had which temperature. Self-play battles count nowhere in the standings. They
do feed preference snapshots.

**Anonymity.** Everything returned before the reveal is free of names, ids, personas and engine details.
That covers ``BattleView`` in anonymous mode, ``TurnUpdate``, ``VoteReceipt`` and ``BattleError``
messages. Engine errors are stored in full on the battle, but shown only by their identity-free kind. An
answer naming either contestant flags its turn. Every vote cast once it was on screen is stored
``revealed_before_vote``. Self-play is the exception: the name is no secret there.

**Blind by default.** In anonymous battles both sides answer under one token cap
(`ArenaLimits.shared_cap`). Each persona's own cap would tell the sides apart by length and by where the
cut-off note appears. The persona's fixed answer opening is left out of what is shown and stored
(``strip_prefill``). A vote on a turn with an empty answer is refused: there is nothing to compare.

**Writes.** A turn is written in one transaction once both answers are complete. An engine error or
time-out marks the battle ``errored`` (never rated) and stores nothing else. Bad input raises
``BattleError`` before any write.

**Where the parts live:**
- `arena.sampling` draws the pair, with ratings from the injected ``RatingSource``.
- `arena.streaming` runs both answers side by side, without the database.
- `arena.turns` writes the finished turn.
This module holds the lifecycle, the checks, the votes and the reveal.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from vibestudio.arena.battle_end import UNREVEALED, close, end_idle, touch
from vibestudio.arena.engines.base import Sampling, hit_cap
from vibestudio.arena.lifecycle import may_play
from vibestudio.arena.registry import (
    ContestantInfo,
    RegistryError,
    get_contestant,
    list_contestants,
    messages_for,
    to_info,
)
from vibestudio.arena.sampling import (
    Draw,
    PairPolicy,
    RatingSource,
    SamplerInputs,
    SamplingError,
    draw_pair,
    eligible,
    no_ratings,
)
from vibestudio.arena.self_play import (
    SELF_PLAY,
    check_temperatures,
    default_temperatures,
    effective_sampling,
    side_overrides,
)
from vibestudio.arena.streaming import SideState, StreamLimits, stream_pair
from vibestudio.arena.turns import mark_errored, store_turn
from vibestudio.common.outcomes import CHOICES, SIDES, choice_from_stored, stored_from_choice
from vibestudio.db.models import Battle, Contestant, Prompt, RubricScore, Turn, Vote, utcnow
from vibestudio.db.session import Database

MODES = ("anonymous", "named", SELF_PLAY)
QUICK_RUBRIC = ("helpfulness", "correctness", "style")
RUBRIC_RANGE = (1, 5)
ENDED = ("voted", "abandoned")
#: The one token cap of both sides in anonymous battles (``VIBESTUDIO_BLIND_MAX_TOKENS`` sets it in the studio):
#: the longest of the default personas' own caps, so none of them is cut shorter than it was written to be.
BLIND_MAX_TOKENS = 200


class BattleError(ValueError):
    """A request the battle cannot take (empty prompt, too long, already voted...). Nothing was written."""


@dataclass
class ArenaLimits:
    max_prompt_chars: int = 4000
    max_turns: int = 8
    answer_timeout_s: float = 180.0  # per answer, from the moment its engine slot is taken
    max_new_tokens: int = 512  # a cap on every contestant's answer length
    queue_timeout_s: float = 300.0  # longest wait for an engine slot
    max_regenerations: int = 3  # per turn
    max_conversation_chars: int = 24000  # all user messages and answers of a battle together
    idle_minutes: float = (
        30.0  # an open battle with no activity this long ends (`arena.battle_end`); 0 = never
    )
    # show answers without the persona's fixed opening (`arena.streaming`); on by default: an opening that never
    # changes gives its persona away at a glance (`arena.identifiability` measures how much)
    strip_prefill: bool = True
    # anonymous battles: both sides answer under this one cap (at most ``max_new_tokens``) instead of their
    # personas' own, so an answer's length limit and its cut-off note cannot tell the sides apart
    blind_max_tokens: int = BLIND_MAX_TOKENS
    # turns (and regenerations) one user may have being answered at once across their battles; 0 = no limit
    turns_in_flight_per_user: int = 1

    def shared_cap(self) -> int:
        """The one token cap both sides of an anonymous battle answer under."""
        return max(1, min(self.blind_max_tokens, self.max_new_tokens))


@dataclass
class BattleView:
    """What the browser may know about a battle. Names only in named mode and self-play; in self-play the two
    temperatures in ascending order (which side has which is for the reveal)."""

    battle_id: int
    n_turns: int = 0
    status: str = "open"
    mode: str = "anonymous"
    category: str | None = None
    voted_turns: list[int] = field(default_factory=list)
    left_name: str | None = None
    right_name: str | None = None
    temperatures: tuple[float, float] | None = None
    ended_reason: str | None = None  # how it ended (`arena.battle_end.END_REASONS`); None while open
    blank_turns: list[int] = field(default_factory=list)  # turns with an empty answer: nothing to compare

    @property
    def unvoted_turns(self) -> list[int]:
        """The turns (from 0) that have no vote yet while the battle is open."""
        if self.status != "open":
            return []
        return [i for i in range(self.n_turns) if i not in self.voted_turns]

    @property
    def votable_turns(self) -> list[int]:
        """The unvoted turns that can take a vote: both answers have text."""
        return [i for i in self.unvoted_turns if i not in self.blank_turns]


@dataclass
class TurnUpdate:
    """One streaming step of a turn, in left/right terms."""

    left: str
    right: str
    done: bool = False
    error: str | None = None
    turn_idx: int | None = None
    left_queue: int | None = None  # requests ahead of this side in its engine's queue (None: not waiting)
    right_queue: int | None = None
    left_error: str | None = None
    right_error: str | None = None
    regenerated: bool = False
    # the answer stopped at its length limit (mid-sentence, most likely). In anonymous battles both sides share
    # one limit (`ArenaLimits.shared_cap`), so the note says only that this answer was long, never whose it is;
    # the limit itself is not shown (in named mode it is the persona's own)
    left_cut: bool = False
    right_cut: bool = False


def hit_length_limit(sd: Any, max_new_tokens: int) -> bool:
    """True when a finished side's answer used every token it was allowed (its persona's cap or the arena's)."""
    if sd.stats is None or sd.error is not None:
        return False
    if sd.stats.finish is not None or sd.stats.cap is not None:  # the engine's word, or the cap it was asked
        return hit_cap(sd.stats)
    try:
        cap = Sampling.from_dict(sd.info.sampling).max_tokens
    except (TypeError, ValueError, KeyError):
        cap = max_new_tokens
    return hit_cap(sd.stats, min(cap, max_new_tokens))


@dataclass
class VoteReceipt:
    """A stored vote; says nothing about who was voted for."""

    battle_id: int
    turn_idx: int
    choice: str
    revealed_before_vote: bool
    n_rubric_scores: int = 0


@dataclass
class SideStats:
    tokens: int | None = None
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    wait_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "ttft_s": self.ttft_s, "tokens_per_s": self.tokens_per_s}


@dataclass
class TurnSummary:
    idx: int
    vote: str | None  # in left/right terms
    left: SideStats
    right: SideStats
    regenerations: int = 0
    leaked: bool = False


@dataclass
class Reveal:
    battle_id: int
    turn_idx: int  # the last voted turn
    left_name: str
    right_name: str
    outcome: str  # that vote's outcome, in A/B terms
    revealed_before_vote: bool
    left_stats: dict = field(default_factory=dict)
    right_stats: dict = field(default_factory=dict)
    turns: list[TurnSummary] = field(default_factory=list)
    mode: str = "anonymous"
    left_sampling: dict | None = None  # self-play: each side's sampling override (temperature, seed)
    right_sampling: dict | None = None


def busy_message(per_user: int) -> str:
    """The refusal of a turn past the user's turns in flight."""
    turns = "a turn" if per_user == 1 else f"{per_user} turns"
    return (
        f"you already have {turns} being answered (in another battle or tab); wait for it to finish, then send "
        "again (turns in flight per user: VIBESTUDIO_TURNS_IN_FLIGHT)"
    )


class _Answering:
    """Battles with a turn being generated: one turn at a time per battle, and votes and the reveal wait for it;
    and each user's turns in flight across all their battles, at most ``per_user`` at once (a fair share of the
    engines' slots: one user with many tabs cannot queue every slot ahead of everyone else). The local operator
    (``user_id=None``) and ``per_user <= 0`` are not capped. Counted in this process."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._by_user: dict[int, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def claim(self, battle_id: int, user_id: int | None = None, per_user: int = 0) -> Iterator[None]:
        key = user_id if per_user > 0 else None  # whose count this turn takes; None: not capped
        with self._lock:
            if battle_id in self._ids:
                raise BattleError("both models are still answering in this battle; wait for them to finish")
            if key is not None and self._by_user.get(key, 0) >= per_user:
                raise BattleError(busy_message(per_user))
            self._ids.add(battle_id)
            if key is not None:
                self._by_user[key] = self._by_user.get(key, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._ids.discard(battle_id)
                if key is not None:
                    left = self._by_user.get(key, 1) - 1
                    if left > 0:
                        self._by_user[key] = left
                    else:
                        self._by_user.pop(key, None)

    def in_flight(self, user_id: int) -> int:
        """How many turns of ``user_id`` are being answered now (capped users only)."""
        with self._lock:
            return self._by_user.get(user_id, 0)

    def __contains__(self, battle_id: int) -> bool:
        with self._lock:
            return battle_id in self._ids

    def ids(self) -> set[int]:
        with self._lock:
            return set(self._ids)


class ArenaService:
    """Plain-Python arena API used by the UI, the CLI and tests alike.

    ``ratings`` is where the active pair sampler reads current ratings and per-pair battle counts (see
    `arena.sampling`). The studio passes its one leaderboard service's ``sampler_inputs``, so the sampler and the
    Leaderboard tab share one vote cache and one fit. Without a source every contestant counts as unrated with no
    battles: the active weights are all equal, so draws are uniform (stored with their exact probability). That is
    the right default for tests and scripts, and it keeps ``arena`` free of the ratings stack.
    """

    def __init__(
        self,
        db: Database,
        limits: ArenaLimits | None = None,
        rng: random.Random | None = None,
        policy: PairPolicy | None = None,
        ratings: RatingSource | None = None,
    ):
        self.db = db
        self.limits = limits or ArenaLimits()
        self.rng = rng or random.Random()
        self.policy = policy or PairPolicy()
        self.ratings = ratings or no_ratings
        # > 0: reuse the source's ratings this long even when votes arrived (busy arenas)
        self.ratings_ttl_s = 0.0
        self._ratings_cache: tuple[SamplerInputs, float] | None = None
        self._answering = _Answering()

    # -- starting --------------------------------------------------------------------------------------
    def start_battle(
        self,
        user_id: int | None = None,
        prompt_id: int | None = None,
        category: str | None = None,
        pair: tuple[int, int] | None = None,
        mode: str = "anonymous",
        include: list[int | str] | None = None,
        exclude: list[int | str] | None = None,
    ) -> BattleView:
        """Create a battle: a drawn pair (anonymous) or a chosen one (``pair``; named mode needs it).

        In named mode ``pair`` is (left, right) as the user picked them; otherwise left/right is a fair coin.
        """
        if mode not in MODES:
            raise BattleError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if mode == SELF_PLAY:
            raise BattleError("a self-play battle starts with start_self_play(contestant, temperatures)")
        if mode == "named" and pair is None:
            raise BattleError("named mode needs both contestants chosen")
        with self.db.session() as s:
            category = _category(s, prompt_id, category)
            draw = self._draw(s, include, exclude) if pair is None else _chosen(s, pair, mode, user_id)
            left_is_a = True if mode == "named" else self.rng.random() < 0.5
            b = _new_battle(draw, left_is_a, mode, user_id, prompt_id, category)
            touch(s, b)
            s.add(b)
            s.flush()
            return self._view(s, b)

    def start_self_play(
        self,
        contestant: int | str,
        temperatures: Sequence[float] | None = None,
        user_id: int | None = None,
        prompt_id: int | None = None,
        category: str | None = None,
    ) -> BattleView:
        """Create a self-play battle (`arena.self_play`): ``contestant`` (id or public name) on both sides, side A
        at the first temperature and side B at the second (default: its own and the farther of 0.3 and 1.0),
        with two different seeds. The screen sides are a fair coin, so the view does not say which is which."""
        with self.db.session() as s:
            category = _category(s, prompt_id, category)
            try:
                info = get_contestant(s, contestant)
            except RegistryError as exc:
                raise BattleError(f"self-play: {exc}") from exc
            draw = _chosen(s, (info.id, info.id), SELF_PLAY, user_id)
            if temperatures is None:
                temperatures = default_temperatures(info.sampling.get("temperature"))
            try:
                temps = check_temperatures(temperatures)
            except ValueError as exc:
                raise BattleError(f"self-play: {exc}") from exc
            b = _new_battle(draw, self.rng.random() < 0.5, SELF_PLAY, user_id, prompt_id, category)
            b.sampling_a, b.sampling_b = side_overrides(temps, self.rng)
            touch(s, b)
            s.add(b)
            s.flush()
            return self._view(s, b)

    def _draw(self, s: Any, include: list | None, exclude: list | None) -> Draw:
        contestants = list_contestants(s)
        try:
            ids = eligible(
                [(c.id, c.public_name) for c in contestants],
                self.policy.include if include is None else include,
                self.policy.exclude if exclude is None else exclude,
            )
            ratings, counts = self.sampler_inputs() if self.policy.sampler == "active" else no_ratings()
            return draw_pair(ids, self.rng, self.policy, ratings, counts)
        except SamplingError as exc:
            raise BattleError(str(exc)) from exc

    def sampler_inputs(self) -> SamplerInputs:
        """The ratings and per-pair battle counts the active sampler draws with now: the source's answer, reused
        for ``ratings_ttl_s`` seconds when that is set."""
        cached = self._ratings_cache
        if cached is not None and time.monotonic() - cached[1] < self.ratings_ttl_s:
            return cached[0]
        inputs = self.ratings()
        self._ratings_cache = (inputs, time.monotonic())
        return inputs

    # -- reading ---------------------------------------------------------------------------------------
    def _view(self, s: Any, b: Battle) -> BattleView:
        n_turns = s.scalar(select(func.count(Turn.id)).where(Turn.battle_id == b.id)) or 0
        voted = list(s.scalars(select(Vote.turn_idx).where(Vote.battle_id == b.id).order_by(Vote.turn_idx)))
        view = BattleView(b.id, n_turns, b.status, b.mode, b.category, voted, ended_reason=b.ended_reason)
        answers = s.execute(select(Turn.idx, Turn.answer_a, Turn.answer_b).where(Turn.battle_id == b.id))
        view.blank_turns = sorted(i for i, x, y in answers if not (x or "").strip() or not (y or "").strip())
        if b.mode in ("named", SELF_PLAY):
            a, bb = s.get_one(Contestant, b.a_id).public_name, s.get_one(Contestant, b.b_id).public_name
            view.left_name, view.right_name = (a, bb) if b.left_is_a else (bb, a)
        if b.mode == SELF_PLAY:
            t_a, t_b = _temperatures(b)
            view.temperatures = (min(t_a, t_b), max(t_a, t_b))
        return view

    def shown_answers(
        self, battle_id: int, turn_idx: int | None = None
    ) -> tuple[int, tuple[str, str]] | None:
        """Turn ``turn_idx`` (default: the latest) and its two answers as the browser was sent them (left, right;
        no names); None when the battle has no such turn. The page compares them with what its panes hold."""
        with self.db.session() as s:
            b = self._get(s, battle_id)
            q = select(Turn).where(Turn.battle_id == battle_id)
            q = q.order_by(Turn.idx.desc()) if turn_idx is None else q.where(Turn.idx == turn_idx)
            t = s.scalars(q.limit(1)).first()
            if t is None:
                return None
            a, bb = t.answer_a or "", t.answer_b or ""
            return t.idx, ((a, bb) if b.left_is_a else (bb, a))

    def battle_view(self, battle_id: int) -> BattleView:
        with self.db.session() as s:
            return self._view(s, self._get(s, battle_id))

    @staticmethod
    def _get(s: Any, battle_id: int) -> Battle:
        b = s.get(Battle, battle_id)
        if b is None:
            raise BattleError(f"battle {battle_id} does not exist")
        return b

    def _owner(self, battle_id: int) -> int | None:
        """The user who started the battle (None: the local operator)."""
        with self.db.session() as s:
            return self._get(s, battle_id).user_id

    def _load(self, battle_id: int) -> tuple[Battle, ContestantInfo, ContestantInfo, list[Turn]]:
        with self.db.session() as s:
            b = self._get(s, battle_id)
            a = to_info(s.get_one(Contestant, b.a_id))
            bb = to_info(s.get_one(Contestant, b.b_id))
            turns = list(s.scalars(select(Turn).where(Turn.battle_id == battle_id).order_by(Turn.idx)))
            s.expunge_all()
            return b, a, bb, turns

    # -- checks ----------------------------------------------------------------------------------------
    def check_prompt_text(self, user_msg: str) -> None:
        """Reject an empty or oversized prompt before anything is created."""
        if not isinstance(user_msg, str) or not user_msg.strip():
            raise BattleError("the prompt is empty: type a message or draw one from a prompt set")
        if len(user_msg) > self.limits.max_prompt_chars:
            raise BattleError(
                f"the prompt is {len(user_msg)} characters; the limit is {self.limits.max_prompt_chars}"
            )
        if "\x00" in user_msg:
            raise BattleError("the prompt contains a NUL character: send text, not binary data")
        try:
            user_msg.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BattleError(f"the prompt is not valid Unicode text (character {exc.start + 1})") from exc

    @staticmethod
    def _check_open(b: Battle) -> None:
        if b.status == "errored":
            raise BattleError(
                f"battle {b.id} stopped on an engine error and is not rated; start a new battle"
            )
        if b.status != "open":
            raise BattleError(f"{ended_message(b)}; start a new battle")

    def check_prompt(self, battle_id: int, user_msg: str) -> None:
        """Reject a prompt the battle cannot take (bad text, battle not open, too many turns, too long)."""
        self.check_prompt_text(user_msg)
        b, _, _, turns = self._load(battle_id)
        self._check_open(b)
        if len(turns) >= self.limits.max_turns:
            raise BattleError(f"this battle has reached the limit of {self.limits.max_turns} turns")
        size = len(user_msg) + sum(len(t.user_msg) + max(len(t.answer_a), len(t.answer_b)) for t in turns)
        if size > self.limits.max_conversation_chars:
            raise BattleError(
                f"the conversation would be {size} characters; the limit is "
                f"{self.limits.max_conversation_chars}: start a new battle"
            )

    def _touch(self, battle_id: int) -> None:
        """Record activity on an open battle (a turn begins): the idle end counts from here."""
        with self.db.session() as s:
            b = s.get(Battle, battle_id)
            if b is not None and b.status == "open":
                touch(s, b)

    def answering_ids(self) -> set[int]:
        """The battles with a turn being generated in this process now (the idle end skips them)."""
        return self._answering.ids()

    def is_answering(self, battle_id: int) -> bool:
        """True while a turn of this battle is being generated (votes, reveal and new turns wait for it)."""
        return battle_id in self._answering

    def check_turn_slot(self, user_id: int | None) -> None:
        """Refuse (``BattleError``) when ``user_id`` already has as many turns being answered as one user may
        (``ArenaLimits.turns_in_flight_per_user``): asked before a new battle is opened, so a refused Send leaves
        no empty battle. The claim when the turn starts is the check that holds."""
        per_user = self.limits.turns_in_flight_per_user
        if user_id is not None and per_user > 0 and self._answering.in_flight(user_id) >= per_user:
            raise BattleError(busy_message(per_user))

    def _not_busy(self, battle_id: int) -> None:
        if battle_id in self._answering:
            raise BattleError("both models are still answering; wait for both answers before voting")

    # -- turns -----------------------------------------------------------------------------------------
    def generate_turn(self, battle_id: int, user_msg: str) -> Iterator[TurnUpdate]:
        """Stream both answers at once (left/right as the user sees them); store the turn when both finish."""
        self.check_prompt(battle_id, user_msg)
        with self._answering.claim(battle_id, self._owner(battle_id), self.limits.turns_in_flight_per_user):
            self._touch(battle_id)
            b, ca, cb, turns = self._load(battle_id)
            yield from self._run_turn(b, ca, cb, turns, user_msg, len(turns), None)

    def regenerate(self, battle_id: int) -> Iterator[TurnUpdate]:
        """Re-run the last turn with the same two contestants; the replaced answers stay on the turn."""
        b, _, _, turns = self._load(battle_id)
        self._check_open(b)
        if not turns:
            raise BattleError("there is nothing to regenerate yet: send a prompt first")
        last = turns[-1]
        with self.db.session() as s:
            if s.scalar(select(Vote.id).where(Vote.battle_id == battle_id, Vote.turn_idx == last.idx)):
                raise BattleError(f"turn {last.idx + 1} already has a vote; send a new prompt instead")
        if len(last.replaced or []) >= self.limits.max_regenerations:
            raise BattleError(
                f"turn {last.idx + 1} was regenerated {self.limits.max_regenerations} times already"
            )
        with self._answering.claim(battle_id, b.user_id, self.limits.turns_in_flight_per_user):
            self._touch(battle_id)
            b, ca, cb, turns = self._load(battle_id)
            yield from self._run_turn(b, ca, cb, turns[:-1], last.user_msg, last.idx, last)

    def _run_turn(
        self,
        b: Battle,
        ca: ContestantInfo,
        cb: ContestantInfo,
        history: list[Turn],
        user_msg: str,
        idx: int,
        replacing: Turn | None,
    ) -> Iterator[TurnUpdate]:
        """Stream turn ``idx`` after ``history`` (`arena.streaming`), then store it or mark the battle errored.

        A self-play side answers with its override on top of the contestant's sampling, the seed moved on by
        the regenerations (`arena.self_play.effective_sampling`); other battles have no override. In anonymous
        battles both sides answer under one token cap (`ArenaLimits.shared_cap`); named mode and self-play keep
        each persona's own (the names are known there, and self-play has one persona on both sides)."""
        regens = 0 if replacing is None else len(replacing.replaced or []) + 1
        ca = replace(ca, sampling=effective_sampling(ca.sampling, b.sampling_a, regens))
        cb = replace(cb, sampling=effective_sampling(cb.sampling, b.sampling_b, regens))
        if b.mode == "anonymous":  # one cap for both sides: a persona's own length limit would name it
            cap = self.limits.shared_cap()
            ca = replace(ca, sampling={**ca.sampling, "max_tokens": cap})
            cb = replace(cb, sampling={**cb.sampling, "max_tokens": cap})
        sides = {"a": SideState(ca), "b": SideState(cb)}
        messages = {
            "a": messages_for(ca, [(t.user_msg, t.answer_a) for t in history], user_msg),
            "b": messages_for(cb, [(t.user_msg, t.answer_b) for t in history], user_msg),
        }
        lim = self.limits
        stream_limits = StreamLimits(
            lim.answer_timeout_s, lim.queue_timeout_s, lim.max_new_tokens, lim.strip_prefill
        )
        left, right = (sides["a"], sides["b"]) if b.left_is_a else (sides["b"], sides["a"])

        def view(done: bool = False, error: str | None = None) -> TurnUpdate:
            return TurnUpdate(
                left.text,
                right.text,
                done,
                error,
                idx if done and not error else None,
                left.waiting,
                right.waiting,
                left.error.public_message if left.error else None,
                right.error.public_message if right.error else None,
                replacing is not None,
                done and hit_length_limit(left, lim.max_new_tokens),
                done and hit_length_limit(right, lim.max_new_tokens),
            )

        with closing(stream_pair(sides, messages, stream_limits)) as stream:
            for _ in stream:
                yield view()
        if left.error or right.error:
            yield view(done=True, error=mark_errored(self.db, b.id, b.left_is_a, sides))
            return
        not_saved = store_turn(self.db, b.id, sides["a"], sides["b"], user_msg, idx, replacing)
        yield view(done=True, error=not_saved)

    # -- votes and the end of a battle -------------------------------------------------------------------
    def record_vote(
        self,
        battle_id: int,
        choice: str,
        turn_idx: int | None = None,
        user_id: int | None = None,
        reason: str | None = None,
        rubric: dict[str, dict[str, float]] | None = None,
    ) -> VoteReceipt:
        """Store a blind vote on one turn (default: the latest), in left/right terms; reveal nothing.

        ``rubric`` holds optional quick scores, ``{criterion: {"left": 1..5, "right": 1..5}}`` with criteria
        from ``QUICK_RUBRIC``; they are stored beside the vote in the same transaction.
        """
        if choice not in CHOICES:
            raise BattleError(f"unknown vote {choice!r}; expected one of {', '.join(CHOICES)}")
        scores = _check_rubric(rubric)
        self._not_busy(battle_id)
        with self.db.session() as s:
            b = self._get(s, battle_id)
            idx, leaked = _votable_turn(s, b, battle_id, turn_idx, user_id)
            touch(s, b)
            vote = Vote(
                battle_id=battle_id,
                turn_idx=idx,
                user_id=user_id,
                outcome=stored_from_choice(choice, b.left_is_a),
                revealed_before_vote=leaked,
                reason=reason,
                created_at=utcnow(),
            )
            s.add(vote)
            try:
                s.flush()
            except IntegrityError as exc:  # a concurrent vote on this turn won: the constraint keeps one
                raise BattleError(f"turn {idx + 1} already has a vote") from exc
            s.add_all(
                RubricScore(vote_id=vote.id, criterion=c, side=stored_from_choice(side, b.left_is_a), value=v)
                for c, side, v in scores
            )
            return VoteReceipt(battle_id, idx, choice, leaked, len(scores))

    def reveal(self, battle_id: int) -> Reveal:
        """End the battle and name both contestants (needs at least one vote; again later returns the same)."""
        self._not_busy(battle_id)
        with self.db.session() as s:
            b = self._get(s, battle_id)
            if b.status == "errored":
                raise BattleError(f"battle {battle_id} errored; it has nothing to reveal")
            if b.status == "abandoned":
                raise BattleError(f"battle {battle_id} ended without a vote; its models stay anonymous")
            votes = list(s.scalars(select(Vote).where(Vote.battle_id == battle_id).order_by(Vote.turn_idx)))
            if not votes and b.mode != "named":
                raise BattleError("vote on at least one turn before the reveal")
            close(s, b, "revealed")
            b.revealed_at = b.revealed_at or utcnow()
            turns = list(s.scalars(select(Turn).where(Turn.battle_id == battle_id).order_by(Turn.idx)))
            return _reveal(s, b, turns, votes)

    def vote(
        self,
        battle_id: int,
        choice: str,
        turn_idx: int | None = None,
        user_id: int | None = None,
        reason: str | None = None,
        rubric: dict[str, dict[str, float]] | None = None,
    ) -> Reveal:
        """Vote on a turn and reveal at once (the one-shot flow: one turn, one vote, done)."""
        self.record_vote(battle_id, choice, turn_idx, user_id, reason, rubric)
        return self.reveal(battle_id)

    def end_battle(self, battle_id: int, reason: str = "ended") -> BattleView:
        """Close a battle without revealing it: ``voted`` when it has votes (they count from now), else
        ``abandoned``; ``reason`` is stored (``ended``, or ``new_round`` when the user moved on). A battle that
        ended already keeps how it ended."""
        if reason not in UNREVEALED:
            raise BattleError(
                f"a battle ends without a reveal as one of {', '.join(UNREVEALED)}, not {reason!r}"
            )
        with self.db.session() as s:
            b = self._get(s, battle_id)
            close(s, b, reason)
            return self._view(s, b)

    def end_idle_battles(self, reason: str = "idle") -> list[int]:
        """End every open battle idle for ``limits.idle_minutes`` (`arena.battle_end.end_idle`), except those
        being answered in this process; returns their ids."""
        return end_idle(self.db, self.limits.idle_minutes, reason, self._answering.ids())

    def new_round(self, battle_id: int, user_id: int | None = None) -> BattleView:
        """End this battle (unrevealed) and start the next: anonymous draws a new pair, named keeps both,
        self-play keeps the contestant and temperatures (new seeds)."""
        with self.db.session() as s:
            b = self._get(s, battle_id)
            mode, pair = b.mode, ((b.a_id, b.b_id) if b.left_is_a else (b.b_id, b.a_id))
            temps = _temperatures(b) if mode == SELF_PLAY else None
        self.end_battle(battle_id, "new_round")
        if mode == SELF_PLAY:
            return self.start_self_play(pair[0], temps, user_id=user_id)
        if mode == "named":
            return self.start_battle(user_id=user_id, pair=pair, mode="named")
        return self.start_battle(user_id=user_id)


_HOW = {
    "revealed": "ended with its reveal",
    "new_round": "ended when a new round started",
    "idle": "ended after the idle timeout without activity",
    "sweep": "was ended at start-up after the idle timeout without activity",
    "ended": "was ended without a reveal",
}


def ended_message(b: Battle) -> str:
    """Why a battle takes no more turns or votes, in words (identity-free)."""
    return f"battle {b.id} {_HOW.get(b.ended_reason or '', 'has ended')}"


def _chosen(s: Any, pair: tuple[int, int], mode: str, user_id: int | None = None) -> Draw:
    """The battle's pair when the user chose it: two different contestants (one, in self-play) that
    `arena.lifecycle.may_play` lets this user play in this mode (anonymous: released only)."""
    a_id, b_id = pair
    if a_id == b_id and mode != SELF_PLAY:
        raise BattleError("a contestant cannot battle itself: choose two different models (or self-play)")
    if a_id != b_id and mode == SELF_PLAY:
        raise BattleError("self-play puts one contestant on both sides")
    for cid in dict.fromkeys(pair):
        refused = may_play(s, cid, mode, user_id)
        if refused:
            raise BattleError(refused)
    return Draw(a_id, b_id, None, mode if mode in ("named", SELF_PLAY) else "fixed")


def _temperatures(b: Battle) -> tuple[float, float]:
    """A self-play battle's temperatures, side A's first."""
    return float((b.sampling_a or {})["temperature"]), float((b.sampling_b or {})["temperature"])


def _category(s: Any, prompt_id: int | None, category: str | None) -> str | None:
    """The battle's category: the one given, else its prompt's; raises when the prompt does not exist."""
    if prompt_id is None:
        return category
    prompt = s.get(Prompt, prompt_id)
    if prompt is None:
        raise BattleError(f"prompt {prompt_id} does not exist")
    return category or prompt.category


def _new_battle(
    draw: Draw, left_is_a: bool, mode: str, user_id: int | None, prompt_id: int | None, category: str | None
) -> Battle:
    return Battle(
        a_id=draw.a_id,
        b_id=draw.b_id,
        left_is_a=left_is_a,
        sampling_prob=draw.probability,
        sampler=draw.sampler,
        mode=mode,
        user_id=user_id,
        prompt_id=prompt_id,
        category=category,
    )


def _check_rubric(rubric: dict[str, dict[str, float]] | None) -> list[tuple[str, str, float]]:
    out: list[tuple[str, str, float]] = []
    lo, hi = RUBRIC_RANGE
    for criterion, sides in (rubric or {}).items():
        if criterion not in QUICK_RUBRIC:
            raise BattleError(
                f"unknown rubric criterion {criterion!r}; expected one of {', '.join(QUICK_RUBRIC)}"
            )
        if not isinstance(sides, dict):
            raise BattleError(f"rubric {criterion!r} must map 'left'/'right' to a score")
        for side, value in sides.items():
            if value is None:
                continue
            if side not in SIDES:
                raise BattleError(f"rubric {criterion!r}: side must be 'left' or 'right', got {side!r}")
            try:
                v = float(value)
            except (TypeError, ValueError) as exc:
                raise BattleError(f"rubric {criterion!r} {side}: {value!r} is not a number") from exc
            if not lo <= v <= hi:
                raise BattleError(f"rubric {criterion!r} {side}: {v:g} is outside {lo}..{hi}")
            out.append((criterion, side, v))
    return out


def _votable_turn(
    s: Any, b: Battle, battle_id: int, turn_idx: int | None, user_id: int | None
) -> tuple[int, bool]:
    """The turn a vote goes to (default: the latest) and whether a leak was on screen; raises if it cannot take one."""
    if user_id is not None and b.user_id is not None and b.user_id != user_id:
        raise BattleError(f"battle {battle_id} belongs to another user")
    if b.status == "errored":
        raise BattleError(f"battle {battle_id} errored and cannot be voted on")
    if b.status != "open":
        raise BattleError(f"{ended_message(b)}; votes are closed (the votes it had are kept and count)")
    turns = list(s.scalars(select(Turn).where(Turn.battle_id == battle_id).order_by(Turn.idx)))
    if not turns:
        raise BattleError("there is nothing to vote on yet: send a prompt first")
    idx = turns[-1].idx if turn_idx is None else turn_idx
    if not 0 <= idx < len(turns):
        raise BattleError(f"battle {battle_id} has no turn {idx + 1}")
    if s.scalar(select(Vote.id).where(Vote.battle_id == battle_id, Vote.turn_idx == idx)) is not None:
        raise BattleError(f"turn {idx + 1} already has a vote")
    turn = turns[idx]
    if not (turn.answer_a or "").strip() or not (turn.answer_b or "").strip():
        # nothing to judge on one side: regenerating gives it another try, a new round another pair
        raise BattleError(
            f"turn {idx + 1} has an empty answer, so there is nothing to compare: regenerate it or start a "
            "new round"
        )
    # everything on screen when the vote was cast; in self-play the name is no secret (both sides are it)
    leaked = b.mode != SELF_PLAY and any(t.leak_a or t.leak_b for t in turns)
    return idx, leaked


def _reveal(s: Any, b: Battle, turns: list[Turn], votes: list[Vote]) -> Reveal:
    a = s.get_one(Contestant, b.a_id)
    bb = s.get_one(Contestant, b.b_id)
    by_turn = {v.turn_idx: v for v in votes}
    summaries = []
    for t in turns:
        sa = SideStats(t.tokens_a, t.latency_a, t.tps_a, t.wait_a)
        sb = SideStats(t.tokens_b, t.latency_b, t.tps_b, t.wait_b)
        v = by_turn.get(t.idx)
        summaries.append(
            TurnSummary(
                t.idx,
                None if v is None else choice_from_stored(v.outcome, b.left_is_a),
                sa if b.left_is_a else sb,
                sb if b.left_is_a else sa,
                len(t.replaced or []),
                bool(t.leak_a or t.leak_b),
            )
        )
    last = votes[-1] if votes else None
    left, right = (a, bb) if b.left_is_a else (bb, a)
    idx = last.turn_idx if last else (turns[-1].idx if turns else 0)
    ts = summaries[idx] if idx < len(summaries) else None
    return Reveal(
        b.id,
        idx,
        left.public_name,
        right.public_name,
        last.outcome if last else "",
        any(v.revealed_before_vote for v in votes),
        ts.left.as_dict() if ts else {},
        ts.right.as_dict() if ts else {},
        summaries,
        b.mode,
        b.sampling_a if b.left_is_a else b.sampling_b,
        b.sampling_b if b.left_is_a else b.sampling_a,
    )
