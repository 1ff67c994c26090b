"""A studio shaped by role, in Chromium (issue 48): signed in as each role, the page holds the tabs that role may
use and no red "Error" on any of them, and an annotator's pages hold none of the fields docs/security.md reserves
for researchers (a contestant's server paths, a job's config, training curves), whatever tab she opens.

Before: an annotator saw all ten tabs, Train and Admin included, with refusals over the sections she may not use.
The server's own refusals are tested over HTTP in ``tests/security/test_role_shape.py``.
"""

from __future__ import annotations

import pytest

from tests.helpers.browser import error_badges, settled, sign_in, visible_tabs
from tests.helpers.marked_child import add_marked_child
from tests.helpers.servers import start_server, stop_server

PW = "a long test password"
USERS = {"ann": "annotator", "rita": "researcher", "root": "admin"}
ANNOTATOR = ["Arena", "Leaderboard", "Label", "Agreement", "Models"]
RESEARCHER = ["Arena", "Leaderboard", "Data", "Annotate", "Label", "Agreement", "Probes", "Train", "Models"]
TABS = {"ann": ANNOTATOR, "rita": RESEARCHER, "root": [*RESEARCHER, "Admin"]}
MARK_PATH = "/srv/e2e-shape-model-3d9"
MARK_ADAPTER = "/srv/e2e-shape-adapter-3d9"
MARK_CONFIG = "E2E-SHAPE-CONFIG-3d9"
RESERVED = (MARK_PATH, MARK_ADAPTER, "e2e-shape-adapter", MARK_CONFIG, "learning_rate")
PERSONA_FORM = "Add a persona (model + system prompt + decoding)"


@pytest.fixture(scope="module")
def shaped_server(tmp_path_factory):
    """A studio with login on (an admin, a researcher, an annotator) and a trained child whose model and adapter
    are server paths, with a job config and a loss curve. One server for the three roles: each reads, none
    writes."""
    from vibestudio.accounts import add_user
    from vibestudio.db.session import Database

    home = tmp_path_factory.mktemp("shaped") / "home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    for name, role in USERS.items():
        add_user(db, name, PW, role)
    config = {"learning_rate": 1e-5, "note": MARK_CONFIG}
    add_marked_child(db, "e2e-shape-child", MARK_PATH, MARK_ADAPTER, config)
    db.dispose()
    proc, url = start_server(home)
    yield url
    stop_server(proc)


@pytest.mark.e2e
@pytest.mark.parametrize("who", ["ann", "rita", "root"])
def test_each_role_sees_its_tabs_and_no_error(shaped_server, browser, who):
    page = sign_in(browser, shaped_server, who, PW)
    want = TABS[who]
    try:  # the page load shapes the page; wait until it has, then check it stays so
        page.wait_for_function(
            "want => JSON.stringify([...document.querySelectorAll('button[role=tab]')]"
            ".filter(t => t.offsetParent !== null).map(t => t.innerText.trim())) === JSON.stringify(want)",
            arg=want,
            timeout=60_000,
        )
    except Exception:
        pass
    page.wait_for_timeout(2000)
    assert visible_tabs(page) == want, who
    seen = []
    for tab in want:
        page.get_by_role("tab", name=tab, exact=True).click()
        settled(page)  # the tab's loads and its opening's refresh answer
        assert error_badges(page) == [], (who, tab, error_badges(page))
        if tab == "Arena":
            shown = (
                page.get_by_text(PERSONA_FORM).first.is_visible()
                if page.get_by_text(PERSONA_FORM).count()
                else False
            )
            assert shown == (who != "ann"), (who, "persona form")
        seen.append(page.content())
    if who == "ann":
        text = "\n".join(seen)
        for leak in RESERVED:
            assert leak not in text, leak
