"""Page-building traps a newcomer met (#27), checked on the built app's config without a browser: no component
rendered by accident (the arena's lock once drew eight grey "Run" buttons), every button has an event, every table
names its columns, and no emoji in the chrome (a machine without an emoji font shows boxes)."""

from __future__ import annotations

import re

import pytest

from vibestudio.studio.pages import arena

EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u23e9-\u23fa]")


@pytest.fixture(scope="module")
def config(fresh_app):
    return fresh_app.get_config_file()


def test_the_lock_count_matches_its_updates():
    assert len(arena._locked()) == arena.LOCKED_CONTROLS  # outside a page: the Buttons render nowhere


def test_no_unwired_or_default_labelled_buttons(config):
    wired = {t[0] for dep in config["dependencies"] for t in dep.get("targets") or []}
    buttons = [c for c in config["components"] if c.get("type") == "button"]
    assert not [c["props"].get("value") for c in buttons if c["props"].get("value") == "Run"]
    idle = [c["props"].get("value") for c in buttons if c["id"] not in wired]
    assert not idle, f"buttons with no event: {idle}"


def test_tables_name_their_columns(config):
    for c in config["components"]:
        if c.get("type") == "dataframe":
            heads = (c["props"].get("value") or {}).get("headers") or c["props"].get("headers") or []
            assert heads and heads != ["1", "2", "3"], c["props"].get("elem_id")


def test_no_emoji_in_chrome(config):
    for c in config["components"]:
        props = c.get("props", {})
        for key in ("label", "value"):
            text = props.get(key)
            if c.get("type") in ("button", "tab", "tabitem", "accordion") and isinstance(text, str):
                assert not EMOJI.search(text), (c.get("type"), text)
