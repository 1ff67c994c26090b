"""The app's watch over its Ray jobs: reconcile every heartbeat while ``VIBESTUDIO_JOBS=ray``.

With Ray, no job process of the studio's own starts the next job or notices a lost one. This thread does.
It hands queued jobs to Ray. It ends rows whose Ray job ended or whose heartbeat stopped
(``runner.reconcile``). It decides nothing itself: Ray places jobs, and the rows tell what happened.
Several app replicas may each run one; every change it makes is conditional on the row.
"""

from __future__ import annotations

import logging
import threading

from vibestudio.common.settings import get_settings
from vibestudio.db.session import Database
from vibestudio.training.jobs import runner

log = logging.getLogger(__name__)


class RayWatch:
    """A daemon thread that calls ``runner.reconcile`` every ``interval`` seconds until ``close``."""

    def __init__(self, db: Database, interval: float | None = None) -> None:
        self.db = db
        self.interval = interval or get_settings().heartbeat_s
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ray-jobs-watch", daemon=True)

    def start(self) -> RayWatch:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                runner.reconcile(self.db)
            except Exception as exc:  # the database or the cluster is away: the next look tries again
                log.warning("reconciling the Ray jobs failed: %s", exc)


def watch(db: Database) -> RayWatch | None:
    """Start the watch when jobs go to Ray (``VIBESTUDIO_JOBS=ray``); None otherwise."""
    if get_settings().jobs != "ray":
        return None
    return RayWatch(db).start()
