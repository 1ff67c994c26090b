"""Training: typed job configs, an out-of-process job runner, TRL trainers, checkpoint publishing and the
checkpoint report.

The flow: a frozen preference snapshot + a parent contestant -> a validated config saved as YAML -> a detached
job process (``python -m vibestudio.training.jobs.job_process``) whose status, metrics and log live in the database and the job
folder -> a checkpoint published back into the arena as a new contestant with its lineage (``training.publishing.publish``)
-> its checkpoint report against the parent and the verdict that releases or holds it (``training.report``).

Public API (plain functions returning dataclasses; the UI and CLI call these):
- ``training.jobs.service.launch_dpo(db, parent, snapshot=None, **overrides) -> job_id`` (and ``launch(db, kind, ...)``)
- ``training.jobs.runner``: ``submit``, ``job_view``, ``list_jobs``, ``cancel``, ``reconcile``, ``wait``
- ``training.jobs.config``: ``JOB_KINDS`` (dpo, kto, orpo, simpo, reward, grpo), ``DPOJobConfig`` (and the other kinds), ``load_config`` / ``save_config``, ``help_table``
- ``training.report.steps.drift_report``, ``training.report.model_page.model_page`` and ``training.report.verdict``
  (``record``, ``release``, ``hold``, ``current``)

The job queue (``training.jobs.runner``) knows nothing of publishing or the report; the job process
(``training.jobs.job_process``, one job) is not the worker service (``training.jobs.workers``, ``vibestudio worker``).

Imports common, textfeatures, db, accounts, arena, standings and annotation. Nothing here imports gradio; torch, transformers
and TRL are imported only inside the job process's code paths, so importing ``training`` from the app is cheap.
"""
