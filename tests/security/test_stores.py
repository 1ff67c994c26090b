"""Downloads checked like every other read, and the red team's marker in every store.

- A label export is offered as a link to ``/studio/download/<token>/<name>`` (``studio.downloads``): a random
  token, and a route that checks the role and the owner (the researcher who exported it, or an admin). Gradio's
  file routes serve nothing (``studio.downloads.FileRouteGuard``), uploads included.
- The red team plants one marker in every store the studio keeps (an export, an upload, a snapshot, a task set,
  a report's files, a job's log and config) and asks for each, by every route that serves files and through
  the Train tab's reads, as nobody, an annotator, another researcher and another site's page: no answer holds
  the marker. The owner still gets their export.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import httpx
from sqlalchemy import select

from tests.security.conftest import OTHER_ORIGIN

MARK = "STORE-MARKER-" + secrets.token_hex(4)


def _labels(app, tmp_path: Path, queue: str) -> None:
    from vibestudio.annotation.formats import import_file

    rows = tmp_path / f"{queue}.jsonl"
    rows.write_text(
        json.dumps({"prompt": f"{MARK} say hi", "chosen": f"{MARK} hi", "rejected": "no"})
        + "\n"
        + json.dumps({"prompt": f"{MARK} count", "chosen": "1, 2", "rejected": "3"})
        + "\n"
    )
    with app.db.session() as s:
        import_file(s, rows, "trl", queue=queue)


def _export(app, who: str, queue: str) -> str:
    _text, link = app.client(who).predict(
        [queue], "trl", "JSONL", ["import"], False, "each", api_name="/labels_export"
    )
    m = re.search(r'href="(/studio/download/[^"]+)"', link or "")
    assert m, link
    return m.group(1)


def _uid(app, name: str) -> int:
    from vibestudio.db.models import User

    with app.db.session() as s:
        return s.scalar(select(User.id).where(User.name == name))


def _attackers(app) -> dict[str, httpx.Client]:
    """Nobody, an annotator, another researcher, and another site's page holding rita's cookie."""
    rita = app.http("rita")
    foreign = httpx.Client(
        base_url=app.url, cookies=rita.cookies, headers={"Origin": OTHER_ORIGIN}, timeout=30
    )
    return {"nobody": app.http(None), "ann": app.http("ann"), "rex": app.http("rex"), "foreign": foreign}


def test_an_export_is_downloaded_by_its_owner_and_an_admin_only(studio_app, tmp_path):
    _labels(studio_app, tmp_path, "sec-dl")
    href = _export(studio_app, "rita", "sec-dl")
    token = href.split("/")[3]
    assert len(token) >= 22 and token not in _export(studio_app, "rita", "sec-dl")  # random, new each time
    got = studio_app.http("rita").get(href)
    assert got.status_code == 200 and MARK in got.text, (got.status_code, got.text[:200])
    assert got.headers["content-disposition"].startswith("attachment")
    assert studio_app.http("root").get(href).status_code == 200  # an admin
    refusals = {who: c.get(href) for who, c in _attackers(studio_app).items()}
    assert {who: r.status_code for who, r in refusals.items()} == {
        "nobody": 401,
        "ann": 403,
        "rex": 403,
        "foreign": 403,
    }
    assert "belongs to the user who made it" in refusals["rex"].json()["detail"]
    assert "needs researcher" in refusals["ann"].json()["detail"]
    for r in refusals.values():
        assert MARK not in r.text and token not in r.text
    guessed = href.replace(token, secrets.token_urlsafe(16))
    r = studio_app.http("rita").get(guessed)
    assert r.status_code == 404 and "no such download" in r.text and "sec-dl" not in r.text


def test_the_export_is_no_longer_a_gradio_file(studio_app, tmp_path):
    from vibestudio.db.session import data_home

    _labels(studio_app, tmp_path, "sec-file")
    href = _export(studio_app, "rita", "sec-file")
    [path] = [p for p in (data_home() / "exports").rglob("*.jsonl") if p.parent.name == href.split("/")[3]]
    rita = studio_app.http("rita")
    for url in _file_urls(path):
        r = rita.get(url)
        assert r.status_code in (403, 404) and MARK not in r.text, (url, r.status_code)


def _file_urls(path: Path) -> list[str]:
    """Every spelling of Gradio's file routes for ``path``."""
    p = str(path)
    return [
        f"/gradio_api/file={p}",
        f"/file={p}",
        f"//gradio_api/file={p}",
        f"/gradio_api/file={p.replace('/', '//')}",
        "/gradio_api/file=" + p.replace("/", "%2F"),
    ]


