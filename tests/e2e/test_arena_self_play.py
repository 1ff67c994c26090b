"""Real Chromium, real llama.cpp (the embedded SmolLM2): a self-play battle (one persona, two temperatures) is played,
voted and revealed on the Arena tab, then the Data tab freezes it into a snapshot that counts it on-policy."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.helpers.browser import wait_text
from tests.helpers.servers import QUIET, server_with_personas, stop_server
from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.db.models import Battle, DatasetSnapshot, Vote
from vibestudio.training.objectives.pairmix import pair_mix

pytestmark = pytest.mark.e2e


def test_self_play_battle_is_voted_and_frozen_as_an_on_policy_pair(tmp_path, browser):
    proc, url, db = server_with_personas(tmp_path, QUIET)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        assert not page.locator("#arena-self-play-model").is_visible()
        page.get_by_label("Self-play (one model, two samples)").check()
        page.locator("#arena-self-play-model input").click()
        page.locator("#arena-self-play-model").get_by_role("option", name="quokka-alpha").click()
        # picking the model fills in its own temperature (0.2) and the farther of 0.3 and 1.0
        page.wait_for_function("() => document.querySelector('#arena-temp-2 input')?.value === '1'")
        assert page.locator("#arena-temp-1 input").input_value() == "0.2"
        page.locator("#arena-prompt textarea").fill("Name a fruit.")
        page.locator("#arena-send").click()
        wait_text(page, "#arena-status", "Turn 1 answered")
        assert "Model A · quokka-alpha" in page.locator("#chat-left").inner_text()
        assert "Model B · quokka-alpha" in page.locator("#chat-right").inner_text()
        assert "at temperature" not in page.locator("body").inner_text()  # which is which: not yet
        page.locator("#vote-left").click()
        wait_text(page, "#arena-status", "Vote on turn 1 saved")
        page.locator("#arena-reveal-btn").click()
        wait_text(page, "#arena-reveal", "Model B was quokka-alpha at temperature")
        shown = page.locator("#arena-reveal").inner_text()
        assert "Model A was quokka-alpha at temperature" in shown
        assert {"0.2", "1"} == {
            part.split("at temperature ")[1].split()[0] for part in shown.splitlines()[0].split(" · ")
        }
        page.get_by_role("tab", name="Data").click()
        # the tab's count is the snapshot's (annotation.snapshots.collected): the pairs Freeze is about to write
        wait_text(
            page, "#data-counts", "1 preference pair a snapshot would freeze now, from the 1 vote it reads"
        )
        page.locator("#data-freeze").click()
        wait_text(
            page, "#data-snapshot-result", "on-policy pairs (both answers by one model): quokka-alpha 1 of 1"
        )
        page.close()
    finally:
        stop_server(proc)
    with db.session() as s:
        b = s.scalars(select(Battle)).one()
        vote = s.scalars(select(Vote)).one()
        snap = s.scalars(select(DatasetSnapshot)).one()
        assert b.mode == "self_play" and b.a_id == b.b_id and b.status == "voted"
        assert {b.sampling_a["temperature"], b.sampling_b["temperature"]} == {0.2, 1.0}
        left = b.sampling_a if b.left_is_a else b.sampling_b
        assert vote.outcome == ("a" if b.left_is_a else "b")
        rows = load_snapshot(snap.path, snap.hash, provenance=True)
    assert pair_mix(rows, "quokka-alpha")["on"] == 1
    prov = rows[0]["provenance"]
    assert prov["chosen_model"] == prov["rejected_model"] == "quokka-alpha"
    # the vote went to the left pane, so the chosen answer is the one sampled with the left side's override
    chosen = prov["self_play"]["chosen_sampling"]
    assert (chosen["temperature"], chosen["seed"]) == (left["temperature"], left["seed"])
    db.dispose()
