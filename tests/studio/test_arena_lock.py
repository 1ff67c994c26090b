"""The arena's controls lock in the browser when a turn starts: the lock transpiles to JavaScript (so it never waits
for the server), is wired to Send, Enter, Regenerate and New round, stays out of the API, and every turn-starting handler has
a failure handler that puts the controls back. The browser side is proven in ``tests/e2e/test_arena_lock.py``."""

from __future__ import annotations

import json

from groovy import transpile

from vibestudio.studio.pages import arena as page

CONTROLS = {"vote-left", "vote-right", "vote-tie", "vote-both_good", "vote-both_bad"} | {
    "arena-regenerate",
    "arena-reveal-btn",
    "arena-send",
}


def test_the_lock_transpiles_to_one_update_per_control():
    js = transpile(page._locked, validate=True)
    body = js[js.index("[") : js.rindex("]") + 1]
    updates = json.loads(body)
    assert updates == [{"interactive": False, "__type__": "update"}] * len(CONTROLS)


def test_send_enter_and_regenerate_lock_the_controls_client_side(tmp_path):
    from vibestudio.common.settings import Settings
    from vibestudio.studio.app import build_app
    from vibestudio.studio.context import build_context

    ctx = build_context(Settings(database_url=f"sqlite:///{tmp_path / 's.sqlite'}"))
    demo = build_app(ctx)
    demo.transpile_to_js(quiet=True)
    config = demo.get_config_file()
    elem = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    by_elem = {v: k for k, v in elem.items() if v}
    deps = config["dependencies"]

    locks = [d for d in deps if d.get("js_implementation")]
    arena_locks = [d for d in locks if {elem[o] for o in d["outputs"]} == CONTROLS]
    assert len(arena_locks) == 1, "one client-side lock over exactly the arena's turn controls"
    lock = arena_locks[0]
    assert sorted(map(tuple, lock["targets"])) == sorted(
        [
            (by_elem["arena-send"], "click"),
            (by_elem["arena-prompt"], "submit"),
            (by_elem["arena-regenerate"], "click"),
            (by_elem["arena-new"], "click"),
        ]
    )
    assert lock["api_visibility"] == "private" and not lock["inputs"]

    starts = [d for d in deps if d["api_name"] in ("arena_send", "arena_regenerate", "arena_new")]
    starts += [
        d
        for d in deps
        if (by_elem["arena-prompt"], "submit") in map(tuple, d["targets"])
        and not d.get("js_implementation")
        and d.get("backend_fn")  # a server handler (not the browser-only rubric clear)
    ]
    assert len(starts) == 4
    assert all(lock["id"] < d["id"] for d in starts)  # the browser waits on a server listener before the next
    for start in starts:
        assert by_elem["arena-send"] in start["outputs"]  # the stream turns Send back on
        settle = [d for d in deps if d.get("trigger_after") == start["id"]]
        assert len(settle) == 1 and settle[0]["trigger_only_on_failure"], start["api_name"]
        assert {elem[o] for o in settle[0]["outputs"]} == CONTROLS
    # New round clears the prompt in the browser at the click; its server answer leaves the prompt alone, so a
    # prompt typed while it ran on a busy server is neither cleared nor sent into the round it ends
    (new,) = [d for d in deps if d["api_name"] == "arena_new"]
    assert by_elem["arena-prompt"] not in new["outputs"]
    clear = [d for d in deps if (by_elem["arena-new"], "click") in map(tuple, d["targets"]) and d.get("js")]
    assert any([elem[o] for o in d["outputs"]] == ["arena-prompt"] and not d.get("backend_fn") for d in clear)
    assert all(d["id"] < new["id"] for d in clear)
    api = demo.get_api_info()["named_endpoints"]
    assert "/arena_send" in api and not any("locked" in name or "settle" in name for name in api)
