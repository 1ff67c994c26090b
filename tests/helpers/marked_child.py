"""A trained child whose reserved fields carry marks a test can look for in what a lower role receives."""

from __future__ import annotations

from typing import Any

from vibestudio.db.models import Contestant, Job, JobMetric


def add_marked_child(db: Any, name: str, model_ref: str, adapter_ref: str, config: dict[str, Any]) -> str:
    """A hidden child (it plays in no battle of other tests) with server paths, a job config and a loss curve;
    returns its name."""
    with db.session() as s:
        job = Job(kind="dpo", config={"kind": "dpo", **config}, status="done")
        s.add(job)
        s.flush()
        for step, loss in ((1, 0.7), (2, 0.5), (3, 0.4)):
            s.add(JobMetric(job_id=job.id, step=step, name="loss", value=loss))
        s.add(
            Contestant(
                public_name=name,
                engine="transformers",
                model_ref=model_ref,
                adapter_ref=adapter_ref,
                job_id=job.id,
                state="hidden",
            )
        )
    return name
