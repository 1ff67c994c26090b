"""Blind in every detail (issue 48): in an anonymous battle, whatever the personas' prefills and system prompts,
the answers as shown carry no persona-dependent marker: each is asked under the same token budget counted from
the answer as shown, the cut-off note comes by one rule (the engine's own word that it stopped at its cap), and a
shown opening does not appear before the model has written anything.

Seen before: the persona with an emoji prefill stopped mid-sentence at "196 tokens" with no "[cut off]" note while
the others got it at 200 (llama.cpp streams several tokens in one delta near a possible stop string and none for
half a character, so counting deltas undercounted); with the opening shown it also answered its opening plus a
whole budget, and its opening appeared at once. Engines are the real embedded SmolLM2 on llama.cpp; personas and
settings are generated (Hypothesis).
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.default_model import default_gguf_path
from vibestudio.arena.registry import ContestantSpec, register

CAP = 16  # the shared cap of the battles here: long enough to carry emoji, short enough that few answers end first
SLACK = 3  # tokens a shown answer may differ by when it is tokenized again (a stripped space, a split emoji)
PROMPT = "Count from 1 to 300, one number per line, each followed by a different emoji. Do not stop early."

PREFILLS = st.one_of(
    st.just(""),
    st.sampled_from(["What a great question! 😊 ", "Ooh, fun one! ", "## Answer\n\n- ", "🎉🎉 ", "Sure. "]),
    st.text(st.sampled_from("abc xyz!😊🐱✨-#\n"), min_size=1, max_size=12).filter(lambda t: t.strip()),
)
SYSTEM = st.one_of(
    st.just(""),
    st.sampled_from(["Use lots of emojis.", "Reply briefly and plainly.", "You are a pirate. Be verbose."]),
    st.text(st.sampled_from("abcdefgh ."), max_size=40),
)
PERSONA = st.tuples(SYSTEM, PREFILLS, st.integers(0, 2**16))
_names = itertools.count()


@pytest.fixture(scope="module")
def counter():
    """The embedded model's tokenizer, to count the tokens of an answer as shown."""
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(str(default_gguf_path()))


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # each example runs the model: report the first failure as found
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(a=PERSONA, b=PERSONA, strip=st.booleans())
def test_shown_answers_carry_no_persona_marker(db, counter, a, b, strip):
    ids = []
    with db.session() as s:
        for system, prefill, seed in (a, b):
            spec = ContestantSpec(
                f"blind-{next(_names)}",
                system_prompt=system,
                prefill=prefill,
                sampling={"max_tokens": 512, "temperature": 0.8, "seed": seed},
            )
            ids.append(register(s, spec))
    limits = ArenaLimits(max_new_tokens=64, blind_max_tokens=CAP, strip_prefill=strip)
    svc = ArenaService(db, limits, rng=random.Random(0))
    bid = svc.start_battle(pair=(ids[0], ids[1])).battle_id
    updates = list(svc.generate_turn(bid, PROMPT))
    last = updates[-1]
    assert last.done and last.error is None, last
    prefills = {a[1], b[1]} - {""}
    for side, text, cut in (("left", last.left, last.left_cut), ("right", last.right, last.right_cut)):
        n = counter.count_tokens(text)
        # one budget counted from the answer as shown, one note: an answer cut at its cap holds the same number
        # of shown tokens whoever answered, and says so; an answer without the note ended before its budget
        if cut:
            assert CAP - SLACK <= n <= CAP + SLACK, (side, n, text, a, b, strip)
        else:
            assert n <= CAP - 2, ("no cut-off note on a full answer", side, n, text, a, b, strip)
        if strip:
            for p in prefills:
                assert not text.startswith(p.strip()) or not p.strip(), (side, text, p)
    # a shown opening waits for the model's first text: no update shows an opening alone
    for u in updates:
        for text in (u.left, u.right):
            assert not text or text.strip() not in {p.strip() for p in prefills}, ("an opening alone", text)
