"""Where each contestant stands. It holds:
- votes read out as battle records, and the ratings maths;
- the leaderboard and the vote cache behind it;
- the verifiable evals, sycophancy probes, families and judge votes;
- the Goldilocks board (rating x correctness x cost);
- the decision card and the annotator checks;
- the track record: a predicted win rate against the parent, scored on the votes after it.

Imports common, textfeatures, db, accounts and arena (the registry and engines). Everything here returns
plain data; no UI code.
"""
