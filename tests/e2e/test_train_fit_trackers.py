"""Real Chromium on the Train tab: a tracker that is not installed, and a 70B full fine-tune on one 80 GB GPU, are
each refused in place with the field and the reason; nothing is queued."""

from __future__ import annotations

import json

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database
from vibestudio.training.jobs.fit import SHAPES

pytestmark = pytest.mark.e2e


def _launch(page, yaml_text: str, expect: str) -> str:
    """Write ``yaml_text`` into the Train tab's config, press Launch, wait until the problems listed under the
    estimate include ``expect``, and return what the tab answers (the refusal and that list)."""
    page.locator("#train-yaml .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(yaml_text)
    page.locator("#train-launch").click()
    page.wait_for_function(
        f"(document.querySelector('#train-check')?.innerText || '').includes({expect!r})", timeout=STEP_MS
    )
    return page.locator("#train-launched").inner_text() + "\n" + page.locator("#train-check").inner_text()


def test_a_missing_tracker_and_a_70b_full_fine_tune_are_refused_in_place(tmp_path, browser, tiny_model_dir):
    from vibestudio.training.jobs.runner import list_jobs

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    snap = seed_tiny_parent(db, tiny_model_dir)
    base = tmp_path / "llama-70b"  # only its config.json: the fit reads the shape, never weights
    base.mkdir()
    (base / "config.json").write_text(json.dumps({**SHAPES["Llama-3.1-70B"], "model_type": "llama"}))
    head = (
        f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: 2\ndrift_prompts: 0\n"
    )
    proc, url = start_server(home, {})
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        page.wait_for_selector("#train-yaml .cm-content")

        shown = _launch(page, head + "report_to: wandb\n", "wandb is not installed")
        # the field and the editor's line it is on (the config is typed into the Train tab's editor)
        assert "Not launched" in shown and "report_to: line 6: wandb is not installed" in shown, shown
        assert "pip install 'vibestudio[wandb]'" in shown, shown

        shown = _launch(page, head + f"base_model: {base}\nlora: false\ngpu_memory_gb: 80\n", "70.6B model")
        assert "of a 70.6B model needs ~" in shown and "1x80 GB (the config's gpu_memory_gb)" in shown, shown
        assert "would fit: QLoRA" in shown and "ZeRO-3 on 64 GPUs" in shown, shown
        assert page.locator(".toast-body").count() == 0, "a refusal answers in place, not as a toast"
        assert list_jobs(db) == []
    finally:
        stop_server(proc)
        db.dispose()
