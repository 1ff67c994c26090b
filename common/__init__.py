"""Shared helpers below every other layer: the one reader for untrusted files, the vote-outcome vocabulary, the
settings read from the environment, how processes set their thread counts, names and paths kept under the data
home, and file locks that hold across processes. Imports no other package of the studio."""
