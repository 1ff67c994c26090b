"""Training: from a frozen preference snapshot to a released child.

The flow. A snapshot and a parent contestant make a checked config. A job process runs it. Its status,
metrics and log live in the database and the job folder. The trained checkpoint is published back into the
arena with its lineage. Its report against the parent gives the verdict that releases or holds it.

The rooms:
- ``training.jobs``: configs (``config``), the pre-launch check, the queue (``runner``), the launch front
  door (``service``), workers, heartbeats and the job process
  (``python -m vibestudio.training.jobs.job_process``).
- ``training.objectives``: the trainers (DPO, KTO, ORPO, SimPO, reward model, GRPO) and their checks.
- ``training.publishing``: publishing, lineage, the playing form's fidelity, GGUF exports.
- ``training.report``: the checkpoint report, its verdict and the model page.
- ``training.tasks``: verifiable tasks.
- ``training.compare``: objectives side by side, above the rooms.

Public API (plain functions returning dataclasses; the UI and CLI call these):
- ``training.jobs.service.launch_dpo(db, parent, snapshot=None, **overrides) -> job_id`` and
  ``launch(db, kind, ...)``
- ``training.jobs.runner``: ``submit``, ``job_view``, ``list_jobs``, ``cancel``, ``reconcile``, ``wait``
- ``training.jobs.config``: ``JOB_KINDS``, ``DPOJobConfig`` and the other kinds, ``load_config``,
  ``save_config``
- ``training.report.steps.drift_report``, ``training.report.model_page.model_page``,
  ``training.report.verdict``

The queue knows nothing of publishing or the report. The job process (one job) is not the worker service.

Imports common, textfeatures, db, accounts, arena, standings and annotation. Nothing here imports gradio.
torch, transformers and TRL load only inside the job process. So importing ``training`` from the app is
cheap.
"""
