"""Where each contestant stands: votes read out as battle records, the leaderboard and the vote cache behind it,
the verifiable evals, the Goldilocks board (rating x correctness x cost) and the annotator checks.

Imports db, accounts and arena (ratings, registry, engines). Everything here returns plain data; no UI code.
"""
