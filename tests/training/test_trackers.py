"""Trackers: ``report_to`` reaches TRL, the local stores fill, a missing tracker is refused before launch.

The real job writes to real Trackio and MLflow stores, read back through their own readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.postgres import ONE_KIND
from vibestudio.training.jobs import trackers
from vibestudio.training.jobs.config import ConfigError, config_from_dict
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import check_config, launch

TRACKER_ENV = ("TRACKIO_DIR", "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "WANDB_MODE", "WANDB_DIR")


@pytest.fixture
def no_tracker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stores default under the test's data home: no operator setting from outside leaks in."""
    for key in TRACKER_ENV:
        monkeypatch.delenv(key, raising=False)


def test_report_to_names_are_checked_in_the_config():
    cfg = config_from_dict({"kind": "dpo", "report_to": "trackio, mlflow"})
    assert trackers.parse(cfg.report_to) == ["trackio", "mlflow"]
    assert trackers.parse("") == [] and trackers.parse("none") == []
    with pytest.raises(ConfigError) as err:
        config_from_dict({"kind": "dpo", "report_to": "tensorboardx"}).validate()
    assert err.value.field == "report_to" and "tensorboardx" in str(err.value)


def test_trainer_args_default_to_no_tracker_and_local_stores(tmp_path, no_tracker_env):
    assert trackers.trainer_args("", 3, tmp_path) == {"report_to": []}
    args = trackers.trainer_args("mlflow", 3, tmp_path)
    assert args == {"report_to": ["mlflow"], "run_name": "vibestudio-job-3", "project": "vibestudio"}
    assert os.environ["MLFLOW_TRACKING_URI"] == f"sqlite:///{tmp_path / 'trackers' / 'mlflow.db'}"
    assert os.environ["WANDB_MODE"] == "offline"


def test_an_operator_store_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.internal:5000")
    trackers.trainer_args("mlflow", 1, tmp_path)
    assert os.environ["MLFLOW_TRACKING_URI"] == "http://mlflow.internal:5000"


@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_a_tracker_not_installed_is_refused_before_launch_naming_field_and_extra(
    db, tiny_parent, make_snapshot
):
    assert not trackers.installed("wandb")  # the dev extras leave W&B out: the real missing case
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "report_to": "wandb"})
    refused = [e for e in check.errors if e.field == "report_to"]
    assert refused, check.errors
    assert "wandb is not installed" in refused[0].message
    assert "pip install 'vibestudio[wandb]'" in refused[0].message


def _trackio_logs(store: Path, run: str) -> list[dict]:
    """The run's logged rows, through Trackio's own reader (it reads TRACKIO_DIR when imported)."""
    code = (
        "import json; from trackio.sqlite_storage import SQLiteStorage as S; "
        f"print(json.dumps({{'runs': S.get_runs('vibestudio'), 'logs': S.get_logs('vibestudio', {run!r})}}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TRACKIO_DIR": str(store)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert run in found["runs"], found["runs"]
    return found["logs"]


@pytest.mark.slow  # a real two-step job on the tiny model with both trackers: about 30-60 s on a CPU
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_a_real_job_writes_its_curves_to_trackio_and_mlflow(db, tiny_parent, make_snapshot, no_tracker_env):
    from mlflow.tracking import MlflowClient

    from vibestudio.db.session import data_home

    steps = {"max_steps": 2, "learning_rate": 5e-3, "drift_prompts": 0, "eval_items": 0, "kl_prompts": 0}
    job_id = launch(db, "dpo", "tiny-parent", make_snapshot(8), report_to="trackio,mlflow", **steps)
    view = wait(db, job_id, timeout=300)
    assert view.status == "succeeded", view.error or view.log_tail
    assert [s for s, _ in view.metrics["loss"]] == [1, 2]  # the studio's own curves stay
    run = f"vibestudio-job-{job_id}"
    home = data_home() / "trackers"

    client = MlflowClient(tracking_uri=f"sqlite:///{home / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("vibestudio")
    assert experiment is not None
    (found,) = client.search_runs([experiment.experiment_id], f"tags.mlflow.runName = '{run}'")
    assert {"loss", "rewards/chosen", "rewards/margins"} <= set(found.data.metrics)
    assert [m.step for m in client.get_metric_history(found.info.run_id, "loss")] == [1, 2]

    logs = _trackio_logs(home / "trackio", run)
    # Trackio numbers its own rows from 0; the trainer's step rides along as train/global_step
    assert [row["train/global_step"] for row in logs if "train/loss" in row] == [1, 2]
    assert {"train/rewards/chosen", "train/rewards/margins"} <= set(logs[0])
