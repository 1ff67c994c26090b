"""GRPO on a task set: config and launch refusals (no task reward, held-out leak, code tasks while off, a changed
set, a verifier that cannot read the answers), the task reward, the hack detectors and the verdict rules; and
(slow lane) a tiny-model job whose held-out accuracy, KL and report measures land where the Train tab reads them."""

from __future__ import annotations

import json

import pytest

from tests.helpers.postgres import ONE_KIND
from vibestudio.training.jobs.config import ConfigError, make_config
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.service import check_config, launch
from vibestudio.training.objectives.rewards import build_rewards
from vibestudio.training.publishing.lineage import lineage, overoptimisation_alerts
from vibestudio.training.report.verdict import decide, load_rules
from vibestudio.training.tasks import generate_task_set, import_task_file, load_tasks
from vibestudio.training.tasks.report import reward_without_accuracy
from vibestudio.training.tasks.scoring import accuracy_of, gaming
from vibestudio.training.tasks.verifiers import Check


def _rows(n, start=0):
    return [{"prompt": f"What is {i} plus {i}?", "answer": str(2 * i)} for i in range(start, start + n)]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_config_needs_the_task_reward_and_one_data_source():
    with pytest.raises(ConfigError, match="task reward"):
        make_config("grpo", tasks="arith")
    with pytest.raises(ConfigError, match="needs a task set"):
        make_config("grpo", rewards=[{"type": "task"}])
    with pytest.raises(ConfigError, match="both set"):
        make_config("grpo", tasks="arith", snapshot_hash="abc", rewards=[{"type": "task"}])
    with pytest.raises(ConfigError, match="rewards"):
        make_config("grpo", tasks="a", rewards=[{"type": "task", "verifier": {"type": "nope"}}])
    cfg = make_config(
        "grpo", tasks="arith", rewards=[{"type": "task"}, {"type": "regex", "pattern": "Answer:"}]
    )
    assert cfg.tasks == "arith"


def test_launch_refusals_name_the_set_line_and_field(db, tiny_parent, tmp_path, monkeypatch):
    task = [{"type": "task"}]
    with pytest.raises(JobError, match="no task set 'missing'"):
        launch(db, "grpo", "tiny-parent", tasks="missing", rewards=task)
    rows = _rows(40)
    import_task_file(db, _jsonl(tmp_path / "a.jsonl", rows), "strict", heldout_fraction=0.5)
    import_task_file(db, _jsonl(tmp_path / "b.jsonl", rows), "loose", heldout_fraction=0.1)
    with pytest.raises(JobError, match="held out in task set 'strict'.*never trains on a held-out task"):
        launch(db, "grpo", "tiny-parent", tasks="loose", rewards=task)
    check = check_config(
        db, {"kind": "grpo", "parent_contestant": "tiny-parent", "tasks": "loose", "rewards": task}
    )
    assert any(e.field == "tasks" and "held out" in e.message for e in check.errors)
    with pytest.raises(JobError, match="at least 999"):
        launch(db, "grpo", "tiny-parent", tasks="strict", rewards=task, min_pairs=999)
    words = [{"prompt": f"Name colour {i}.", "answer": f"colour{i}"} for i in range(20)]
    import_task_file(db, _jsonl(tmp_path / "w.jsonl", words), "words")
    with pytest.raises(JobError, match=r"cannot read task set 'words' line \d+ field 'answer'"):
        launch(db, "grpo", "tiny-parent", tasks="words", rewards=[{"type": "task", "verifier": "numeric"}])
    code = [{"prompt": f"Write f{i}.", "tests": f"assert f{i}() == {i}"} for i in range(20)]
    import_task_file(db, _jsonl(tmp_path / "c.jsonl", code), "code")
    monkeypatch.delenv("VIBESTUDIO_CODE_CHECKS", raising=False)
    with pytest.raises(JobError, match=r"line \d+ field .verifier.: a code task, and code checks are off"):
        launch(db, "grpo", "tiny-parent", tasks="code", rewards=task)


