"""Text features of one answer, defined once: the counts and ``features()`` (length, markdown, emoji, the
sycophancy, hedging and refusal markers, degeneration, thinking aloud; ``textfeatures.vibes``), the tone toward the
user sentence by sentence (``textfeatures.tone``) and the primitives both of those read, an answer's prose and the
versioned marker phrase lists of ``data/vibe_markers.yaml`` (``textfeatures.text_parts``).

Every layer above that counts something in a text counts it here, so one answer gets the same numbers in the
checkpoint report, style and vibe control, vibe profiles, the verifiable evals' checkers, the AI judges' vibe
agreement and the GRPO rewards. Nothing here knows about battles, models, ratings or reports.

Imports no other package of the studio (third-party: yaml, regex and vaderSentiment).
"""
