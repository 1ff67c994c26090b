"""Text features of one answer, defined once: the counts and ``features()``, the tone toward the user, and
the primitives both read.

- ``textfeatures.vibes``: the counts and ``features()``. They cover length, markdown, emoji, the
  sycophancy, hedging and refusal markers, degeneration, and thinking aloud.
- ``textfeatures.tone``: the tone toward the user, sentence by sentence.
- ``textfeatures.text_parts``: the primitives both of those read. They are an answer's prose and the
  versioned marker phrase lists of ``data/vibe_markers.yaml``.

Every layer above that counts something in a text counts it here. So one answer gets the same numbers
everywhere: the checkpoint report, style and vibe control, vibe profiles, the verifiable evals' checkers,
the AI judges' vibe agreement and the GRPO rewards. Nothing here knows about battles, models, ratings or
reports.

Imports no other package of the studio (third-party: yaml, regex and vaderSentiment).
"""
