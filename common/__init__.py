"""Shared helpers below every other layer. It holds:
- the one reader for untrusted files, and the vote-outcome vocabulary;
- the settings read from the environment, and thread counts;
- names and paths kept under the data home, and file locks;
- whether a process is alive (``processes``);
- the statistics several layers share (``stats``: paired changes, the one Wilson interval).

The file locks and the thread counts hold for every process of the studio. Imports no other package of the
studio.
"""
