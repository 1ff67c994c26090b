"""Experiment trackers a job also reports its curves to, beside the studio's own.

A config's ``report_to`` names them, comma-separated: trackio, mlflow, wandb. Empty means none.
Each tracker is a pip package. One that is not installed is refused before launch.
The refusal names the field and the pip extra that installs it.

The stores are local unless the operator points elsewhere. They live in the data home's ``trackers`` folder:
- Trackio: ``trackers/trackio``, one SQLite file per project (``trackio show`` opens it);
- MLflow: ``trackers/mlflow.db``, a SQLite store (MLflow 3 retired the plain file store);
- W&B: offline runs in ``trackers/wandb`` (``wandb sync`` uploads them later).
An operator's own ``TRACKIO_DIR``, ``MLFLOW_TRACKING_URI`` or ``WANDB_MODE`` wins.
Each job is one run, named ``vibestudio-job-<id>``, in the project or experiment ``vibestudio``.

The studio's curves in the database are written whatever the trackers do.
This module knows nothing about trainers: it returns the arguments TRL's configs take.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = "vibestudio"


@dataclass(frozen=True)
class Tracker:
    """One tracker: the module that must import, and the pip extra that installs it."""

    name: str
    module: str
    extra: str


TRACKERS = {
    "trackio": Tracker("trackio", "trackio", "trackers"),
    "mlflow": Tracker("mlflow", "mlflow", "trackers"),
    "wandb": Tracker("wandb", "wandb", "wandb"),
}


def parse(value: str) -> list[str]:
    """The tracker names in ``value`` (comma-separated; '' or 'none' = none). ValueError names an unknown one."""
    names = [n.strip().lower() for n in str(value or "").split(",") if n.strip()]
    if names == ["none"]:
        return []
    for name in names:
        if name not in TRACKERS:
            raise ValueError(f"unknown tracker {name!r}: choose from {', '.join(TRACKERS)} (comma-separated)")
    return list(dict.fromkeys(names))


def installed(name: str) -> bool:
    return importlib.util.find_spec(TRACKERS[name].module) is not None


def check(value: str) -> list[str]:
    """The trackers ``value`` names, all installed here; ValueError naming each one that is not."""
    names = parse(value)
    missing = [n for n in names if not installed(n)]
    if missing:
        extras = sorted({TRACKERS[n].extra for n in missing})
        raise ValueError(
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed where this job runs: "
            + " ".join(f"pip install 'vibestudio[{e}]'" for e in extras)
            + ", or remove it from report_to"
        )
    return names


def stores(home: Path) -> dict[str, str]:
    """The environment each tracker reads for its local store under ``home``'s ``trackers`` folder."""
    where = home / "trackers"
    return {
        "TRACKIO_DIR": str(where / "trackio"),
        "MLFLOW_TRACKING_URI": f"sqlite:///{where / 'mlflow.db'}",
        "MLFLOW_EXPERIMENT_NAME": PROJECT,
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(where / "wandb"),
        "WANDB_PROJECT": PROJECT,
    }


def trainer_args(value: str, job_id: int | None, home: Path) -> dict[str, Any]:
    """TrainingArguments for the trackers ``value`` names (``report_to``, run name, Trackio project).

    It sets the local stores' environment for this job process, unless the operator set them."""
    names = check(value)
    if not names:
        return {"report_to": []}
    (home / "trackers").mkdir(parents=True, exist_ok=True)
    for key, default in stores(home).items():
        os.environ.setdefault(key, default)
    return {"report_to": names, "run_name": f"{PROJECT}-job-{job_id}", "project": PROJECT}
