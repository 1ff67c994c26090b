"""The estimate-error script (`scripts/estimate_error.py`) answers --help without loading a model, refuses a job
count below one by name, and its table shows each job's estimate, measured time and ratio."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "estimate_error.py"
_spec = importlib.util.spec_from_file_location("estimate_error", SCRIPT)
assert _spec is not None and _spec.loader is not None
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def test_help_works_and_names_the_options() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--jobs" in out.stdout and "--json" in out.stdout and "past_error" in out.stdout


def test_a_job_count_below_one_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.main(["--jobs", "0"])
    assert "--jobs" in capsys.readouterr().err


def test_the_plan_varies_kind_lora_and_size_and_the_table_shows_each_job() -> None:
    kinds = {k for k, _, _ in script.PLAN}
    steps = [s for _, _, s in script.PLAN]
    assert {"dpo", "reward"} <= kinds and {True, False} == {lora for _, lora, _ in script.PLAN}
    assert min(steps) == 2 and max(steps) == 16 and len(script.PLAN) == 10
    row = {"job": 3, "kind": "dpo LoRA", "steps": 4, "estimate_s": 20.0, "measured_s": 30.0, "ratio": 1.5}
    text = script.table([{**row, "basis": "calibrated on 2 past jobs like it"}])
    assert "estimate s" in text and "   20.0       30.0   1.50" in text
    cfg = script.job_config("reward", True, 4, "abc")
    assert cfg["max_steps"] == 4 and "kl_prompts" not in cfg and cfg["drift_prompts"] > 0
