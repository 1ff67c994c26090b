"""Where each contestant stands: votes read out as battle records, the ratings maths, the leaderboard and the
vote cache behind it, the verifiable evals, sycophancy probes, families, judge votes, the Goldilocks board
(rating x correctness x cost), the decision card and the annotator checks.

Imports common, textfeatures, db, accounts and arena (the registry and engines). Everything here returns
plain data; no UI code.
"""
