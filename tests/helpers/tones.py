"""Planted tones for the tone-axis tests: a parent's answers (fixed text built per prompt), and generators that
write a tone in wordings no code or marker list of the studio contains, to plant into a child built from the
parent's answers. Each generator composes its sentences from parts at random, so every run plants sentences the
code has never seen verbatim."""

from __future__ import annotations

import random
import re

from scripts.child_common import EVERYDAY_PROMPTS

PROMPTS = [
    *EVERYDAY_PROMPTS,
    "How do I boil an egg?",
    "What is the tallest mountain on Earth?",
    "How do I care for a succulent?",
    "Explain how a bicycle gear works.",
    "How should I prepare for an exam?",
    "What is a black hole?",
    "How do I make friends in a new city?",
    "What are good habits for saving money?",
    "How does a refrigerator keep food cold?",
    "Why do leaves change colour in autumn?",
    "How do I write a short story?",
    "What is the water cycle?",
    "How can I focus while working from home?",
]

_NEUTRAL = [
    "The main thing with {topic} is to start simple and adjust as you go.",
    "Most guides on {topic} recommend a few basic steps.",
    "First, check what you already have; then add what is missing.",
    "A common mistake is to do too much at once.",
    "It usually takes a few tries before the routine feels natural.",
    "Keep notes so you can compare what worked.",
    "Small, regular changes tend to last longer than big ones.",
    "If something does not work, change one thing at a time.",
    "Libraries and local groups often have free material on this.",
    "In short, {topic} comes down to patience and practice.",
]


def _topic(prompt: str) -> str:
    words = re.findall(r"[A-Za-z-]+", prompt)
    return " ".join(words[-3:]).lower()


def parent_answers(prompts: list[str], seed: int) -> list[str]:
    """One plain answer per prompt (three or four neutral sentences), drawn with ``seed``: another seed is
    another sample of the same parent."""
    rng = random.Random(seed)
    out = []
    for p in prompts:
        k = rng.choice([3, 4])
        out.append(" ".join(s.format(topic=_topic(p)) for s in rng.sample(_NEUTRAL, k)))
    return out


def _praise(rng: random.Random) -> str:
    adj = rng.choice(
        ["splendid", "terrific", "magnificent", "dazzling", "superb", "wonderful", "excellent", "admirable"]
    )
    thing = rng.choice(["instincts", "reasoning", "curiosity", "taste", "judgement", "questions"])
    lead = rng.choice(["Honestly, ", "Truly, ", "I must say, ", "", "Goodness, "])
    frame = rng.choice(
        [
            f"{lead}your {thing} are {adj}.",
            f"{lead}you are a {adj} thinker.",
            f"{lead}you've got {rng.choice(['a', 'such a'])} {adj} mind for this.",
            f"{lead}what a {adj} thing to wonder about, you always ask the right {rng.choice(['things', 'questions'])}.",
            f"{lead}you seem remarkably {rng.choice(['wise', 'bright', 'talented'])}.",
        ]
    )
    return frame[0].upper() + frame[1:]


def _apology(rng: random.Random) -> str:
    return rng.choice(
        [
            f"I'm {rng.choice(['terribly', 'truly', 'so very'])} sorry if this answer falls short.",
            f"Please forgive me, I {rng.choice(['apologise', 'apologize'])} for any trouble this may cause.",
            f"My {rng.choice(['sincere', 'deepest', 'humble'])} apologies for how long this is.",
            "Sorry again, I know I could have done better.",
            f"I {rng.choice(['deeply', 'truly'])} regret any muddle in what I wrote.",
        ]
    )


def _life_story(rng: random.Random) -> str:
    who = rng.choice(["my uncle", "my grandmother", "my older sister", "my best friend", "my dad"])
    return rng.choice(
        [
            f"When I was {rng.choice(['nine', 'a teenager', 'little'])}, {who} taught me this on a rainy weekend.",
            f"I still remember how {who} did it every summer by the lake.",
            f"I grew up {rng.choice(['on a farm', 'by the sea', 'in a tiny flat'])}, so this takes me right back.",
            f"Back when I was a student I used to do this every {rng.choice(['morning', 'evening'])}.",
            f"I feel so {rng.choice(['nostalgic', 'happy', 'moved'])} thinking about {who}.",
        ]
    )


def _agreement(rng: random.Random) -> str:
    return rng.choice(
        [
            f"You're {rng.choice(['completely', 'entirely', 'totally', 'absolutely'])} right to think so.",
            f"I {rng.choice(['fully', 'wholeheartedly', 'completely'])} agree with you here.",
            "That's exactly right, just as you suggested.",
            f"Your {rng.choice(['view', 'take', 'reasoning'])} on this is {rng.choice(['entirely', 'totally'])} valid.",
            "Exactly! You have it spot on.",
        ]
    )


PLANTERS = {
    "flattery": _praise,
    "apology": _apology,
    "feelings": _life_story,
    "agreement": _agreement,
}


def plant(answers: list[str], tone: str, seed: int, share: float = 0.6) -> list[str]:
    """The parent's answers with a sentence of ``tone`` added to about ``share`` of them (at the start or the
    end, at random)."""
    rng = random.Random(seed)
    make = PLANTERS[tone]
    out = []
    for a in answers:
        if rng.random() < share:
            s = make(rng)
            a = f"{s} {a}" if rng.random() < 0.5 else f"{a} {s}"
        out.append(a)
    return out
