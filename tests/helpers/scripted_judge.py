"""A scripted OpenAI-compatible server with two answering models and judges whose habits are known, for the
judge-described differences (``training.report.vibecheck``) through the real HTTP engine.

Answering models (the model name picks one): ``plain`` answers every question with a plain sentence built from
its words; ``cheery`` answers the same and signs off with emoji; ``flatterer`` answers the same and praises the
user ("You're so clever to ask! Your curiosity is wonderful.").

Judges read what they are sent, as a real judge would: the answers inside the proposal and validation prompts.

- ``honest-judge``: proposes "uses emoji" (worded "Uses emojis." in later batches) when Model 1's and Model 2's
  answers differ in emoji, "compliments the user" when they differ in the word "clever", and always "mentions
  the weather" (which no answer does); validates by counting emoji,
  the word "weather", or words (for "concise"), in the two answers it is shown; calls a head-to-head a tie.
- ``always-a-judge``: proposes like the honest one, and answers "A" to every comparison (a pure position bias).
- ``garbage-judge``: answers prose to everything (no ``AXIS:`` line, no verdict).
- ``blind-judge``: proposes ``AXIS: none`` whatever it is shown; calls a head-to-head a tie.
- ``refusing-judge``: proposes like the honest one, refuses every comparison.
"""

from __future__ import annotations

import re
from collections import Counter

from tests.helpers.scripted_chat import ScriptedServer
from vibestudio.textfeatures.vibes import emoji_list

_BLOCK = re.compile(r"\[Model 1\]\n(.*?)\n\[Model 2\]\n(.*?)(?=\n\n\[Question|\n\nName up to)", re.S)
_ANSWER = re.compile(r"\[The Start of Answer ([AB])\]\n(.*?)\n\[The End of Answer \1\]", re.S)
_PROPERTY = re.compile(r"^Property: (.+)$", re.M)
GARBAGE = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"


def emoji(text: str) -> int:
    return len(emoji_list(text))


def _measure(axis: str, text: str) -> float | None:
    axis = axis.lower()
    if "emoji" in axis:
        return emoji(text)
    if "compliment" in axis:
        return text.lower().count("clever")
    if "weather" in axis:
        return text.lower().count("weather")
    if "concise" in axis:
        return -len(text.split())
    return None


class ScriptedJudge(ScriptedServer):
    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.proposals = 0
        self.emoji_first: list[
            bool
        ] = []  # per proposal: Model 1's answers had the emoji (the child came first)
        super().__init__()

    def count(self, model: str) -> None:
        self.requests[model] += 1

    def reply(self, model: str, messages: list[dict]) -> str:
        user = next(m["content"] for m in messages if m["role"] == "user")
        if model in ("plain", "cheery", "flatterer"):
            words = re.findall(r"[A-Za-z]+", user)[:4]
            answer = f"About {' '.join(words).lower()}: the short answer is that it depends on the details."
            if model == "flatterer":
                return "You're so clever to ask! " + answer + " Your curiosity is wonderful."
            return answer + (" Have fun! 😊🎉" if model == "cheery" else "")
        if model == "garbage-judge":
            return GARBAGE
        if "AXIS:" in user and "[Model 1]" in user:
            return "AXIS: none" if model == "blind-judge" else self._propose(user)
        if "Property: " in user:
            return self._validate(model, user)
        return "C]]"  # a head-to-head ("Which answer is better?"): a tie

    def _propose(self, user: str) -> str:
        self.proposals += 1
        blocks = _BLOCK.findall(user)
        self.emoji_first.append(any(emoji(a) > emoji(b) for a, b in blocks))
        lines = []
        if any(emoji(a) != emoji(b) for a, b in blocks):
            lines.append("AXIS: uses emoji" if self.proposals == 1 else "AXIS: Uses emojis.")
        if any(a.count("clever") != b.count("clever") for a, b in blocks):
            lines.append("AXIS: compliments the user")
        lines.append("AXIS: mentions the weather")
        return "Here is what differs:\n" + "\n".join(f"{i + 1}. {x}" for i, x in enumerate(lines))

    def _validate(self, model: str, user: str) -> str:
        if model == "always-a-judge":
            return "A]]"
        if model == "refusing-judge":
            return "I'm sorry, but I can't compare these answers."
        answers = dict(_ANSWER.findall(user))
        axis = _PROPERTY.search(user).group(1)
        a, b = _measure(axis, answers["A"]), _measure(axis, answers["B"])
        if a is None or b is None or a == b:
            return "C]]"
        return "A]]" if a > b else "B]]"

    def add(self, db, *names: str, parent: int | None = None, model: str | None = None) -> int:
        """Register contestants served here (model = the name unless ``model``); returns the last one's id."""
        from vibestudio.arena.registry import ContestantSpec, register

        with db.session() as s:
            for name in names:
                cid = register(
                    s,
                    ContestantSpec(
                        name,
                        engine="openai",
                        model_ref=model or name,
                        engine_config=self.config(),
                        parent_id=parent,
                    ),
                )
        return cid
