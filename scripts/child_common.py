"""What the child scripts (``vibe_child.py``, ``flattery_child.py``) share: the everyday prompts they play and
train on (none is an MT-Bench question, so every held-out prompt of a checkpoint report stays available; the
tone-axis tests plant tones into answers to them too), a fresh studio home set up for a run, and the wait for a
training job with its timing lines.

The scripts import it as ``scripts.child_common`` (they put their checkout on the path). It imports the studio only
inside its functions.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

EVERYDAY_PROMPTS = [
    "How do I keep basil alive on a windowsill?",
    "What should I pack for a weekend hike?",
    "Explain what a mortgage is.",
    "How can I get better at remembering names?",
    "What is a good way to start learning the guitar?",
    "How do I make a cup of pour-over coffee?",
    "Why is the sky blue?",
    "Give me tips for a job interview.",
    "How do vaccines work?",
    "What is the difference between weather and climate?",
    "How do I clean a cast iron pan?",
    "Suggest a name for a small bakery.",
    "How can I sleep better?",
    "What is compound interest?",
    "How do I write a thank-you note?",
    "Why do cats purr?",
    "How do I change a flat bicycle tyre?",
    "What are some easy vegetables to grow?",
    "Explain photosynthesis simply.",
    "How do I politely decline an invitation?",
    "What is a healthy breakfast?",
    "How do airplanes stay in the air?",
    "Give me a short plan for learning Spanish.",
    "How do I budget my monthly income?",
    "What causes rainbows?",
    "How do I start running as a beginner?",
    "What is recycling and why does it matter?",
]

# the child scripts' prompts: the everyday ones and more of the same kind
CHILD_PROMPTS = [
    *EVERYDAY_PROMPTS,
    "How can I focus better when studying?",
    "What is the tallest mountain in the world?",
    "How do I boil an egg?",
    "Explain what a computer virus is.",
    "How can I make new friends in a new city?",
    "What are good habits for a tidy home?",
    "How does a refrigerator keep food cold?",
    "What should I know before adopting a dog?",
    "How do I write a good email subject line?",
    "Why do leaves change colour in autumn?",
    "How do I take care of a succulent?",
    "What is the water cycle?",
    "How can I reduce stress at work?",
    "Explain what an atom is.",
    "How do I make a simple tomato sauce?",
    "What is a good stretching routine?",
    "How do solar panels work?",
    "What are tips for saving money on groceries?",
    "How do I remove a coffee stain?",
    "What makes a good presentation?",
    "How do bees make honey?",
    "How do I learn to touch type?",
    "What is the moon made of?",
    "How do I prepare for a long flight?",
    "Why do we have seasons?",
    "How can I drink more water each day?",
    "What is a haiku? Write one.",
    "How do I keep my phone battery healthy?",
    "What are some fun rainy day activities?",
    "How do volcanoes erupt?",
    "How do I choose a good book to read?",
    "What is electricity?",
    "How do I wash a wool sweater?",
]


def fresh_studio(home: Path | None, prefix: str):  # type: ignore[no-untyped-def]
    """The studio at ``home`` (default: a new temp dir named ``prefix...``) on its own SQLite database, migrated,
    with the default personas and MT-Bench in place; returns ``(home, db)``."""
    home = home or Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["VIBESTUDIO_HOME"] = str(home)
    os.environ.pop("VIBESTUDIO_DATABASE_URL", None)

    from vibestudio.arena.prompts import ensure_mt_bench
    from vibestudio.arena.registry import ensure_defaults
    from vibestudio.db.session import Database

    print(f"studio home: {home}", flush=True)
    db = Database()
    db.migrate()
    with db.session() as s:
        ensure_defaults(s)
        ensure_mt_bench(s)
    return home, db


def wait_for_job(db, job: int, since: float) -> Any:  # type: ignore[no-untyped-def]
    """Wait for training job ``job`` (up to six hours) and print how it ended, in seconds since ``since``
    (``time.monotonic()``); the job's view, or None (its log tail printed) unless it succeeded and published a
    contestant."""
    from vibestudio.training.jobs.runner import wait

    view = wait(db, job, timeout=6 * 3600, poll=5.0)
    print(f"job {job}: {view.status} in {time.monotonic() - since:.0f} s; error: {view.error}", flush=True)
    if view.status != "succeeded" or not view.contestant_id:
        print(view.log_tail)
        return None
    return view


def print_step_seconds(metrics: dict[str, Any]) -> None:
    """The median seconds per training step of a job's metrics (nothing when it logged none)."""
    steps = metrics.get("step_seconds") or []
    if steps:
        print(f"seconds per step: median {sorted(x for _, x in steps)[len(steps) // 2]:.1f}", flush=True)
