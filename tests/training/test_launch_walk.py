"""The launch walk (#39): from the Train tab's YAML to the job row, which of the studio's functions a launch passes
through, how often the config is validated and how often the minimum-pairs rule is applied. A walk that grows or
checks a thing twice again fails here."""

from __future__ import annotations

import sys
from collections import Counter

from tests.test_layers import LAYERS
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.service import launch_config

PACKAGES = set(LAYERS)
#: Distinct studio functions a launch from YAML text passes through in a warm process (#47: 91 before one check
#: per launch, 101 after: the report's held-out pool is checked before launch, and pydantic reads the fields). A
#: fresh clone's full run read 112: which lazy helpers a launch meets first depends on what ran before it.
WALK_BUDGET = 115


def _walk(fn, *args, **kwargs) -> Counter:
    seen: Counter = Counter()

    def prof(frame, event, _arg):  # type: ignore[no-untyped-def]
        if event == "call":
            mod = frame.f_globals.get("__name__", "")
            if mod.removeprefix("vibestudio.").split(".")[0] in PACKAGES:
                seen[f"{mod}:{frame.f_code.co_qualname}"] += 1

    sys.setprofile(prof)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return seen


def test_a_launch_validates_once_and_applies_the_pairs_rule_once(db, tiny_parent, make_snapshot, monkeypatch):
    monkeypatch.setattr(runner, "start_next", lambda db: None)
    snap = make_snapshot(8)
    text = f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: 2\n"
    from vibestudio.training.jobs.service import check_config

    check_config(db, text)  # a warm process: the modules a check imports lazily are loaded (not the walk)
    seen = _walk(launch_config, db, text)
    validate = (
        seen["vibestudio.training.jobs.config:JobConfig.validate"]
        + seen["vibestudio.training.jobs.config:config_errors"]
    )  # the one field check (pydantic) and the rules between fields, whichever way the config came in
    modules = {name.split(":")[0] for name in seen}
    print(
        f"launch walk: {len(seen)} distinct studio functions in {len(modules)} modules, "
        f"{sum(seen.values())} calls; validate x{validate}"
    )
    assert validate == 1, "the config is validated more than once on one launch"
    assert len(seen) <= WALK_BUDGET, "\n".join(sorted(seen))
