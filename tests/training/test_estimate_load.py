"""The job estimate says which machine load it assumed, from a load reading taken when it is made, and widens its
figures when the machine is busy (issue 48: ~13.8 s/step estimated, 41 s/step taken beside other work, with no
word that the estimate assumed an idle machine). The reading is simulated (``os.getloadavg``); the Train tab's
panel, the CLI's dry run and the Python API read the one ``Estimate.summary``."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from vibestudio.arena.registry import BUILTIN_HF
from vibestudio.studio.cli import app
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.estimate import MachineLoad, estimate


def _loaded(monkeypatch: pytest.MonkeyPatch, load: float, cpus: int = 2) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)


def test_an_idle_reading_is_named_and_changes_nothing():
    cfg = make_config("dpo", parent_contestant="p0", max_steps=3, use_cpu=True)
    idle = estimate(cfg, BUILTIN_HF, load=MachineLoad(0.2, 2))
    assert idle.busy_factor == 1.0
    assert "assumes an idle machine (load 0.2 on 2 CPUs now: idle)" in idle.summary()


def test_a_busy_reading_widens_the_figures_and_says_the_load():
    cfg = make_config("dpo", parent_contestant="p0", max_steps=3, use_cpu=True)
    idle = estimate(cfg, BUILTIN_HF, load=MachineLoad(0.0, 2))
    busy = estimate(cfg, BUILTIN_HF, load=MachineLoad(4.0, 2))
    # the figures the formula gives stay those of an idle machine; the widened ones are x(1 + load / cpus)
    assert busy.seconds_per_step == idle.seconds_per_step and busy.busy_factor == pytest.approx(3.0)
    text = busy.summary()
    assert "assumes an idle machine, but the machine is busy now (load 4.0 on 2 CPUs)" in text
    assert f"x3.0: ~{idle.seconds_per_step * 3:.1f} s/step" in text
    unknown = estimate(cfg, BUILTIN_HF, load=MachineLoad(0.0, 2))
    unknown.load = None
    assert "the load now is not known" in unknown.summary()


def test_a_measured_estimate_says_it_assumes_the_load_its_jobs_ran_under():
    cfg = make_config("dpo", parent_contestant="p0", max_steps=3, use_cpu=True)
    est = estimate(cfg, BUILTIN_HF, history=[2.0, 2.0, 2.0], load=MachineLoad(3.0, 2))
    assert est.basis.startswith("measured on 3")
    # the measured steps already ran under their own load: widening them again counted it twice (x5 on a machine
    # as busy as the one the jobs ran on, and the job then took the measured time)
    assert est.busy_factor == 1.0
    assert "assumes the load the measured jobs ran under (load 3.0 on 2 CPUs now" in est.summary()
    assert "if it stays so" not in est.summary()


def test_the_dry_run_and_the_train_tab_read_the_load_when_asked(home_db, monkeypatch):
    from vibestudio.studio.pages.train import check_markdown
    from vibestudio.training.jobs.service import check_config

    db, snap = home_db
    _loaded(monkeypatch, 6.0)
    r = CliRunner().invoke(
        app, ["train", "dpo", "--parent", "tiny-parent", "--snapshot", snap[:8], "--dry-run", "--json"]
    )
    assert r.exit_code == 0, r.output
    said = json.loads(r.stdout)["estimate"]
    assert "busy now (load 6.0 on 2 CPUs)" in said and "x4.0: ~" in said, said
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap[:8]})
    assert check.estimate is not None
    assert "busy now (load 6.0 on 2 CPUs)" in check_markdown(check)
    _loaded(monkeypatch, 0.1)
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap[:8]})
    assert "(load 0.1 on 2 CPUs now: idle)" in check_markdown(check)
