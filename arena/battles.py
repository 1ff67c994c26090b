"""Battle lifecycle: draw a pair, stream both answers side by side, store the turn, take the vote, reveal.

The browser-facing views only ever carry "left"/"right" text; contestant identity stays here until a vote is
stored. A turn is written in one transaction once both answers are complete; an engine error marks the battle
``errored`` (never rated) and stores nothing else.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import select

from arena.engines.base import EngineError, GenerationStats, Sampling
from arena.leaks import find_leak
from arena.registry import ContestantInfo, engine_for, list_contestants, messages_for, to_info
from arena.sampling import uniform_pair
from db.models import Battle, Contestant, Turn, Vote, utcnow
from db.session import Database

OUTCOMES = ("a", "b", "tie", "both_good", "both_bad")
CHOICES = ("left", "right", "tie", "both_good", "both_bad")


class BattleError(ValueError):
    """A request the battle cannot take (empty prompt, too long, already voted...). Nothing was written."""


@dataclass
class ArenaLimits:
    max_prompt_chars: int = 4000
    max_turns: int = 8
    answer_timeout_s: float = 180.0
    max_new_tokens: int = 512  # a cap on every contestant's answer length


@dataclass
class BattleView:
    """What the browser may know about a battle before the vote."""

    battle_id: int
    n_turns: int = 0
    status: str = "open"


@dataclass
class TurnUpdate:
    left: str
    right: str
    done: bool = False
    error: str | None = None
    turn_idx: int | None = None


@dataclass
class Reveal:
    battle_id: int
    turn_idx: int
    left_name: str
    right_name: str
    outcome: str
    revealed_before_vote: bool
    left_stats: dict = field(default_factory=dict)
    right_stats: dict = field(default_factory=dict)


class ArenaService:
    """Plain-Python arena API used by the UI, the CLI and tests alike."""

    def __init__(self, db: Database, limits: ArenaLimits | None = None, rng: random.Random | None = None):
        self.db = db
        self.limits = limits or ArenaLimits()
        self.rng = rng or random.Random()

    # -- battles -----------------------------------------------------------------------------------------
    def start_battle(
        self,
        user_id: int | None = None,
        prompt_id: int | None = None,
        category: str | None = None,
        pair: tuple[int, int] | None = None,
        mode: str = "anonymous",
    ) -> BattleView:
        """Create a battle with a drawn (or, in named mode, chosen) pair and a random left/right."""
        with self.db.session() as s:
            if pair is None:
                ids = [c.id for c in list_contestants(s)]
                draw = uniform_pair(ids, self.rng)
                a_id, b_id, prob = draw.a_id, draw.b_id, draw.probability
            else:
                a_id, b_id = pair
                if a_id == b_id:
                    raise BattleError("a contestant cannot battle itself")
                prob = None
            b = Battle(
                a_id=a_id,
                b_id=b_id,
                left_is_a=self.rng.random() < 0.5,
                sampling_prob=prob,
                mode=mode,
                user_id=user_id,
                prompt_id=prompt_id,
                category=category,
            )
            s.add(b)
            s.flush()
            return BattleView(b.id)

    def _load(self, battle_id: int) -> tuple[Battle, ContestantInfo, ContestantInfo, list[Turn]]:
        with self.db.session() as s:
            b = s.get(Battle, battle_id)
            if b is None:
                raise BattleError(f"battle {battle_id} does not exist")
            a = to_info(s.get_one(Contestant, b.a_id))
            bb = to_info(s.get_one(Contestant, b.b_id))
            turns = list(s.scalars(select(Turn).where(Turn.battle_id == battle_id).order_by(Turn.idx)))
            s.expunge_all()
            return b, a, bb, turns

    def check_prompt_text(self, user_msg: str) -> None:
        """Reject an empty or oversized prompt before anything is created."""
        if not user_msg or not user_msg.strip():
            raise BattleError("the prompt is empty: type a message or draw one from a prompt set")
        if len(user_msg) > self.limits.max_prompt_chars:
            raise BattleError(
                f"the prompt is {len(user_msg)} characters; the limit is {self.limits.max_prompt_chars}"
            )

    def check_prompt(self, battle_id: int, user_msg: str) -> None:
        """Reject a prompt the battle cannot take (bad text, battle not open, too many turns)."""
        self.check_prompt_text(user_msg)
        b, _, _, turns = self._load(battle_id)
        if b.status != "open":
            raise BattleError(f"battle {battle_id} is {b.status}; start a new battle")
        if len(turns) >= self.limits.max_turns:
            raise BattleError(f"this battle has reached the limit of {self.limits.max_turns} turns")

    def generate_turn(self, battle_id: int, user_msg: str) -> Iterator[TurnUpdate]:
        """Stream both answers at once (left/right as the user sees them); store the turn when both finish."""
        self.check_prompt(battle_id, user_msg)
        b, ca, cb, turns = self._load(battle_id)
        hist_a = [(t.user_msg, t.answer_a) for t in turns]
        hist_b = [(t.user_msg, t.answer_b) for t in turns]
        events: queue.Queue[tuple[str, str | None, str | None]] = queue.Queue()
        stats = {"a": GenerationStats(), "b": GenerationStats()}

        def run(side: str, info: ContestantInfo, history: list[tuple[str, str]]) -> None:
            try:
                engine = engine_for(info)
                sampling = Sampling.from_dict(info.sampling)
                sampling.max_tokens = min(sampling.max_tokens, self.limits.max_new_tokens)
                stream = engine.stream_chat(messages_for(info, history, user_msg), sampling, info.prefill)
                for delta in stream:
                    events.put((side, delta, None))
                stats[side] = stream.stats
                events.put((side, None, None))
            except Exception as exc:  # any engine failure ends the battle as errored
                msg = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
                events.put((side, None, msg))

        for side, info, hist in (("a", ca, hist_a), ("b", cb, hist_b)):
            threading.Thread(target=run, args=(side, info, hist), daemon=True).start()

        text = {"a": "", "b": ""}
        finished: set[str] = set()
        errors: dict[str, str] = {}
        deadline = time.monotonic() + self.limits.answer_timeout_s

        def view(done: bool = False, error: str | None = None, idx: int | None = None) -> TurnUpdate:
            left, right = (text["a"], text["b"]) if b.left_is_a else (text["b"], text["a"])
            return TurnUpdate(left, right, done, error, idx)

        while len(finished) < 2:
            try:
                side, delta, err = events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                errors["timeout"] = f"no complete answer within {self.limits.answer_timeout_s:.0f} s"
                break
            if err is not None:
                errors[side] = err
                finished.add(side)
            elif delta is None:
                finished.add(side)
            else:
                text[side] += delta
                yield view()
        if errors:
            message = "; ".join(
                f"{'left' if (k == 'a') == b.left_is_a else 'right'} model: {v}" if k in "ab" else v
                for k, v in errors.items()
            )
            self._mark_errored(battle_id, message)
            yield view(done=True, error=f"The battle stopped and will not be rated: {message}")
            return
        idx = len(turns)
        with self.db.session() as s:
            s.add(
                Turn(
                    battle_id=battle_id,
                    idx=idx,
                    user_msg=user_msg,
                    answer_a=text["a"],
                    answer_b=text["b"],
                    tokens_a=stats["a"].tokens,
                    tokens_b=stats["b"].tokens,
                    latency_a=stats["a"].ttft,
                    latency_b=stats["b"].ttft,
                    tps_a=stats["a"].tokens_per_s,
                    tps_b=stats["b"].tokens_per_s,
                    leak_a=find_leak(text["a"], ca.aliases) is not None,
                    leak_b=find_leak(text["b"], cb.aliases) is not None,
                )
            )
        yield view(done=True, idx=idx)

    def _mark_errored(self, battle_id: int, message: str) -> None:
        with self.db.session() as s:
            b = s.get_one(Battle, battle_id)
            b.status = "errored"
            b.error = message

    # -- votes -------------------------------------------------------------------------------------------
    def vote(
        self,
        battle_id: int,
        choice: str,
        turn_idx: int | None = None,
        user_id: int | None = None,
        reason: str | None = None,
        finish: bool = True,
    ) -> Reveal:
        """Store a vote on a turn (default: the latest) in left/right terms; reveal the contestants."""
        if choice not in CHOICES:
            raise BattleError(f"unknown vote {choice!r}; expected one of {', '.join(CHOICES)}")
        with self.db.session() as s:
            b = s.get(Battle, battle_id)
            if b is None:
                raise BattleError(f"battle {battle_id} does not exist")
            if b.status == "errored":
                raise BattleError(f"battle {battle_id} errored and cannot be voted on")
            turns = list(s.scalars(select(Turn).where(Turn.battle_id == battle_id).order_by(Turn.idx)))
            if not turns:
                raise BattleError("there is nothing to vote on yet: send a prompt first")
            idx = turns[-1].idx if turn_idx is None else turn_idx
            if not 0 <= idx < len(turns):
                raise BattleError(f"battle {battle_id} has no turn {idx}")
            if (
                b.status == "voted"
                or s.scalar(select(Vote.id).where(Vote.battle_id == battle_id, Vote.turn_idx == idx))
                is not None
            ):
                raise BattleError(f"battle {battle_id} turn {idx} already has a vote; start a new battle")
            outcome = {"left": "a" if b.left_is_a else "b", "right": "b" if b.left_is_a else "a"}.get(
                choice, choice
            )
            t = turns[idx]
            leaked = any(x.leak_a or x.leak_b for x in turns[: idx + 1])
            s.add(
                Vote(
                    battle_id=battle_id,
                    turn_idx=idx,
                    user_id=user_id,
                    outcome=outcome,
                    revealed_before_vote=leaked,
                    reason=reason,
                    created_at=utcnow(),
                )
            )
            if finish:
                b.status = "voted"
            a = s.get_one(Contestant, b.a_id)
            bb = s.get_one(Contestant, b.b_id)
            sa = {"tokens": t.tokens_a, "ttft_s": t.latency_a, "tokens_per_s": t.tps_a}
            sb = {"tokens": t.tokens_b, "ttft_s": t.latency_b, "tokens_per_s": t.tps_b}
            left, right = ((a, sa), (bb, sb)) if b.left_is_a else ((bb, sb), (a, sa))
            return Reveal(
                battle_id, idx, left[0].public_name, right[0].public_name, outcome, leaked, left[1], right[1]
            )
