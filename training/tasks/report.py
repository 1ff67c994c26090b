"""The RLVR part of a checkpoint report: held-out task accuracy against the parent, and reward hacking named.

``task_measures(task_set, ...)`` is a ``training.report.steps`` measure provider. Both sides answer the
same held-out tasks under the report's same conditions (``training.report.fair``). Each answer is checked
by its task's own verifier. For the verdict rules (``training/report/data/verdict_rules.yaml``), it
yields:
- ``rlvr/accuracy``: child vs parent accuracy, paired, bootstrap interval, exact McNemar p (as ``p`` and
  ``q``).
- ``rlvr/gamed``: answers that the verifier the job *trained against* passes while the task's own verifier
  fails. That catches a gameable training verifier, e.g. numeric ``match: any``. Child vs parent, exact
  McNemar.
- ``rlvr/several_numbers``: answers stating more than one distinct number, child vs parent.
- ``rlvr/format_only``: answers with the asked-for ``Answer:`` form and a wrong answer, child vs parent.
- ``rlvr/thinking_aloud`` and ``rlvr/words_before_answer``: did it start reasoning aloud, and how many
  words come before the right number (``textfeatures.vibes``). Everyday prompts get
  ``reasoning/thinking_aloud`` from the drift part.
- ``rlvr/reward_without_accuracy``: 1 when the job's train reward rose significantly while its held-out
  accuracy did not, else 0. The reward test compares the last third of the logged steps with the first
  (Mann-Whitney one-sided p < 0.05). The accuracy test is McNemar of the last check against step 0: not
  significant, or lower. ``rlvr/train_reward_rise`` carries the numbers behind it.

Answers the verifier could not score are left out of both sides, counted in ``n_skipped``. Each side's
accuracy also gets its Wilson interval under ``rlvr/parent_accuracy`` and ``rlvr/child_accuracy``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import select

from vibestudio.arena.registry import ContestantInfo
from vibestudio.common.stats import mcnemar_change
from vibestudio.db.models import JobMetric
from vibestudio.db.session import Database
from vibestudio.training.tasks.scoring import accuracy_of, check_all, gaming
from vibestudio.training.tasks.store import load_tasks


def _binary(parent: list[bool], child: list[bool], seed: int) -> dict[str, Any]:
    return mcnemar_change(parent, child).to_dict()  # interval and p-value from one test


def reward_without_accuracy(
    metrics: dict[str, list[tuple[int, float]]], reward: str = "rewards/task/mean"
) -> dict[str, Any]:
    """Did the train reward rise while held-out accuracy stayed flat? (numbers and the 0/1 flag)."""
    from scipy.stats import mannwhitneyu

    series = [v for _, v in metrics.get(reward) or metrics.get("reward") or []]
    out: dict[str, Any] = {"steps": len(series), "flag": 0.0}
    if len(series) < 6:
        out["why"] = "fewer than 6 logged steps of train reward"
        return out
    k = len(series) // 3
    first, last = series[:k], series[-k:]
    p = float(mannwhitneyu(last, first, alternative="greater").pvalue)
    rise = sum(last) / k - sum(first) / k
    held_p = (metrics.get("heldout/p") or [(0, 1.0)])[-1][1]
    held_delta = (metrics.get("heldout/delta") or [(0, 0.0)])[-1][1]
    rose = p < 0.05 and rise > 0
    flat = held_p >= 0.05 or held_delta <= 0
    out.update(
        {
            "reward_first": sum(first) / k,
            "reward_last": sum(last) / k,
            "rise": rise,
            "p": p,
            "heldout_delta": held_delta,
            "heldout_p": held_p,
            "flag": float(rose and flat),
        }
    )
    return out


def thinking_measures(tasks: list[Any], parent: list[str], child: list[str], seed: int) -> dict[str, Any]:
    """Did the child start thinking aloud on the tasks? ``rlvr/thinking_aloud`` (answers that reason aloud,
    ``textfeatures.vibes.thinking_aloud``, paired bootstrap like the drift features) and ``rlvr/words_before_answer``
    (words written before the reference answer first appears, over the tasks where both sides state it)."""
    from vibestudio.common.stats import paired_change
    from vibestudio.textfeatures.vibes import thinking_aloud, words_before

    out: dict[str, Any] = {
        "rlvr/thinking_aloud": paired_change(
            [thinking_aloud(t) for t in parent], [thinking_aloud(t) for t in child], seed=seed
        ).to_dict()
    }

    def said(t: Any) -> str:  # a numeric answer's number ("3000 m" is stated as 3000 too)
        return (
            str(t.answer).split()[0] if t.verifier.get("type") == "numeric" and t.answer.strip() else t.answer
        )

    pairs = [
        (words_before(p, said(t)), words_before(c, said(t)))
        for t, p, c in zip(tasks, parent, child, strict=True)
    ]
    both = [(x, y) for x, y in pairs if x is not None and y is not None]
    if len(both) >= 5:
        change = paired_change([x for x, _ in both], [y for _, y in both], seed=seed)
        out["rlvr/words_before_answer"] = change.to_dict()
    return out


def job_metric_series(db: Database, job_id: int | None) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    if job_id is None:
        return series
    with db.session() as s:
        q = select(JobMetric.name, JobMetric.step, JobMetric.value).where(JobMetric.job_id == job_id)
        for name, step, value in s.execute(q.order_by(JobMetric.step, JobMetric.id)):
            series.setdefault(name, []).append((step, value))
    return series


def task_measures(
    task_set: str,
    train_verifier: dict[str, Any] | None = None,
    n_items: int = 100,
    max_tokens: int = 64,
    seed: int = 0,
) -> Any:
    """A measure provider for ``training.report.steps.drift_report`` (see the module docstring)."""
    from vibestudio.training.report.fair import answer_all

    def rlvr(db: Database, parent: ContestantInfo, kid: ContestantInfo, setup: Any) -> dict[str, Any]:
        tasks = load_tasks(db, task_set, "heldout")
        tasks = tasks if n_items < 0 else tasks[:n_items]
        if not tasks:
            raise ValueError(f"task set {task_set!r} has no held-out tasks")
        # Decoded as the job's held-out check decodes (greedy, no repetition penalty): the report's accuracy and
        # the training curve measure one thing. A repetition penalty also counts the prompt's tokens, so sampled
        # answers miscopy the question's own numbers, and the sampled rate says less about what was learned.
        sampling = {**kid.sampling, "max_tokens": max_tokens, "temperature": 0.0, "repeat_penalty": 1.0}
        p, c = replace(parent, sampling=sampling), replace(kid, sampling=sampling)
        prompts = [t.prompt for t in tasks]
        pa = [a.text for a in answer_all(p, prompts, seed)]
        ca = [a.text for a in answer_all(c, prompts, seed)]
        pc, cc = check_all(tasks, pa), check_all(tasks, ca)
        keep = [i for i in range(len(tasks)) if pc[i].error is None and cc[i].error is None]
        if not keep:
            raise ValueError("the verifier could not score any held-out answer")
        pp = [pc[i].passed for i in keep]
        cp = [cc[i].passed for i in keep]
        measures: dict[str, Any] = {
            "rlvr/accuracy": {**_binary(pp, cp, seed), "n_skipped": len(tasks) - len(keep)}
        }
        measures["rlvr/parent_accuracy"] = accuracy_of([pc[i] for i in keep]).to_dict()
        measures["rlvr/child_accuracy"] = accuracy_of([cc[i] for i in keep]).to_dict()
        kept = [tasks[i] for i in keep]
        gp = gaming(kept, [pa[i] for i in keep], train_verifier)
        gc = gaming(kept, [ca[i] for i in keep], train_verifier)
        for name in ("gamed", "several_numbers", "format_only"):
            measures[f"rlvr/{name}"] = _binary(gp[name], gc[name], seed)
        measures.update(thinking_measures(kept, [pa[i] for i in keep], [ca[i] for i in keep], seed))
        rise = reward_without_accuracy(job_metric_series(db, kid.job_id))
        measures["rlvr/train_reward_rise"] = rise
        measures["rlvr/reward_without_accuracy"] = rise["flag"]
        examples = [
            {"prompt": tasks[i].prompt, "answer": tasks[i].answer, "parent": pa[i], "child": ca[i]}
            for i in keep
            if pc[i].passed != cc[i].passed
        ]
        measures["rlvr/examples"] = examples[:8]
        return measures

    rlvr.__name__ = "rlvr"
    return rlvr
