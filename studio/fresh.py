"""Fresh on sight: what the page load fills is filled again when the tab that shows it opens.

A page's views are read by its load events (``demo.load``). Alone, those run once per page. So a tab
opened an hour later showed the state of that hour-old load. An example was a Data tab with "0 ended
battles" beside five stored ones.

``refresh_on_open`` gives every load event a second trigger per tab around its outputs. Those are the
tab's own ``select`` and each enclosing tab's. So opening a tab or a sub-tab re-reads what it shows,
whoever changed it: another tab, the CLI, another user, a job. It is one event with more triggers, not a
copy; its concurrency line is kept.

A tab whose existing ``select`` event already writes all of a load's outputs gets no second trigger. The
Leaderboard's opening redraws its board itself. A view drawn by a button is redrawn on opening only where
its page also hangs the handler on the tab's ``select``.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

LOAD = "load"
SELECT = "select"


def tabs_around(block: Any) -> list[gr.Tab]:
    """The tabs that hold ``block``, innermost first."""
    found = []
    node = getattr(block, "parent", None)
    while node is not None:
        if isinstance(node, gr.Tab):
            found.append(node)
        node = getattr(node, "parent", None)
    return found


def refresh_on_open(demo: gr.Blocks) -> int:
    """Give every load event of ``demo`` the ``select`` of each tab around its outputs; returns how many
    triggers were added."""
    fns = list(demo.fns.values())
    selects: dict[int, set[int]] = {}  # tab id -> the outputs its select events already write
    for fn in fns:
        for block_id, event in fn.targets:
            if event == SELECT and block_id is not None:
                selects.setdefault(block_id, set()).update(o._id for o in fn.outputs)
    added = 0
    for fn in fns:
        if not any(event == LOAD for _, event in fn.targets) or not fn.outputs:
            continue
        outputs = {o._id for o in fn.outputs}
        tabs: dict[int, gr.Tab] = {}
        for out in fn.outputs:
            tabs.update((t._id, t) for t in tabs_around(out))
        for tab_id in tabs:
            trigger = (tab_id, SELECT)
            if trigger in fn.targets or outputs <= selects.get(tab_id, set()):
                continue
            fn.targets.append(trigger)
            added += 1
    return added
