"""Each job setting is defined once (#47), in its config class: default, help and bounds. Every other place that
shows or uses it reads that definition: pydantic's field check, the ``vibestudio train KIND`` options, the Train
tab's starting values, the YAML reference in the docs, the report's options and ``drift_report``'s defaults."""

from __future__ import annotations

import dataclasses
import inspect

import gradio as gr
import pytest
import typer

from vibestudio.studio.cli import app
from vibestudio.studio.cli.docs import JOB_DOC, job_config_doc
from vibestudio.studio.pages import train as page
from vibestudio.training.jobs.config import CONFIG_KINDS, JOB_KINDS, bounds_text, default_of, field_model
from vibestudio.training.report.options import DEFAULTS, REPORT_FIELDS, ReportOptions, report_fields
from vibestudio.training.report.steps import drift_report

KINDS = sorted(CONFIG_KINDS)


def _fields(kind: str) -> list[dataclasses.Field]:
    return list(dataclasses.fields(CONFIG_KINDS[kind]))


def _cli_params(kind: str) -> dict[str, object]:
    group = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    return {p.name: p for p in group.commands[kind].params}


@pytest.mark.parametrize("kind", KINDS)
def test_pydantic_reads_each_fields_default_help_and_bounds(kind):
    model = field_model(CONFIG_KINDS[kind]).model_fields
    for f in _fields(kind):
        info = model[f.name]
        assert info.default == default_of(f) and info.description == f.metadata["help"], f.name
        for bound in ("ge", "gt", "le", "lt"):
            if bound in f.metadata:
                assert any(getattr(m, bound, None) == f.metadata[bound] for m in info.metadata), (
                    f.name,
                    bound,
                )


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_is_a_cli_option_with_its_default_and_help(kind):
    params = _cli_params(kind)
    for f in _fields(kind):
        if not f.metadata.get("cli", True):
            continue
        option = params[f.name]
        shown = "null" if default_of(f) is None else repr(default_of(f))
        assert option.help.startswith(f.metadata["help"]), f.name  # type: ignore[attr-defined]
        assert f"[default: {shown}" in option.help, f.name  # type: ignore[attr-defined]
        assert bounds_text(f.metadata) in option.help, f.name  # type: ignore[attr-defined]
        assert option.default is None, f"--{f.name} would override the config file"  # type: ignore[attr-defined]
        assert (
            "--" + f.name.replace("_", "-") in option.opts or option.secondary_opts or f.metadata.get("flags")
        )  # type: ignore[attr-defined]


def test_the_old_flags_still_work():
    dpo = _cli_params("dpo")
    flags = {o for p in dpo.values() for o in (*p.opts, *getattr(p, "secondary_opts", []))}  # type: ignore[attr-defined]
    assert {"--parent", "--snapshot", "--steps", "--lr", "--lora", "--full", "--batch-size"} <= flags
    assert {"--save-steps", "--pairs", "--output-name", "--beta", "--loss-type", "--kl-every"} <= flags
    grpo = {o for p in _cli_params("grpo").values() for o in p.opts}  # type: ignore[attr-defined]
    assert {
        "--reward",
        "--tasks",
        "--verifier",
        "--heldout-every",
        "--heldout-tasks",
        "--num-generations",
    } <= grpo


def test_the_yaml_reference_is_written_from_the_definitions():
    doc = JOB_DOC.read_text(encoding="utf-8")
    assert job_config_doc(doc) == doc, "docs/job-config.md is out of date: run `make docs`"
    for kind in KINDS:
        assert f"## `kind: {kind}`" in doc
        for f in _fields(kind):
            assert f"| `{f.name}` |" in doc, (kind, f.name)
            help_text = f.metadata["help"].replace("|", "\\|").replace("<", "&lt;")
            assert help_text in doc, (kind, f.name)


def test_the_train_forms_starting_values_are_the_configs_defaults():
    with gr.Blocks():
        form = page._job_form(["p"], [page.NEW_SNAPSHOT])
        dpo = page._dpo_box()
        kto = page._kto_box()
    dpo_default = {f.name: (default_of(f), f.metadata["help"]) for f in _fields("dpo")}
    kto_default = {f.name: (default_of(f), f.metadata["help"]) for f in _fields("kto")}
    shown = {
        "max_steps": form.steps,
        "beta": form.beta,
        "lora": form.lora,
        "save_steps": form.save_steps,
        "kl_every": form.kl_every,
        "pairs": form.pairs,
        "loss_type": dpo.loss_type,
    }
    for name, component in shown.items():
        assert component.value == dpo_default[name][0], name
        assert name == "pairs" or component.info == dpo_default[name][1], name
    for name, component in (
        ("desirable_weight", kto.desirable_weight),
        ("undesirable_weight", kto.undesirable_weight),
    ):
        assert (component.value, component.info) == kto_default[name], name
    first = dict(
        zip(
            ("pairs", "max_steps", "lr", "beta", "lora", "save_steps", "kl_every", "loss_type"),
            page._FIRST_FORM[1:],
            strict=True,
        )
    )
    assert {k: v for k, v in first.items() if k != "lr"} == {k: dpo_default[k][0] for k in first if k != "lr"}
    for kind in CONFIG_KINDS:
        beta = next((f for f in _fields(kind) if f.name == "beta"), None)
        assert page._default_beta(kind) == (default_of(beta) if beta else None)


def test_the_reports_options_are_the_configs_defaults():
    """One seed for every report: the job's (42). ``drift_report`` and `vibestudio drift` used 0 before, so a report made
    by hand (`vibestudio drift`) drew other held-out prompts and sampling seeds than the one made after training."""
    fields = report_fields()
    assert tuple(fields) == REPORT_FIELDS
    for name, f in fields.items():
        assert getattr(ReportOptions(), name) == default_of(f), name
    kto = {f.name: default_of(f) for f in _fields("kto")}
    assert ReportOptions.from_config(kto) == ReportOptions(**{k: kto[k] for k in REPORT_FIELDS if k in kto})
    params = inspect.signature(drift_report).parameters
    pairs = {
        "n_prompts": "drift_prompts",
        "max_tokens": "drift_max_tokens",
        "seed": "seed",
        "eval_items": "eval_items",
        "eval_max_tokens": "eval_max_tokens",
        "describe_axes": "describe_axes",
        "describe_prompts": "describe_prompts",
    }
    for param, name in pairs.items():
        assert params[param].default == getattr(DEFAULTS, name), param
    assert DEFAULTS.seed == default_of(next(f for f in _fields("dpo") if f.name == "seed")) == 42
    drift = typer.main.get_command(app).commands["drift"]  # type: ignore[attr-defined]
    by_name = {p.name: p for p in drift.params}
    for param, name in {"prompts": "drift_prompts", "max_tokens": "drift_max_tokens", "seed": "seed"}.items():
        assert by_name[param].default == getattr(DEFAULTS, name), param
        assert f"[default: {getattr(DEFAULTS, name)!r}" in by_name[param].help, param
    # its help may word a setting for the command, never restate it: the same text unless reworded
    assert by_name["max_tokens"].help.startswith(fields["drift_max_tokens"].metadata["help"])


def test_every_kind_is_in_the_reference_and_the_cli():
    group = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    assert set(JOB_KINDS) <= set(group.commands)
