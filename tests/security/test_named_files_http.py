"""Red team over HTTP, paths a user names: the running studio (login on) attacked as a researcher through the
Train tab's check and launch (a launcher config she just uploaded, one in the launch folder that runs a
command, a rules file that is /dev/zero or a FIFO) and the Arena's persona form (a model that is /dev/zero,
another researcher's unpublished checkpoint). Each is refused naming the field; no job and no contestant is
written, and the command never runs."""

from __future__ import annotations

import html
import os

import pytest
from sqlalchemy import func, select

from vibestudio.db.models import Contestant, Job
from vibestudio.db.session import data_home

pytestmark = pytest.mark.timeout(120)  # without the guards a FIFO blocks the server and /dev/zero eats it


def _count(app, model) -> int:
    with app.db.session() as s:
        return s.scalar(select(func.count(model.id))) or 0


def _said(out) -> str:
    parts = out if isinstance(out, (list, tuple)) else [out]
    return html.unescape(" ".join(str(p) for p in parts))


def _train(app, user: str, text: str) -> tuple[str, str]:
    client = app.client(user)
    checked = _said(client.predict(text, api_name="/train_check"))
    launched = _said(client.predict(text, api_name="/train_launch"))
    return checked, launched


def test_a_researcher_cannot_hand_the_launcher_a_command_over_http(studio_app, tmp_path):
    marker = tmp_path / "ran-on-the-server"
    evil = f"distributed_type: MULTI_GPU\ncommands: ['touch {marker}']\n".encode()
    launch = data_home() / "launch"
    launch.mkdir(parents=True, exist_ok=True)
    (launch / "evil.yaml").write_bytes(evil)
    r = studio_app.http("rita").post("/gradio_api/upload", files={"files": ("accelerate.yaml", evil)})
    assert r.status_code == 200
    [uploaded] = r.json()  # the file she just uploaded, by its server path
    jobs = _count(studio_app, Job)
    for value in (uploaded, "evil.yaml"):
        checked, launched = _train(
            studio_app,
            "rita",
            f"kind: dpo\nlauncher: accelerate\nnum_processes: 2\naccelerate_config: {value}\n",
        )
        assert "accelerate_config" in checked and "Not launched" in launched, (value, checked, launched)
        assert str(marker) not in checked
    assert "'commands' is not allowed" in checked
    assert _count(studio_app, Job) == jobs and not marker.exists()


def test_a_researcher_cannot_make_the_server_read_a_device_or_a_fifo_as_rules(studio_app):
    rules = data_home() / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    os.mkfifo(rules / "pipe.yaml")
    jobs = _count(studio_app, Job)
    for value, why in (("/dev/zero", "must be inside"), (str(rules / "pipe.yaml"), "FIFO")):
        checked, launched = _train(studio_app, "rita", f"kind: dpo\nverdict_rules: {value}\n")
        assert "verdict_rules" in checked and why in checked and "Not launched" in launched, checked
    assert _count(studio_app, Job) == jobs


def _refusal(client, *form) -> str:
    try:
        out = client.predict(*form, api_name="/arena_add_persona")
    except Exception as exc:
        return str(exc)
    said = _said(out)
    assert "⚠️" in said, f"the persona was added: {said}"
    return said


def _form(name: str, engine: str, model: str) -> tuple:
    return (name, engine, model, "", "", 0.7, 8, "", "", "")


def test_a_researcher_cannot_name_a_device_or_another_researchers_checkpoint_as_a_model(studio_app):
    with studio_app.db.session() as s:
        from vibestudio.db.models import User

        rex = s.scalar(select(User.id).where(User.name == "rex"))
        job = Job(kind="dpo", config={"kind": "dpo"}, status="running", created_by=rex)
        s.add(job)
        s.flush()
        jid = job.id
    ckpt = data_home() / "jobs" / str(jid) / "output" / "checkpoint-1"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    rita = studio_app.client("rita")
    before = _count(studio_app, Contestant)
    msg = _refusal(rita, *_form("zero-model", "llama_cpp", "/dev/zero"))
    assert "model" in msg and "must be inside" in msg
    msg = _refusal(rita, *_form("stolen-ckpt", "transformers", str(ckpt)))
    assert "another researcher's unpublished checkpoint" in msg
    assert _count(studio_app, Contestant) == before
