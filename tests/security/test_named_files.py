"""Paths a user names, attacked through the services the web app calls (``check_config``, ``launch_config``,
``add_personas``, ``import_persona_file``, the job launch and the model export) as a researcher would: a
launcher config that runs a command or that the user just uploaded, a rules or rubric file that is a device, a
FIFO, a link out of its folder or a huge file, a persona model that is a device, and another researcher's
unpublished checkpoint. Each is refused naming its field, nothing is written, and no command runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select

from vibestudio.accounts import add_user
from vibestudio.arena.personas import PersonaError, add_personas, import_persona_file, spec_from_mapping
from vibestudio.arena.registry import ContestantSpec, RegistryError, get_contestant, register
from vibestudio.db.models import Checkpoint, Contestant, Job
from vibestudio.db.session import data_home
from vibestudio.training.jobs.config import ConfigError, DPOJobConfig, save_config
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.launcher import LaunchConfigError
from vibestudio.training.jobs.runner import job_command
from vibestudio.training.jobs.service import check_config, launch_config

pytestmark = pytest.mark.timeout(60)  # without the guards a FIFO blocks and /dev/zero is read forever


@pytest.fixture
def users(db) -> dict[str, int]:
    return {
        n: add_user(db, n, "a long test password", r).id
        for n, r in (("rita", "researcher"), ("rex", "researcher"), ("root", "admin"))
    }


def _folder(name: str) -> Path:
    folder = data_home() / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _errors(db, uid, **fields) -> dict[str, str]:
    check = check_config(db, yaml.safe_dump({"kind": "dpo", **fields}), user_id=uid)
    return {e.field: e.message for e in check.errors}


def _jobs(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id))) or 0


def _contestants(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Contestant.id))) or 0


# ---- the launcher ------------------------------------------------------------------------------------------------
def test_a_launcher_config_that_runs_a_command_is_refused_and_runs_nothing(db, users, tmp_path):
    marker = tmp_path / "ran"
    evil = f"distributed_type: MULTI_GPU\ncommands: ['touch {marker}']\ncommand_file: /tmp/x.sh\n"
    (_folder("launch") / "evil.yaml").write_text(evil)
    # what the user just uploaded: a file outside the launch folder
    uploaded = tmp_path / "upload" / "accelerate.yaml"
    uploaded.parent.mkdir()
    uploaded.write_text(evil)
    for value in ("evil.yaml", str(uploaded), "../../upload/accelerate.yaml", "/dev/zero"):
        fields = {"launcher": "accelerate", "accelerate_config": value}
        errors = _errors(db, users["rita"], **fields)
        assert "accelerate_config" in errors, (value, errors)
        assert str(marker) not in errors["accelerate_config"]
        with pytest.raises(JobError, match="accelerate_config"):
            launch_config(db, yaml.safe_dump({"kind": "dpo", **fields}), created_by=users["rita"])
    assert _jobs(db) == 0 and not marker.exists()


def test_a_saved_config_cannot_hand_the_launcher_a_file_either(tmp_path):
    """A config written before the rule (or by hand) is checked again when its job is launched: the launcher
    gets the studio's own file, rebuilt from the allowed keys, never the one the config names."""
    folder = tmp_path / "job"
    (_folder("launch") / "evil.yaml").write_text("distributed_type: MULTI_GPU\ncommands: ['id']\n")
    (_folder("launch") / "ddp.yaml").write_text("distributed_type: MULTI_GPU\nmixed_precision: bf16\n")
    for value in ("evil.yaml", str(tmp_path / "elsewhere.yaml")):
        (tmp_path / "elsewhere.yaml").write_text("distributed_type: MULTI_GPU\n")
        cfg = DPOJobConfig(launcher="accelerate", num_processes=2, accelerate_config=value)  # not validated
        path = save_config(cfg, folder / "config.yaml")
        with pytest.raises((ConfigError, LaunchConfigError), match="accelerate_config"):
            job_command(str(path), 7)
    path = save_config(DPOJobConfig(launcher="accelerate", num_processes=2, accelerate_config="ddp.yaml"),
                       folder / "config.yaml")  # fmt: skip
    argv = job_command(str(path), 7)
    given = Path(argv[argv.index("--config_file") + 1])
    assert given == folder / "accelerate.yaml"  # the studio's file, in the job's folder
    assert yaml.safe_load(given.read_text())["num_processes"] == 2


# ---- rules and rubrics --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["verdict_rules", "score_rubric"])
def test_a_rules_or_rubric_path_that_is_a_device_fifo_link_or_huge_file_is_refused(
    db, users, tmp_path, field
):
    folder = _folder("rules" if field == "verdict_rules" else "rubrics")
    os.mkfifo(folder / "pipe.yaml")
    (folder / "out.yaml").symlink_to(tmp_path / "secret.yaml")
    (tmp_path / "secret.yaml").write_text("rules: []\n")
    with open(folder / "huge.yaml", "wb") as fh:
        fh.truncate(4 * 2**30)  # sparse
    kind = {} if field == "verdict_rules" else {"kind": "kto", "score_criterion": "overall"}
    said = {
        "/dev/zero": "must be inside",
        str(folder / "pipe.yaml"): "FIFO",
        str(folder / "out.yaml"): "leads outside",
        str(folder / "huge.yaml"): "larger than",
        str(tmp_path / "secret.yaml"): "must be inside",
    }
    for value, why in said.items():
        errors = _errors(db, users["rita"], **kind, **{field: value})
        assert why in errors.get(field, ""), (value, errors)
        assert value not in errors[field]
    assert _jobs(db) == 0


