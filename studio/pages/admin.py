"""Admin tab: users and roles, and annotator checks.

Users and roles: list, add, change role, disable or enable, reset a password. Annotator checks are
per-annotator diagnostics that flag votes which look rigged. The robust board sits next to the plain one;
nothing is deleted.

Every handler passes the signed-in user's id to ``accounts``, which refuses anyone but an admin. The tab
being visible to others changes nothing. In the open single-user mode the local operator is the admin.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from vibestudio.accounts import ROLES, AccountError, PermissionDenied, UserInfo, list_users
from vibestudio.accounts import add_user as _add_user
from vibestudio.accounts import set_disabled as _set_disabled
from vibestudio.accounts import set_password as _set_password
from vibestudio.accounts import set_role as _set_role
from vibestudio.standings.annotator_checks import annotator_checks
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import user_error, wire
from vibestudio.studio.render import count, literal, to_html

COLUMNS = ["name", "role", "status", "created", "last login"]
CHECK_COLUMNS = [
    "annotator",
    "votes",
    "agreement",
    "expected",
    "fit z",
    "favoured",
    "identity z",
    "same-answer disagreement",
    "fast share",
    "weight",
    "flags",
]


def _table(users: list[UserInfo]) -> pd.DataFrame:
    rows = [
        {
            "name": u.name,
            "role": u.role,
            "status": "disabled" if u.disabled else ("active" if u.has_password else "no password"),
            "created": str(u.created_at or "")[:19],
            "last login": str(u.last_login_at or "")[:19],
        }
        for u in users
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _mode(ctx: StudioContext) -> str:
    if ctx.access.proxy is not None:
        return (
            "Sign-in is by the **authenticating proxy** (`VIBESTUDIO_AUTH=proxy`): users are created on first "
            "sight; passwords set here are not used."
        )
    if ctx.access.required:
        return "Login is **on**: every page and API call acts as the signed-in user."
    return (
        "Login is **off** (open single-user mode: you are the local admin). Adding a user with a password "
        "turns login on at the next start of the server."
    )


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    gr.Markdown(_mode(ctx), elem_id="admin-mode")
    users = gr.Dataframe(headers=COLUMNS, interactive=False, label="Users", elem_id="admin-users")
    with gr.Row():
        name = gr.Textbox(label="User name", elem_id="admin-name")
        password = gr.Textbox(label="Password (new users, resets)", type="password", elem_id="admin-password")
        role = gr.Dropdown(list(ROLES), value="annotator", label="Role", elem_id="admin-role")
    with gr.Row():
        add = gr.Button("Add user", variant="primary", elem_id="admin-add")
        change = gr.Button("Set role", elem_id="admin-set-role")
        disable = gr.Button("Disable", elem_id="admin-disable")
        enable = gr.Button("Enable", elem_id="admin-enable")
        reset = gr.Button("Set password", elem_id="admin-set-password")
    result = gr.HTML(elem_id="admin-result")

    def run(action, request: gr.Request):  # type: ignore[no-untyped-def]
        try:
            by = ctx.access.user_id(request)
            message = action(by)
            return to_html(f"✅ {literal(message)}"), _table(list_users(ctx.db, by=by))
        except (AccountError, PermissionDenied) as exc:
            raise user_error(exc) from exc

    def on_list(request: gr.Request):
        try:
            return _table(list_users(ctx.db, by=ctx.access.user_id(request)))
        except PermissionDenied as exc:
            raise user_error(exc) from exc

    def on_add(n: str, pw: str, r: str, request: gr.Request):
        return run(lambda by: f"added {_add_user(ctx.db, n, pw, r, by=by).name} ({r})", request)

    def on_role(n: str, r: str, request: gr.Request):
        return run(lambda by: f"{_set_role(ctx.db, n, r, by=by).name} is now {r}", request)

    def on_disable(n: str, request: gr.Request):
        return run(lambda by: f"{_set_disabled(ctx.db, n, True, by=by).name} is disabled", request)

    def on_enable(n: str, request: gr.Request):
        return run(lambda by: f"{_set_disabled(ctx.db, n, False, by=by).name} is enabled", request)

    def on_reset(n: str, pw: str, request: gr.Request):
        return run(lambda by: f"new password set for {_set_password(ctx.db, n, pw, by=by).name}", request)

    # a refusal (no name, a short password, an unknown user) answers in the line under the buttons
    outs = [result, users]
    wire(add.click, on_add, [name, password, role], outs, result, api_name="admin_add_user")
    wire(change.click, on_role, [name, role], outs, result, api_name="admin_set_role")
    wire(disable.click, on_disable, [name], outs, result, api_name="admin_disable_user")
    wire(enable.click, on_enable, [name], outs, result, api_name="admin_enable_user")
    wire(reset.click, on_reset, [name, password], outs, result, api_name="admin_set_password")
    refresh = gr.Button("Refresh", elem_id="admin-refresh")
    refresh.click(on_list, None, [users], api_name="admin_users")

    def on_load(request: gr.Request):
        try:
            return _table(list_users(ctx.db, by=ctx.access.user_id(request)))
        except PermissionDenied:
            return pd.DataFrame(columns=COLUMNS)  # not an admin: an empty table, no error on every page load

    demo.load(on_load, None, [users], api_visibility="private")
    build_checks(ctx)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def checks_table(out: dict) -> pd.DataFrame:  # type: ignore[type-arg]
    rows = [
        {
            "annotator": a["annotator"],
            "votes": a["n_votes"],
            "agreement": _round(a["agreement"], 2),
            "expected": _round(a["expected_agreement"], 2),
            "fit z": _round(a["fit_z"], 1),
            "favoured": a["favoured"],
            "identity z": _round(a["identity_z"], 1),
            "same-answer disagreement": _round(a["same_answer_disagreement"], 2),
            "fast share": _round(a["fast_share"], 2),
            "weight": _round(a["weight"], 3),
            "flags": "; ".join(a["flags"]) or (f"cannot estimate: {a['note']}" if a["note"] else ""),
        }
        for a in out["annotators"]
    ]
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def checks_summary(out: dict) -> str:  # type: ignore[type-arg]
    """The checks' headline as display-path HTML (annotator and contestant names are untrusted)."""
    flagged = [literal(name) for name in out["flagged"]]
    text = f"{count(out['n_votes'], 'rated vote', bold=True)}. "
    text += (
        f"⚠️ **Flagged: {', '.join(flagged)}.** Their votes are kept; the robust board below down-weights them."
        if flagged
        else "No annotator flagged."
    )
    for note in out["notes"]:
        text += f"\n\n- {literal(note)}"
    plain, robust = out.get("plain_board"), out.get("robust_board")
    if plain and robust:
        before = {m["name"]: m["rating"] for m in plain["models"]}
        moved = [
            f"{literal(m['name'])} {before[m['name']]:.0f} → {m['rating']:.0f}"
            for m in robust["models"]
            if m["name"] in before and abs(m["rating"] - before[m["name"]]) >= 5.0
        ]
        text += "\n\nRobust board vs plain board: " + (
            ", ".join(moved) if moved else "no rating moved 5 points or more."
        )
    return to_html(text)


def build_checks(ctx: StudioContext) -> None:
    """The annotator-checks section (admins only)."""
    gr.Markdown(
        "### Annotator checks\nAgreement with everyone else's consensus, votes that follow one contestant's identity, "
        "verdicts on the very same answers, and votes faster than reading. Flags are advice: nothing is deleted."
    )
    run = gr.Button("Check annotators", elem_id="admin-check-annotators")
    summary = gr.HTML(elem_id="admin-checks-summary")
    table = gr.Dataframe(headers=CHECK_COLUMNS, interactive=False, elem_id="admin-checks-table")

    def on_check(request: gr.Request, progress=gr.Progress()):  # type: ignore[no-untyped-def]
        progress(0.1, desc="reading votes and fitting the consensus")
        try:
            out = annotator_checks(ctx.db, by=ctx.access.user_id(request))
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        return checks_summary(out), checks_table(out)

    run.click(on_check, None, [summary, table], api_name="admin_annotator_checks")
