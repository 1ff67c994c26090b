"""The red-team suite's target: the real studio app, served over HTTP on a free port with login on.

``studio_app`` (one per test session) builds the app the way ``vibestudio serve`` does (``studio.app.serve``, the
same middleware, Gradio's own login) in this process, over a fresh data home, with one user of each role:
``root`` (admin), ``rita`` and ``rex`` (researchers), ``ann`` (annotator), plus ``gone`` (a disabled admin).
Tests attack it as a browser or a script would:

- ``studio_app.client(name)``: a ``gradio_client.Client`` signed in as that user (``None``: not signed in).
- ``studio_app.http(name, origin=...)``: a raw ``httpx.Client`` signed in through ``/login`` (``None``: not signed
  in), sending ``Origin`` (another site's page) when asked.
- ``studio_app.call(http, fn_index, data)``: one event by its index through the queue, as the page does (this is
  how a hidden ``api_visibility="private"`` event is reached), returning ``Result(ok, output, error, status)``.
- ``studio_app.counts()``: rows per table, to assert that nothing was written.

A test that needs a user it may change (a password, a disabled flag) creates its own with ``studio_app.user``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

PW = "a long test password"
USERS = {"root": "admin", "rita": "researcher", "rex": "researcher", "ann": "annotator"}
OTHER_ORIGIN = "https://evil.example"


@dataclass
class Result:
    ok: bool
    output: Any = None
    error: str | None = None
    status: int = 200

    @property
    def text(self) -> str:
        return json.dumps(self.output, default=str) if self.output is not None else ""


@dataclass
class StudioApp:
    url: str
    ctx: Any
    demo: Any
    home: Path
    _clients: dict[str, Any] = field(default_factory=dict)

    @property
    def db(self) -> Any:
        return self.ctx.db

    @property
    def host(self) -> str:
        return self.url.split("://", 1)[1]

    def user(self, name: str, role: str = "annotator", password: str = PW) -> str:
        from vibestudio.accounts import add_user

        add_user(self.db, name, password, role)
        return name

    def client(self, name: str | None) -> Any:
        """A ``gradio_client.Client`` signed in as ``name`` (cached per name)."""
        from gradio_client import Client

        if name not in self._clients:
            auth = (name, PW) if name else None
            self._clients[name or ""] = Client(self.url, auth=auth, verbose=False, download_files=False)
        return self._clients[name or ""]

    def http(self, name: str | None = None, origin: str | None = None, password: str = PW) -> httpx.Client:
        """A raw HTTP client, signed in as ``name`` through the login form (as a browser does)."""
        headers = {"Origin": origin} if origin else {}
        c = httpx.Client(base_url=self.url, headers=headers, timeout=60, follow_redirects=False)
        if name is not None:
            r = c.post("/login", data={"username": name, "password": password}, headers={"Origin": self.url})
            assert r.status_code == 200, (name, r.status_code, r.text[:200])
        return c

    @property
    def config(self) -> dict[str, Any]:
        return getattr(self.demo, "config", None) or self.demo.get_config_file()

    def dependencies(self) -> list[dict[str, Any]]:
        return self.config["dependencies"]

    def inputs_for(self, fn_index: int) -> list[Any]:
        """Each input component's initial value (what a fresh page would send)."""
        by_id = {c["id"]: c for c in self.config["components"]}
        dep = self.dependencies()[fn_index]
        return [by_id[i].get("props", {}).get("value") for i in dep["inputs"]]

    def fn_index(self, key: str) -> int:
        """The index of the first event whose function is ``key`` (``module.qualname``) or whose API name is it."""
        for i, block_fn in enumerate(self.server_fns()):
            f = getattr(block_fn, "fn", None)
            name = f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', '')}"
            if key in (name, getattr(block_fn, "api_name", None)):
                return i
        raise KeyError(key)

    def server_fns(self) -> list[Any]:
        fns = self.demo.fns
        return list(fns.values()) if isinstance(fns, dict) else list(fns)

    def call(
        self,
        http: httpx.Client,
        fn_index: int,
        data: list[Any] | None = None,
        timeout: float = 60,
        session: str | None = None,
    ) -> Result:
        """Run event ``fn_index`` through the queue (join, then read the event stream) and return its result.
        Calls with the same ``session`` share the page's state (``gr.State``), as one browser tab does."""
        session = session or secrets.token_hex(8)
        body = {
            "data": self.inputs_for(fn_index) if data is None else data,
            "fn_index": fn_index,
            "session_hash": session,
            # a select event's data, as a click on a table's first cell sends it
            "event_data": {"index": [0, 0], "value": None, "selected": True}
            if self.dependencies()[fn_index].get("collects_event_data")
            else None,
            "trigger_id": None,
        }
        if self.dependencies()[fn_index].get("queue") is False:  # events that skip the queue: one POST
            r = http.post("/gradio_api/run/predict", json=body)
            if r.status_code != 200:
                return Result(False, None, r.text[:500], r.status_code)
            out = r.json()
            return Result("error" not in out, out.get("data"), out.get("error"))
        r = http.post("/gradio_api/queue/join", json=body)
        if r.status_code != 200:
            return Result(False, None, r.text[:500], r.status_code)
        deadline = time.monotonic() + timeout
        with http.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
            if stream.status_code != 200:
                return Result(False, None, stream.read().decode()[:500], stream.status_code)
            for line in stream.iter_lines():
                if time.monotonic() > deadline:
                    return Result(False, None, "timed out", 0)
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    out = msg.get("output") or {}
                    if msg.get("success"):
                        return Result(True, out.get("data"))
                    return Result(False, out, str(out.get("error") or out)[:1000])
                if msg.get("msg") in ("unexpected_error", "close_stream"):
                    return Result(False, msg, str(msg.get("message") or msg)[:1000])
        return Result(False, None, "stream ended without a result", 0)

    def counts(self) -> dict[str, int]:
        from vibestudio.db import models

        tables = [
            getattr(models, n)
            for n in (
                "User",
                "Contestant",
                "PromptSet",
                "Prompt",
                "Battle",
                "Vote",
                "DatasetSnapshot",
                "Job",
                "AnnotationQueue",
                "QueueItem",
                "Assignment",
                "Label",
            )
            if hasattr(models, n)
        ]
        with self.db.session() as s:
            return {t.__name__: s.scalar(select(func.count()).select_from(t)) or 0 for t in tables}


@pytest.fixture(scope="session")
def studio_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StudioApp]:
    import os

    from tests.helpers.servers import free_port
    from vibestudio.accounts import add_user, set_disabled
    from vibestudio.common.settings import Settings
    from vibestudio.studio.app import serve
    from vibestudio.studio.context import build_context

    home = tmp_path_factory.mktemp("security") / "home"
    home.mkdir()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    settings = Settings(
        home=home, auth="on", max_new_tokens=4, database_url=f"sqlite:///{home / 'studio.sqlite'}"
    )
    from vibestudio.db.session import Database

    seed = Database(settings.database_url)
    seed.migrate()
    for name, role in USERS.items():
        add_user(seed, name, PW, role)
    add_user(seed, "gone", PW, "admin")
    set_disabled(seed, "gone", True)
    seed.dispose()
    ctx = build_context(settings)
    demo, url = serve(host="127.0.0.1", port=free_port(), block=False, ctx=ctx)
    app = StudioApp(url.rstrip("/"), ctx, demo, home)
    try:
        yield app
    finally:
        demo.close()
        ctx.db.dispose()