def test_task_reward_scores_and_skips(monkeypatch):
    (fn,), _ = build_rewards([{"type": "task"}])
    cols = {
        "answer": ["7", "7", "7"],
        "verifier": [json.dumps({"type": "numeric"})] * 2 + [json.dumps({"type": "code"})],
        "choices": ["", "", ""],
    }
    monkeypatch.delenv("VIBESTUDIO_CODE_CHECKS", raising=False)
    out = fn(prompts=["p"] * 3, completions=["Answer: 7", "Answer: 8", "x"], **cols)
    assert out == [1.0, 0.0, None]
    assert fn.fn.skipped == 1 and fn.fn.scored == 2
    (gamed,), _ = build_rewards([{"type": "task", "verifier": {"type": "numeric", "match": "any"}}])
    assert gamed(prompts=["p"], completions=["Answer: 6 7 8"], **{k: v[:1] for k, v in cols.items()}) == [1.0]


def test_accuracy():  # its interval is common.stats.wilson (tests/common/test_stats_one_of_each.py)
    acc = accuracy_of([Check(True), Check(False), Check(False, error="timeout")])
    assert (acc.n, acc.correct, acc.skipped) == (2, 1, 1)
    assert "can't tell" in accuracy_of([Check(False, error="x")]).text()


def test_hack_signals_and_the_rules_that_flag_them(db):
    generate_task_set(db, "arithmetic", 60, "arith")
    tasks = load_tasks(db, "arith", "heldout")[:10]
    honest = [f"Answer: {t.answer}" for t in tasks]
    hacked = [f"Answer: {int(t.answer) - 1} {t.answer} {int(t.answer) + 1}" for t in tasks]
    any_number = {"type": "numeric", "match": "any"}
    assert not any(gaming(tasks, honest, any_number)["gamed"])
    g = gaming(tasks, hacked, any_number)
    assert all(g["gamed"]) and all(g["several_numbers"]) and all(g["format_only"])
    # train reward up while held-out flat: flagged; with held-out up as well: not
    steps = [(i, 0.2 + 0.02 * i) for i in range(30)]
    flat = {
        "rewards/task/mean": steps,
        "heldout/accuracy": [(0, 0.3), (30, 0.31)],
        "heldout/p": [(30, 0.8)],
        "heldout/delta": [(30, 0.01)],
    }
    assert reward_without_accuracy(flat)["flag"] == 1.0
    assert any("reward hacking" in a for a in overoptimisation_alerts(flat))
    learned = {**flat, "heldout/p": [(30, 0.001)], "heldout/delta": [(30, 0.2)]}
    assert reward_without_accuracy(learned)["flag"] == 0.0
    noisy = {**flat, "rewards/task/mean": [(i, 0.3 + 0.1 * (-1) ** i) for i in range(30)]}
    assert reward_without_accuracy(noisy)["flag"] == 0.0
    rules = load_rules()
    change = {
        "parent": 0.0,
        "child": 0.6,
        "delta": 0.6,
        "low": 0.4,
        "high": 0.8,
        "p": 1e-4,
        "q": 1e-4,
        "n": 50,
    }
    same = {"parent": 0.5, "child": 0.5, "delta": 0.0, "low": -0.1, "high": 0.1, "p": 1.0, "q": 1.0, "n": 50}
    base = {"evals/accuracy": same, "drift/flattery": same}  # the rules' required measures, unchanged
    v = decide({**base, "rlvr/gamed": change, "rlvr/reward_without_accuracy": 1.0}, {}, rules)
    assert v.verdict == "watch" and v.hold
    assert any("game the training verifier" in r for r in v.reasons)
    assert any("train reward rose while held-out accuracy did not" in r for r in v.reasons)
    drop = {**change, "parent": 0.6, "child": 0.2, "delta": -0.4}
    assert decide({**base, "rlvr/accuracy": drop}, {}, rules).verdict == "regress"
    assert decide(base, {}, rules).verdict == "pass"
    # a job that trained on no task set lists no RLVR gap
    assert not any(u.startswith("rlvr/") for u in decide(base, {}, rules).unmeasured)


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_tiny_grpo_on_a_task_set(db, tiny_parent):
    from vibestudio.training.jobs.runner import wait

    generate_task_set(db, "arithmetic", 60, "arith")
    job = launch(
        db,
        "grpo",
        "tiny-parent",
        tasks="arith",
        rewards=[{"type": "task"}, {"type": "regex", "pattern": "Answer:", "weight": 0.2}],
        max_steps=3,
        max_completion_length=8,
        learning_rate=1e-3,
        heldout_every=2,
        heldout_tasks=6,
        kl_prompts=2,
        kl_max_new_tokens=4,
        drift_prompts=20,
        drift_max_tokens=4,
        eval_items=4,
        eval_max_tokens=4,
        describe_axes=0,
    )
    view = wait(db, job, timeout=600)
    assert view.status == "succeeded", view.error or view.log_tail
    steps = [s for s, _ in view.metrics["heldout/accuracy"]]
    assert steps == [0, 2, 3]
    for name in (
        "heldout/low",
        "heldout/high",
        "heldout/p",
        "kl_heldout",
        "rewards/task/mean",
        "step_seconds",
    ):
        assert name in view.metrics, (name, sorted(view.metrics))
    assert all(
        lo <= a <= hi
        for (_, a), (_, lo), (_, hi) in zip(
            view.metrics["heldout/accuracy"],
            view.metrics["heldout/low"],
            view.metrics["heldout/high"],
            strict=True,
        )
    )
    chain = lineage(db, view.contestant_id)
    assert chain[0].task_set["name"] == "arith" and chain[0].task_set["n_heldout"] > 0
    from vibestudio.training.report.steps import load_report

    report = load_report(db, view.contestant_id)
    assert report is not None and "rlvr/accuracy" in report.measures, report.unmeasured
    assert report.measures["rlvr/accuracy"]["n"] == 6


