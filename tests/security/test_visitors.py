"""What a visitor or a lower role learns, against the running app over HTTP: a visitor's login page holds no API
description and no contestant name; Gradio's monitoring, token and run-history routes answer nobody, not even an
admin; no spelling of Gradio's file routes hands out another user's upload; an annotator's Models page and its API
answer hold no server path, job config or training curve, which a researcher's do. Guards: ``studio.gate``,
``studio.downloads.FileRouteGuard``, ``studio.pages.models.for_annotators``."""

from __future__ import annotations

import pytest

from tests.helpers.marked_child import add_marked_child
from vibestudio.db.models import Contestant

MARK_PATH = "/srv/marker-model-path-8c1"
MARK_ADAPTER = "/srv/marker-adapter-8c1"
MARK_LR = 0.000123456
CHILD = "sec-visitor-child"


def test_the_login_page_tells_a_visitor_nothing(studio_app):
    with studio_app.db.session() as s:
        names = [n for (n,) in s.query(Contestant.public_name)]
    assert names
    r = studio_app.http(None).get("/")
    assert r.status_code == 200 and "window.gradio_api_info = null;" in r.text
    for leak in ("named_endpoints", "arena_send", "admin_set_role", "models_show", *names):
        assert leak not in r.text, leak
    for route in ("/config", "/gradio_api/info", "/openapi.json", "/gradio_api/openapi.json"):
        assert studio_app.http(None).get(route).status_code == 401, route
    # a signed-in user's page still has what the page needs
    page = studio_app.http("ann").get("/")
    assert page.status_code == 200 and "named_endpoints" in page.text and "arena_send" in page.text


@pytest.mark.parametrize(
    "route",
    [
        "/monitoring",
        "/monitoring/summary",
        "/monitoring/any-key",
        "/gradio_api/token",
        "/gradio_api/token/",
        "/gradio_api/runs",
        "/gradio_api/run-history/buckets",
        "/gradio_api/run-history/records",
    ],
)
def test_side_routes_answer_nobody(studio_app, route):
    for who in ("root", "ann", None):
        c = studio_app.http(who)
        r = c.get(route)
        assert r.status_code == 404, (who, route, r.status_code)
        for token in c.cookies.values():  # the HttpOnly session token never comes back in a body
            assert token not in r.text
        assert "avg_duration" not in r.text and "function" not in r.text.lower()


def test_no_spelling_of_the_file_route_serves_an_upload(studio_app):
    r = studio_app.http("rita").post(
        "/gradio_api/upload", files={"files": ("notes.jsonl", b"UPLOAD-MARK-8c1\n")}
    )
    assert r.status_code == 200
    path = r.json()[0]
    ann = studio_app.http("ann")
    for url in (f"/gradio_api/file={path}", f"/gradio_api/file/{path}", f"/file/{path}", f"/file={path}"):
        got = ann.get(url)
        assert got.status_code in (403, 404) and "UPLOAD-MARK" not in got.text, (url, got.status_code)


@pytest.fixture(scope="module")
def trained_child(studio_app):
    """A hidden trained child whose model and adapter are server paths, with a job config and a loss curve."""
    config = {"learning_rate": MARK_LR, "beta": 0.1}
    return add_marked_child(studio_app.db, CHILD, MARK_PATH, MARK_ADAPTER, config)


def _models_show(app, who: str, name: str) -> str:
    """The Models page's answer for ``name`` as ``who`` sees it, through the queue as the page asks it (the page's
    load first, which offers the contestants made since the app started)."""
    http, session = app.http(who), f"models-{who}"
    assert app.call(
        http, app.fn_index("vibestudio.studio.pages.models.build.<locals>.on_open"), [None], session=session
    ).ok
    out = app.call(http, app.fn_index("models_show"), [name], session=session)
    assert out.ok, out.error
    return out.text


def test_an_annotators_models_page_has_no_paths_configs_or_curves(studio_app, trained_child):
    seen = _models_show(studio_app, "ann", trained_child)
    assert trained_child in seen
    for leak in (MARK_PATH, MARK_ADAPTER, "marker-", str(MARK_LR), "1.23456e-04", "learning_rate", '"loss"'):
        assert leak not in seen, leak
    # the same page for a researcher shows them: the page is shaped by role, the data is there
    full = _models_show(studio_app, "rita", trained_child)
    assert MARK_PATH in full and MARK_ADAPTER in full and "learning_rate" in full and "loss" in full
