"""How the studio's processes ask OpenMP's idle threads to wait.

It imports nothing beyond ``os``. So the command line can call it first thing without slowing
``vibestudio --help``.
"""

from __future__ import annotations

import os


def sleeping_thread_waits() -> None:
    """Idle OpenMP threads sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``), unless the variable is set.

    torch (its CPU build) and llama.cpp run on GNU OpenMP, whose idle threads spin for a while before they
    sleep. The studio's processes share the cores (the web app answering battles, a training job, the post-job
    report, the browser), so a spinning thread takes the core that the thread with the work needs. Measured on
    2 cores with one core busy elsewhere: the same batched generation took 48-55 s with spinning waits and 2-6 s
    without (docs/training.md). Call it before torch or llama_cpp is imported: OpenMP reads the variable once, when
    it loads. ``OMP_WAIT_POLICY=ACTIVE`` in the environment keeps spinning.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
