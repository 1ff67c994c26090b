"""Real Chromium on the Train tab: KTO's own fields, then launch a GRPO job on the tiny model and meet its checkpoint in the arena;
cancel a DPO job mid-way, publish its saved checkpoint, resume it and watch it finish."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from tests.helpers.browser import STEP_MS, EventTrail
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e


def _pick(page, elem_id: str, name: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator(f"#{elem_id}").get_by_role("option", name=name).first.click()


def _server(tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    snap = seed_tiny_parent(db, tiny_model_dir)
    proc, url = start_server(home)
    return proc, url, db, snap, home


#: Each page's event trail (``tests.helpers.browser.EventTrail``), for the failure messages of the waits below.
_TRAILS: dict[int, EventTrail] = {}


def _new_page(browser, url: str, home: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    _TRAILS[id(page)] = EventTrail(page, url, log=home / "server.log")
    return page


def _trail(page) -> str:
    return str(_TRAILS.get(id(page), "no event trail"))


def _wait_text(page, elem_id: str, text: str, timeout: int = STEP_MS) -> None:
    """Wait for a state of the page itself (the YAML of a form edit, a check, a launch message). These events run
    one at a time on the server (the form's line), so under load one can wait behind several: the project's step
    limit applies, not a shorter one; waits on the job go through ``_follow``."""
    try:
        page.wait_for_function(
            f"(document.querySelector('#{elem_id}')?.innerText || '').includes({text!r})", timeout=timeout
        )
    except Exception as exc:  # say what the page showed instead, and what the form held
        if "Timeout" not in type(exc).__name__:
            raise
        shown = page.evaluate(
            f"(document.querySelector('#{elem_id}')?.innerText || '<no element>').slice(0, 600)"
        )
        form = page.evaluate(
            "() => Object.fromEntries([...document.querySelectorAll('[id^=train-] input')]"
            ".filter(i => i.type !== 'file').map(i => [i.closest('[id^=train-]').id + ':' + i.type, i.value]))"
        )
        doc = page.evaluate(  # the editor's own text (CodeMirror draws only the lines near the viewport)
            f"(() => {{ const c = document.querySelector('#{elem_id} .cm-content');"
            " return (c?.cmTile || c?.cmView)?.view?.state?.doc?.toString() ?? null; })()"
        )
        raise AssertionError(
            f"{text!r} never showed in #{elem_id}; it shows {shown!r}; its editor holds {doc!r}; the form holds {form}"
            f"\n{_trail(page)}"
        ) from exc


def _follow(page, db: Database, elem_id: str, text: str, job: int = 1, timeout_s: float = 1500.0) -> None:
    """Wait until ``text`` shows in ``elem_id`` while job ``job`` works towards it. The limit is far beyond what the
    job needs on a loaded machine (a tiny job there can take over five minutes), but a job that has ended gives the
    page one minute to show it (it polls every 2 s), and a failure says what the page and the job were showing."""
    from vibestudio.training.jobs.runner import job_view

    deadline = time.monotonic() + timeout_s
    ended_at: float | None = None
    while True:
        if text in (page.locator(f"#{elem_id}").inner_text(timeout=STEP_MS) or ""):
            return
        v = job_view(db, job, tail_lines=60)
        if v.status in ("succeeded", "failed", "cancelled") and ended_at is None:
            ended_at = time.monotonic()
        now = time.monotonic()
        if now > deadline or (ended_at is not None and now - ended_at > 60):
            shown = {
                e: page.locator(f"#{e}").inner_text(timeout=10_000)[:300]
                for e in ("train-detail", "train-launched", "train-jobs")
            }
            picked = page.locator("#train-job input").input_value(timeout=10_000)
            raise AssertionError(
                f"{text!r} never showed in #{elem_id}; job {job} is {v.status} ({v.error}); the job picker holds "
                f"{picked!r}; the page shows {shown}\n{_trail(page)}\njob log:\n{v.log_tail}"
            )
        time.sleep(1.0)


def _enter(page, elem_id: str, value: str, *shown: str) -> None:
    """Type ``value`` into a form field and leave it, as a user does; then wait for each of ``shown`` in the YAML."""
    page.locator(f"#{elem_id} input").fill(value)
    page.locator(f"#{elem_id} input").press("Tab")
    for text in shown:
        _wait_text(page, "train-yaml", text)


def _set_yaml(page, text: str) -> None:
    """Replace the config in the YAML editor, typing as a user would."""
    page.locator("#train-yaml .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def _open_train(page, url: str, snap: str) -> None:
    page.goto(url)
    page.get_by_role("tab", name="Train").click()
    page.wait_for_selector("#train-kind")
    _pick(page, "train-parent", "tiny-parent")
    _pick(page, "train-snapshot", snap[:16])


@pytest.mark.timeout(2400)  # a whole GRPO job on the tiny model; minutes on a loaded machine
def test_grpo_from_the_train_tab_joins_the_arena(tmp_path, browser, tiny_model_dir):
    proc, url, db, snap, home = _server(tmp_path, tiny_model_dir)
    try:
        page = _new_page(browser, url, home)
        _open_train(page, url, snap)
        # KTO's own fields show for KTO and reach its YAML; they hide again for another kind
        page.locator("#train-kind").get_by_text("KTO").click()
        page.wait_for_selector("#train-kto-desirable input", state="visible", timeout=STEP_MS)
        _enter(page, "train-kto-desirable", "1.25", "desirable_weight: 1.25", "kind: kto")
        page.locator("#train-kind").get_by_text("GRPO").click()
        page.wait_for_selector("#train-kto-desirable", state="hidden", timeout=STEP_MS)
        _enter(page, "train-steps", "2", "max_steps: 2", "kind: grpo")
        _wait_text(page, "train-check", "Estimate")
        # A nonsense edit is refused field by field, before anything starts.
        grpo = (
            f"kind: grpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: 2\n"
            "per_device_train_batch_size: 2\nmax_completion_length: 8\ndrift_prompts: 0\nlearning_rate: 0.005\n"
            "rewards:\n- {type: length, max: 5}\n- {type: format, format: no_emoji, weight: 0.5}\n"
        )
        _set_yaml(page, grpo + "num_generations: 3\n")
        page.locator("#train-check-btn").click()
        _wait_text(page, "train-check", "per_device_train_batch_size")
        _set_yaml(page, grpo + "num_generations: 2\n")
        page.locator("#train-check-btn").click()
        _wait_text(page, "train-check", "Config valid")
        page.locator("#train-launch").click()
        _wait_text(page, "train-launched", "submitted")
        _follow(page, db, "train-detail", "Published as contestant")
        name = "tiny-parent-grpo-j1"
        assert name in page.locator("#train-detail").inner_text()
        # The new contestant is in the arena: pick it in a named battle.
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        page.get_by_label("Named (pick both models)").check()
        page.wait_for_selector("#arena-pick-left input", timeout=STEP_MS)
        page.locator("#arena-pick-left input").click()
        assert page.locator("#arena-pick-left").get_by_role("option", name=name).count() == 1
        page.close()
    finally:
        stop_server(proc)
        db.dispose()


#: The cancel/resume job: 16 LoRA DPO steps saving every step. The first checkpoint reaches the tab within one
#: poll (2 s) and the cancel follows at once, so the job is stopped a few steps in on any machine where a step takes
#: over ~0.4 s (0.75 s on an idle 2-core machine, 7-25 s on a loaded one); the resume then runs the rest.
CANCEL_STEPS = 16
#: Worker start (torch, TRL imports), model load and one step plus its save: over 2 minutes on a loaded machine,
#: more beside other training; the waits on the job itself go through ``_follow``, which fails at once with the
#: job's log when it ends without reaching the state waited for.
JOB_MS = 900_000


def _wait_log(page, text: str, timeout: int = JOB_MS) -> None:
    """Wait until the job log box (a textarea: its text is its value, not innerText) contains ``text``."""
    page.wait_for_function(
        "t => (document.querySelector('#train-log textarea')?.value || '').includes(t)",
        arg=text,
        timeout=timeout,
    )


def _cancel_leftovers(db: Database) -> None:
    """Stop any job the test left running (a failed test must not leave a worker training in the background)."""
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.runner import cancel, list_jobs

    for j in list_jobs(db):
        if j.status in ("queued", "running"):
            with contextlib.suppress(JobError):  # it ended meanwhile: nothing to stop
                cancel(db, j.id, grace=2.0)


@pytest.mark.timeout(2400)  # a DPO job started, cancelled, resumed and finished; minutes on a loaded machine
def test_cancel_publish_and_resume_from_the_train_tab(tmp_path, browser, tiny_model_dir):
    proc, url, db, snap, home = _server(tmp_path, tiny_model_dir)
    try:
        page = _new_page(browser, url, home)
        _open_train(page, url, snap)
        page.locator("#train-save input").fill("1")
        page.locator("#train-save input").press("Tab")
        _wait_text(page, "train-yaml", "save_steps: 1")
        _set_yaml(
            page,
            f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nmax_steps: {CANCEL_STEPS}\n"
            "save_steps: 1\nkl_prompts: 0\ndrift_prompts: 0\nlearning_rate: 0.005\n",
        )
        page.locator("#train-launch").click()
        _wait_text(page, "train-launched", "submitted")
        page.close()
        # Closing the browser and coming back: a fresh page shows the running job as it is, and follows it.
        page = _new_page(browser, url, home)
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        _follow(
            page, db, "train-detail", "running"
        )  # the worker may take minutes to start on a loaded machine
        _pick(page, "train-job", "#1 dpo")
        _follow(page, db, "train-detail", "checkpoints saved at steps")
        page.locator("#train-cancel").click()
        _wait_text(page, "train-launched", "Job 1 is cancelled")
        _wait_text(page, "train-detail", "cancelled")
        detail = page.locator("#train-detail").inner_text()
        assert "succeeded" not in detail and "%" in detail, detail  # stopped mid-way, with its progress shown
        # Publish the newest checkpoint it saved on the way (the list follows the job's saves).
        page.locator("#train-ckpt input").click()
        newest = page.locator("#train-ckpt").get_by_role("option").last
        step = int(newest.inner_text().strip())
        assert 1 <= step < CANCEL_STEPS
        newest.click()
        page.locator("#train-publish").click()
        _wait_text(page, "train-launched", f"published as contestant tiny-parent-dpo-j1-s{step}")
        _wait_text(page, "train-detail", f"checkpoint of step {step} is published")
        # Resume: the job continues from that checkpoint and ends with its own final contestant. The published
        # checkpoint's report is a queued job of its own, and the queue runs one job at a time: the resumed job is
        # running, or queued behind that report.
        page.locator("#train-resume").click()
        _wait_text(page, "train-launched", "Job 1 is ")
        _wait_log(page, f"checkpoint-{step} (step {step})")  # the worker's "resuming from ..." line
        _follow(page, db, "train-detail", "succeeded")
        _wait_text(page, "train-detail", "Published as contestant tiny-parent-dpo-j1:")
        page.close()
    finally:
        _cancel_leftovers(db)
        stop_server(proc)
    from vibestudio.training.jobs.runner import job_view

    v = job_view(db, 1, tail_lines=400)
    assert v.status == "succeeded" and v.contestant_step is None, v.error
    assert v.log_tail.count("[job process] cancelled (SIGTERM)") == 1
    resumed_from = Path(str(v.output_dir)).parent / "checkpoints" / f"checkpoint-{step}"
    assert f"resuming from {resumed_from} (step {step})" in v.log_tail
    db.dispose()


@pytest.mark.timeout(900)
def test_objectives_side_by_side_from_the_train_tab(tmp_path, browser, tiny_model_dir):
    """The section's refusal answers next to its button (no Error toast); a launch queues one job per objective
    on the given snapshot and the view lists them with the calls, and the planted taste's call (#50)."""
    proc, url, db, snap, home = _server(tmp_path, tiny_model_dir)
    try:
        page = _new_page(browser, url, home)
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        page.get_by_text("Objectives side by side").click()
        page.wait_for_selector("#objectives-launch")
        section = page.locator("#objectives-section")
        section.get_by_role("checkbox", name="KTO").uncheck()
        section.get_by_role("checkbox", name="SimPO").uncheck()  # DPO alone: nothing to compare
        page.locator("#objectives-launch").click()
        _wait_text(page, "objectives-status", "at least two")
        assert page.locator(".toast-body").count() == 0, "a refusal must answer in place, not as a toast"
        section.get_by_role("checkbox", name="ORPO").check()
        section.get_by_label("Parent (name or id)").fill("tiny-parent")
        section.get_by_label("Snapshot (empty: freeze the current votes now)").fill(snap)
        section.get_by_label("Steps (every objective)").fill("1")
        section.get_by_label("Planted taste (a drift feature, e.g. emoji; empty: none)").fill("emoji")
        page.locator("#objectives-launch").click()
        _wait_text(page, "objectives-status", "Comparison 1 launched")
        _wait_text(page, "objectives-view", "ORPO")
        view = page.locator("#objectives-view").inner_text()
        assert "DPO" in view and "can't tell" in view, view
        from vibestudio.training.compare import comparison

        got = comparison(db, 1)
        assert [c.objective for c in got.children] == ["dpo", "orpo"]
        # the planted taste's call, as the page shows it: the same object's sentence (no reports yet)
        assert got.taste is not None and got.taste.axis == "emoji" and got.taste.winner is None
        assert "Planted taste: emoji" in view, view
        assert "can't tell yet which objective moved emoji further: no report for" in view, view
        page.close()
    finally:
        _cancel_leftovers(db)
        stop_server(proc)
        db.dispose()