def test_cli_dry_run_and_the_train_tab_form(db, tiny_parent, monkeypatch):
    from typer.testing import CliRunner

    from vibestudio.studio.cli import app
    from vibestudio.studio.pages.train import with_task_set

    monkeypatch.setenv("VIBESTUDIO_DATABASE_URL", db.url)
    generate_task_set(db, "arithmetic", 40, "arith")
    runner = CliRunner()
    args = ["train", "grpo", "--parent", "tiny-parent", "--tasks", "arith", "--dry-run", "--json"]
    out = runner.invoke(
        app, [*args, "--verifier", "{type: numeric, tolerance: 0.5}", "--reward", "length:max=20"]
    )
    assert out.exit_code == 0, out.output
    cfg = json.loads(out.output)["config"]
    assert cfg["tasks"] == "arith" and cfg["snapshot_hash"] == ""
    assert cfg["rewards"][0] == {"type": "task", "verifier": {"type": "numeric", "tolerance": 0.5}}
    assert cfg["rewards"][1]["type"] == "length"
    out = runner.invoke(app, ["train", "grpo", "--verifier", "numeric", "--dry-run"])
    assert out.exit_code == 1 and "--verifier needs --tasks" in out.output
    data = with_task_set(
        {"kind": "grpo", "snapshot_hash": "abc", "rewards": [{"type": "length"}]},
        "arith",
        "numeric, any number counts (gameable)",
    )
    assert data["tasks"] == "arith" and data["snapshot_hash"] == ""
    assert data["rewards"] == [
        {"type": "task", "verifier": {"type": "numeric", "match": "any"}},
        {"type": "length"},
    ]
    assert with_task_set({"kind": "dpo"}, "arith", None) == {"kind": "dpo"}
    assert check_config(db, data | {"parent_contestant": "tiny-parent"}).ok
