"""The job machinery: what a job is and how it runs.

A job's typed config (``config``), the pre-launch check (``preflight``) and its estimate (``estimate``), the
queue (``runner``), the launch front door (``service``), the worker service (``workers``), heartbeats, the
launcher files, and the process that runs one job (``job_process``). The queue knows nothing of publishing or
the report; the job process calls them.
"""
