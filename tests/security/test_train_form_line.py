"""The Train tab's form events do not hold other visitors' page loads (``studio.pages.train``: ``LOAD_LINE``),
against the running app over HTTP as an attacker would: one researcher keeps the form's line busy (form events,
each a config check, here made slow) and another user's page load still answers at once; the load leaves the YAML
alone once an edit of the same page wrote it."""

from __future__ import annotations

import sys
import threading
import time

from vibestudio.studio.pages import train

FORM = "vibestudio.studio.pages.train._config_handlers.<locals>.on_form_event"
LOAD = "vibestudio.studio.pages.train._load_handler.<locals>.on_load"
SLOW_S = 5.0


def test_a_storm_of_form_events_does_not_hold_another_users_page_load(studio_app, monkeypatch):
    original = train._form_yaml
    started = threading.Event()

    def slow(ctx, *values, uid=None):
        if sys._getframe(1).f_code.co_name == "on_form_event":  # the form's events only, not the load
            started.set()
            time.sleep(SLOW_S)
        return original(ctx, *values, uid=uid)

    monkeypatch.setattr(train, "_form_yaml", slow)
    form, load = studio_app.fn_index(FORM), studio_app.fn_index(LOAD)
    rita = studio_app.http("rita")
    storm = [
        threading.Thread(target=studio_app.call, args=(rita, form), daemon=True) for _ in range(2)
    ]  # 2 events, one at a time on the form's line: about 10 s
    for t in storm:
        t.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    res = studio_app.call(studio_app.http("rex"), load, [None])
    took = time.perf_counter() - t0
    assert res.ok, res.error
    assert took < SLOW_S, f"another user's page load took {took:.1f} s behind the form events"
    for t in storm:
        t.join(30)


def test_the_load_leaves_the_yaml_an_edit_wrote(studio_app):
    form, load = studio_app.fn_index(FORM), studio_app.fn_index(LOAD)
    rita = studio_app.http("rita")
    fresh = studio_app.call(rita, load, [None], session="page-one")
    assert fresh.ok and isinstance(fresh.output[-2], str)  # a fresh page gets its first YAML
    assert studio_app.call(rita, form, session="page-two").ok
    late = studio_app.call(rita, load, [None], session="page-two")  # a load that lands after the edit
    assert late.ok and not isinstance(late.output[-2], str), late.output[-2]
