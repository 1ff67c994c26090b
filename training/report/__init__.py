"""The checkpoint report: what changed between a published checkpoint and its parent, and how sure that is.
It also holds the verdict that releases or holds the checkpoint, and the model page that shows it all.

- ``training.report.steps``: the report, step by step (``drift_report``), saved and read back
  (``load_report``);
- ``training.report.job``: the report as a job (``run_report``, ``run_report_job``, ``report_job_settings``,
  ``after_probes``). ``training.publishing.publish`` runs it for every checkpoint it publishes.
- ``training.report.options``: the report's settings, read from the job config's field definitions;
- ``training.report.minimums``: the least each part needs, which the pre-launch check enforces too;
- ``training.report.fair``: both sides answer the same held-out prompts under the same conditions;
- ``training.report.drift_stats``: the feature-drift statistics and their practical thresholds;
- ``common.stats``: paired statistics (bootstrap intervals, permutation and sign tests, BH q-values);
- ``training.report.discover``: discovered and rewarded phrases, and the tone summary;
- ``training.report.vibecheck``: the differences a judge names and then checks;
- ``training.report.decisions``: one decision per measure, which every view renders;
- ``training.report.verdict``: the verdict rules (``data/verdict_rules.yaml``), recording and the hold on
  play;
- ``training.report.prediction``: what the report expects the arena to show against the parent;
- ``training.report.track_record``: those predictions scored on the votes after them;
- ``training.report.model_page``: everything known about one contestant;
- ``training.report.text``: the report and the model page as Markdown.

Imports common, textfeatures, db, accounts, arena, standings and annotation. From the rest of ``training``
it reads the job config's field definitions (``training.jobs.config``), never the job queue. When a report measures a task set, it imports
``training.tasks`` too. Nothing in the training loop imports it. ``training.publishing.publish``, the job
process and the studio's pages and commands do.
"""