def _upload(app, who: str, body: bytes) -> str:
    r = app.http(who).post("/gradio_api/upload", files={"files": ("notes.jsonl", body)})
    assert r.status_code == 200, r.text[:300]
    return r.json()[0]


def _plant(app, tmp_path: Path) -> tuple[dict[str, Path], str, int]:
    """One marker in every store: (store -> a file that holds it), the export's link, rita's job id."""
    from vibestudio.annotation.formats import ExportSpec, snapshot_from_labels
    from vibestudio.db.models import Job
    from vibestudio.db.session import data_home
    from vibestudio.training.tasks import import_task_file

    home = data_home()
    _labels(app, tmp_path, "sec-stores")
    href = _export(app, "rita", "sec-stores")
    token = href.split("/")[3]
    stores = {"export": next((home / "exports" / token).glob("*.jsonl"))}
    stores["upload"] = Path(_upload(app, "rita", f'{{"prompt": "{MARK}"}}\n'.encode()))
    with app.db.session() as s:
        snap = snapshot_from_labels(s, ExportSpec("trl", True, ["sec-stores"], ("import",)), user_id=None)
    stores["snapshot"] = Path(snap.path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(json.dumps({"prompt": f"{MARK} {k} + 2 =", "answer": str(k + 2)}) + "\n" for k in range(40))
    )
    import_task_file(app.db, tasks, "sec-tasks", heldout_fraction=0.5)  # 40 tasks: never an empty split
    copied = [f for f in home.rglob("*") if f.is_file() and MARK in _read(f) and "tasks" in str(f)]
    stores["task set"] = copied[0] if copied else tasks
    report = home / "reports" / "999" / "answers.jsonl"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"answer": MARK}) + "\n")
    stores["report"] = report
    with app.db.session() as s:
        job = Job(
            kind="dpo", config={"kind": "dpo", "note": MARK}, status="failed", created_by=_uid(app, "rita")
        )
        s.add(job)
        s.flush()
        jid = job.id
    log = home / "jobs" / str(jid) / "train.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"step 1 {MARK}\n")
    with app.db.session() as s:
        s.get(Job, jid).log_path = str(log)
    stores["job log"] = log
    return stores, href, jid


def _read(f: Path) -> str:
    try:
        return f.read_text(errors="replace")[:100_000]
    except OSError:
        return ""


#: The Train tab's reads of a job, by function, with the input that picks the job.
JOB_READS = (
    "vibestudio.studio.pages.train._job_handlers.<locals>.on_tick",
    "vibestudio.studio.pages.train._job_handlers.<locals>.on_clone",
    "vibestudio.studio.pages.train._load_handler.<locals>.on_load",
)


def test_no_store_hands_its_marker_to_anyone_but_its_owner(studio_app, tmp_path):
    stores, href, jid = _plant(studio_app, tmp_path)
    for store, path in stores.items():
        assert MARK in _read(path), store  # planted where the studio keeps it
    leaks = []
    for who, c in _attackers(studio_app).items():
        for store, path in stores.items():
            for url in _file_urls(path)[:2]:  # every spelling is tried on the export (the test above)
                r = c.get(url)
                if MARK in r.text or r.status_code == 200:
                    leaks.append((who, store, url, r.status_code))
        r = c.get(href)
        if MARK in r.text or r.status_code == 200:
            leaks.append((who, "export link", href, r.status_code))
        if who == "nobody":
            continue
        for key in JOB_READS:
            i = studio_app.fn_index(key)
            data = studio_app.inputs_for(i)
            by_id = {x["id"]: x for x in studio_app.config["components"]}
            for k, comp in enumerate(studio_app.dependencies()[i]["inputs"]):
                if by_id[comp].get("props", {}).get("elem_id") == "train-job":
                    data[k] = jid
            res = studio_app.call(c, i, data)
            if MARK in json.dumps(res.output, default=str) + (res.error or ""):
                leaks.append((who, "job read", key, res.status))
    assert not leaks, leaks
    # the owner still reads their own job and export
    own = studio_app.http("rita")
    assert MARK in own.get(href).text
    tick = studio_app.fn_index(JOB_READS[0])
    data = studio_app.inputs_for(tick)
    by_id = {x["id"]: x for x in studio_app.config["components"]}
    for k, comp in enumerate(studio_app.dependencies()[tick]["inputs"]):
        if by_id[comp].get("props", {}).get("elem_id") == "train-job":
            data[k] = jid
    assert MARK in json.dumps(studio_app.call(own, tick, data).output, default=str)
