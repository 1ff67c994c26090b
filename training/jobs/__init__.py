"""The job machinery: what a job is and how it runs.

It holds:
- a job's typed config (``config``), the pre-launch check (``preflight``) and its estimate (``estimate``);
- the queue (``runner``) and the launch front door (``service``);
- the worker service (``workers``), heartbeats and the launcher files;
- the process that runs one job (``job_process``).
The queue knows nothing of publishing or the report; the job process calls them.
"""
