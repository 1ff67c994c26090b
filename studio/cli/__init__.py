"""The ``vibestudio`` command line: a thin layer over the same services the web app uses.

This module builds the root app from one module per subject, one line per command or group below.
``vibestudio --help`` lists the commands first, then the groups.
- ``serve``: the web app (``serve.py``)
- ``battle``, ``prompts``: play the arena in the terminal, its prompt sets (``arena.py``)
- ``import``, ``export``: preference data in and out (``data.py``)
- ``agreement``, ``queue``, ``judge``, ``rubric``, ``argilla``: annotation (``annotate.py``)
- ``families``: checkpoints by common ancestor (``families.py``)
- ``models``, ``drift``: contestants, the model page, hold/hide, drift against the parent (``models.py``)
- ``db``: migrate, backup, restore (``database.py``)
- ``users``: accounts and roles (``users.py``)
- ``ratings``: ratings from a battles file or the database (``ratings.py``)
- ``evals``: the verifiable eval set (``evals.py``)
- ``train``, ``jobs``: training jobs (``train.py``, ``health.py``, ``jobs.py``)
- ``worker``: claim queued training jobs and run them on this host (``worker.py``)
- ``probes``: sycophancy probes (``probes.py``)
- ``decide``: the decision card of two or more contestants (``decide.py``)
- ``tasks``: task sets with checkable answers for RLVR (``tasks.py``)

Every module imports only typer at the top. Services and their libraries load inside the command that
runs. So ``vibestudio --help`` stays fast (``benchmarks/startup.py``). ``drift``, ``models`` and ``train`` read
the job config's field definitions to build their options: they are lazy (``_lazy.py``), so their modules load
only when one of them runs or draws its own help; the root's help lists them from the line given here. The command modules keep their
annotations as objects (no ``from __future__ import annotations``). Typer reads every command's
annotations to build ``--help``, and a string annotation costs a compile each.
tests/studio/test_cli_docs.py holds the rule. Shared helpers are in ``_common.py``. ``docs.py`` writes
``docs/cli.md`` from the help texts.
"""

from vibestudio.studio.cli import (
    annotate,
    arena,
    data,
    database,
    decide,
    evals,
    families,
    jobs,
    probes,
    ratings,
    serve,
    tasks,
    users,
    worker,
)
from vibestudio.studio.cli._lazy import LazyTyper

app = LazyTyper(
    help="Vibe Studio: arena, ratings, preference data and fine-tuning in one loop.",
    no_args_is_help=True,
    add_completion=False,
)

app.command("serve")(serve.serve)
app.command("battle")(arena.battle)
app.command("export")(data.export)
app.command("import")(data.import_cmd)
app.command("agreement")(annotate.agreement)
app.command("families")(families.families_cmd)
app.lazy_command(
    "drift",
    "vibestudio.studio.cli.models:drift_cmd",
    help="Compare a checkpoint with its parent (or --against) under the same conditions, and give a verdict.",
)
app.command("decide")(decide.decide)
app.command("worker")(worker.worker)

app.lazy_group("models", "vibestudio.studio.cli.models:models_app", help="Contestants in the arena.")
app.add_typer(database.db_app, name="db")
app.add_typer(arena.prompts_app, name="prompts")
app.add_typer(users.users_app, name="users")
app.add_typer(ratings.ratings_app, name="ratings")
app.add_typer(evals.evals_app, name="evals")
app.add_typer(annotate.queue_app, name="queue")
app.add_typer(annotate.judge_app, name="judge")
app.add_typer(annotate.rubric_app, name="rubric")
app.add_typer(annotate.argilla_app, name="argilla")
app.lazy_group(
    "train",
    "vibestudio.studio.cli.train:train_app",
    help="Launch training jobs (run out of process; see `vibestudio jobs`).",
)
app.add_typer(jobs.jobs_app, name="jobs")
app.add_typer(probes.probes_app, name="probes")
app.add_typer(tasks.tasks_app, name="tasks")


def main() -> None:
    """The ``vibestudio`` console script."""
    from vibestudio.common.threads import sleeping_thread_waits

    sleeping_thread_waits()  # before any command loads torch or llama.cpp
    app()
