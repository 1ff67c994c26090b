"""Real Chromium: the Train tab's job poll and the Leaderboard's refresh run only while their tab is open, and a
tab opened the moment the page has loaded starts its timer (the first tab's own select event, fired as the page
mounts, once stopped the Train poll a quick click had just started)."""

from __future__ import annotations

import pytest

from tests.helpers.browser import STEP_MS, EventTrail

pytestmark = pytest.mark.e2e

TRAIN_TICK = ".tick->train-jobs"
BOARD_TICK = ".tick->leaderboard-summary"


def _wait_ticks(page, trail: EventTrail, name: str, n: int, after: float) -> None:
    """Pump the page's events until ``n`` ticks of ``name`` were sent after ``after``; fail with the trail."""
    waited = 0
    while trail.count(name, after) < n:
        if waited > STEP_MS:
            raise AssertionError(f"{n} ticks of {name} never came after {after} s\n{trail}")
        page.wait_for_timeout(500)
        waited += 500


def test_polls_follow_the_open_tab(studio_server, browser):
    page = browser.new_page()
    trail = EventTrail(page, studio_server)
    page.goto(studio_server)
    # At once: the page's own first tab event is still in flight.
    page.get_by_role("tab", name="Train").click()
    _wait_ticks(page, trail, TRAIN_TICK, 2, 0.0)
    assert trail.count(BOARD_TICK) == 0, trail

    # Leaving the tab stops the poll: at most one tick already on its way, none over the next three periods.
    page.get_by_role("tab", name="Arena").click()
    left = trail.now()
    page.wait_for_timeout(7_000)
    assert trail.count(TRAIN_TICK, left) <= 1, trail
    assert trail.count(TRAIN_TICK, left + 2.5) == 0, trail

    # Quick switches end with only the last tab's timer running.
    for name in ("Train", "Arena", "Train", "Leaderboard"):
        page.get_by_role("tab", name=name).click()
    settled = trail.now()
    _wait_ticks(page, trail, BOARD_TICK, 1, settled)
    page.wait_for_timeout(5_000)
    assert trail.count(TRAIN_TICK, settled + 3) == 0, trail
    page.close()
