"""A studio shaped by role, against the running app over HTTP (issue 48: an annotator saw all ten tabs, Train and
Admin included, refusals over the sections she may not use, and server paths, job configs and training curves on
her Models page).

- The page-load event that shapes the page (``studio.roles.shape``) shows an annotator the arena, the boards, her
  labels and her agreement, and hides every other tab and the sections that need a researcher; a researcher sees
  all but Admin; an admin all. With login on, those start hidden in the page config every viewer receives.
- No answer an annotator's page gets (the page config, every page-load event, the Models page's answer) holds a
  field docs/security.md reserves for researchers: a contestant's server paths, a job's config, training curves.
- The UI shape is convenience: the server still refuses the events of the hidden tabs to an annotator.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.marked_child import add_marked_child

MARK_PATH = "/srv/shape-model-path-3d9"
MARK_ADAPTER = "/srv/shape-adapter-3d9"
MARK_CONFIG = "SHAPE-CONFIG-3d9"
CHILD = "sec-shape-child"
RESERVED = (MARK_PATH, MARK_ADAPTER, "shape-adapter", MARK_CONFIG, "learning_rate", '"loss"')
ANNOTATOR_TABS = {"Arena", "Leaderboard", "Label", "Agreement", "Models"}
ALL_TABS = ANNOTATOR_TABS | {"Data", "Annotate", "Probes", "Train", "Admin"}
RESEARCHER_SECTIONS = {
    "Add a persona (model + system prompt + decoding)",
    "Edit this prompt's checklist (one line each)",
    "Hold or let into anonymous battles (researchers)",
    "Export for deployment (researchers)",
}
SHAPE = "vibestudio.studio.roles.shape.<locals>.on_load"
MODELS_OPEN = "vibestudio.studio.pages.models.build.<locals>.on_open"  # the Models page's load: the list


@pytest.fixture(scope="module")
def child(studio_app):
    """A trained child whose model and adapter are server paths, with a job config and a loss curve."""
    config = {"learning_rate": 1e-5, "note": MARK_CONFIG}
    return add_marked_child(studio_app.db, CHILD, MARK_PATH, MARK_ADAPTER, config)


def _labels(app) -> dict[int, str]:
    return {c["id"]: c.get("props", {}).get("label") for c in app.config["components"]}


def _shown(app, who: str) -> dict[str, bool]:
    """What the shaping page load answers ``who``: each shaped tab or section by its label, shown or not."""
    i = app.fn_index(SHAPE)
    r = app.call(app.http(who), i, [])
    assert r.ok, r.error
    outputs = app.dependencies()[i]["outputs"]
    labels = _labels(app)
    return {labels[o]: bool(u.get("visible")) for o, u in zip(outputs, r.output, strict=True)}


def test_each_role_sees_the_tabs_it_may_use(studio_app):
    ann, rita, root = (_shown(studio_app, who) for who in ("ann", "rita", "root"))
    tabs = {label for label in ann if label in ALL_TABS}
    assert tabs == ALL_TABS - ANNOTATOR_TABS  # every tab an annotator may not use is shaped
    assert {label for label, shown in ann.items() if shown} == set(), ann
    assert {label for label, shown in rita.items() if not shown} == {"Admin"}, rita
    assert all(root.values()), root
    assert RESEARCHER_SECTIONS <= set(ann) and not any(ann[s] for s in RESEARCHER_SECTIONS)
    # with login on, the page config every viewer receives holds them hidden until the load shows them
    labels = _labels(studio_app)
    by_label = {
        labels[c["id"]]: c.get("props", {})
        for c in studio_app.config["components"]
        if c.get("type") in ("tab", "tabitem", "accordion")
    }
    for label in ALL_TABS - ANNOTATOR_TABS:
        assert by_label[label].get("visible") is False, label
    for label in RESEARCHER_SECTIONS:
        assert by_label[label].get("visible") is False, label
    for label in ANNOTATOR_TABS:
        assert by_label[label].get("visible", True) is not False, label


def _loads(app) -> list[int]:
    return [
        i
        for i, dep in enumerate(app.dependencies())
        if any(t[1] == "load" for t in dep.get("targets") or [])
        and i < len(app.server_fns())
        and getattr(app.server_fns()[i], "fn", None) is not None
    ]


def test_no_reserved_field_reaches_an_annotators_page(studio_app, child):
    http = studio_app.http("ann")
    session = "shape-ann"
    seen = [http.get("/config").text, http.get("/").text]
    for i in _loads(studio_app):
        r = studio_app.call(http, i, session=session)
        seen.append(json.dumps(r.output, default=str) + (r.error or ""))
    show = studio_app.call(http, studio_app.fn_index("models_show"), [child], session=session)
    assert show.ok and child in show.text
    seen.append(show.text)
    text = "\n".join(seen)
    for leak in RESERVED:
        assert leak not in text, leak
    # the data is there: a researcher's answer holds it
    rita = studio_app.http("rita")
    assert studio_app.call(rita, studio_app.fn_index(MODELS_OPEN), [None], session="shape-rita").ok
    full = studio_app.call(rita, studio_app.fn_index("models_show"), [child], session="shape-rita").text
    assert MARK_PATH in full and MARK_ADAPTER in full and "learning_rate" in full and "loss" in full


def test_the_server_still_refuses_what_the_shape_hides(studio_app, child):
    http = studio_app.http("ann")
    for key, data in (
        ("models_release", ["smollm2-plain", "why not"]),
        ("vibestudio.studio.pages.train._config_handlers.<locals>.on_launch", None),
        ("vibestudio.studio.pages.admin.build.<locals>.on_list", None),
    ):
        i = studio_app.fn_index(key)
        r = studio_app.call(http, i, data)
        said = (r.error or "") + r.text
        assert "needs researcher or higher" in said or "needs admin or higher" in said, (key, said[:300])


def test_an_annotators_model_page_drops_the_persona_description() -> None:
    """A persona's description says how its answers read ("opens with praise and emoji"): a blind voter could tell it
    in a battle, so a viewer below researcher does not get it (a browser tour found it on the annotator's page)."""
    from vibestudio.studio.pages.models import for_annotators

    page = {
        "contestant": {
            "public_name": "warm",
            "description": "Opens with praise and emoji.",
            "engine": "llama_cpp",
        },
        "family": {"job": {"id": 1}, "snapshot": "abc"},
        "curves": {"loss": [1.0]},
        "fidelity": {"kept": 1.0},
    }
    shaped = for_annotators(page)
    assert "description" not in shaped["contestant"] and "Opens with praise" not in repr(shaped)