# ---- personas ----------------------------------------------------------------------------------------------------
def _persona(db, uid, **fields):
    spec = spec_from_mapping({"name": "evil", **fields}, "form")
    with db.session() as s:
        add_personas(s, [spec], "form", user_id=uid)


@pytest.mark.parametrize("engine", ["llama_cpp", "transformers"])
def test_a_persona_model_or_adapter_that_is_a_device_fifo_or_link_out_is_refused(db, users, tmp_path, engine):
    models = _folder("models")
    os.mkfifo(models / "pipe.gguf")
    (models / "out.gguf").symlink_to("/dev/zero")
    for value in ("/dev/zero", str(models / "pipe.gguf"), str(models / "out.gguf"), str(tmp_path)):
        with pytest.raises(PersonaError, match="model: "):
            _persona(db, users["rita"], engine=engine, model=value)
    with pytest.raises(PersonaError, match="adapter: "):
        _persona(
            db, users["rita"], engine="transformers", model="builtin:smollm2-135m-instruct-hf", adapter="/dev"
        )
    upload = tmp_path / "p.yaml"  # the same through a personas file
    upload.write_text(f"name: evil\nengine: {engine}\nmodel: /dev/zero\n")
    with db.session() as s, pytest.raises(PersonaError, match="model: "):
        import_persona_file(s, upload, user_id=users["rita"])
    assert _contestants(db) == 0


def _checkpoint(db, owner: int) -> tuple[int, Path]:
    with db.session() as s:
        job = Job(kind="dpo", config={"kind": "dpo"}, status="running", created_by=owner)
        s.add(job)
        s.flush()
        jid = job.id
    ckpt = _folder("jobs") / str(jid) / "output" / "checkpoint-2"
    ckpt.mkdir(parents=True)
    for name in ("adapter_config.json", "config.json"):
        (ckpt / name).write_text("{}")
    (ckpt / "adapter_model.safetensors").write_bytes(b"\0" * 64)
    return jid, ckpt


def test_another_researchers_unpublished_checkpoint_is_not_a_persona_or_base_model(db, users):
    jid, ckpt = _checkpoint(db, users["rex"])
    hf = "builtin:smollm2-135m-instruct-hf"
    for fields in ({"adapter": str(ckpt)}, {"model": str(ckpt)}):
        with pytest.raises(PersonaError, match="another researcher's unpublished checkpoint"):
            _persona(db, users["rita"], engine="transformers", **{"model": hf, **fields})
    errors = _errors(db, users["rita"], base_model=str(ckpt))
    assert "another researcher's unpublished checkpoint" in errors["base_model"]
    with pytest.raises(JobError, match="base_model"):
        launch_config(db, yaml.safe_dump({"kind": "dpo", "base_model": str(ckpt)}), created_by=users["rita"])
    assert _contestants(db) == 0 and _jobs(db) == 1
    # its owner and an admin may; and anyone once it is published as a contestant
    for who, name in ((users["rex"], "rex-own"), (users["root"], "admin-look")):
        spec = spec_from_mapping(
            {"name": name, "engine": "transformers", "model": hf, "adapter": str(ckpt)}, "f"
        )
        with db.session() as s:
            add_personas(s, [spec], "form", user_id=who)
        assert "base_model" not in _errors(db, who, base_model=str(ckpt))
    with db.session() as s:
        s.add(Checkpoint(job_id=jid, step=2, path=str(ckpt), contestant_id=get_contestant(s, "rex-own").id))
    _persona(db, users["rita"], engine="transformers", model=hf, adapter=str(ckpt / "."))
    with db.session() as s:
        assert get_contestant(s, "evil").adapter_ref == str(ckpt.resolve())  # stored as checked


def test_a_model_under_the_operators_folders_is_stored_resolved(db, users, tmp_path, monkeypatch):
    shared = tmp_path / "shared-models"
    shared.mkdir()
    (shared / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("VIBESTUDIO_MODEL_DIRS", str(shared))
    _persona(db, users["rita"], engine="llama_cpp", model="m.gguf")
    with db.session() as s:
        assert get_contestant(s, "evil").model_ref == str((shared / "m.gguf").resolve())


def test_an_export_never_copies_a_device_even_from_an_old_row(db, users, tmp_path):
    """A contestant stored before the rule (or by the operator) that names /dev/zero is refused when read."""
    from vibestudio.training.publishing.model_export import export

    with db.session() as s:
        register(s, ContestantSpec("old-zero", engine="llama_cpp", model_ref="/dev/zero"))
    with pytest.raises(RegistryError, match="device, FIFO or socket"):
        export(db, "old-zero", "gguf", tmp_path / "out", users["rita"])
    assert not list((tmp_path / "out").glob("*"))
