"""Downloads checked like every other read: the one route that serves a file of the data home.

It serves a file only after the role and the owner are checked, as for every handler. Gradio's own file
routes (``/gradio_api/file=...``) serve nothing at all (``FileRouteGuard``). The app also gives them no
``allowed_paths``. Its upload cache is a per-process folder outside the data home (``studio.uploads``).

A file the studio offers for download (a label export) goes into a folder of its own,
``<home>/exports/<token>/``. Beside it is a record of who may read it (``.offer.json``): the owner's user
id and the role the read needs. ``<token>`` is 128 random bits, so a name cannot be guessed. Knowing it is
still not enough.

``GET /studio/download/<token>/<name>`` answers the file only when the request's user holds the role and
is the owner or an admin. The user comes from the session cookie, or the proxy's user in single sign-on.
In the open single-user mode (loopback only) the user is the local operator, who may read everything.
Every refusal says what was refused and what would admit it. It never names the token, a path or a name
from the request.

``offer`` (a page hands it the file it wrote) and ``open_offer`` (the check) are plain functions. The
route is a thin layer over ``open_offer``.

**Exports expire, and each user has a share** (``sweep_expired``, ``make_room``).
- A download folder is removed once it is older than ``VIBESTUDIO_EXPORT_HOURS``, by its record's time,
  else the folder's. This runs at start-up (``install``) and whenever a new export begins.
- A signed-in user may hold at most ``VIBESTUDIO_EXPORT_MB_PER_USER`` of unexpired downloads. A folder
  counts from the moment ``new_folder`` makes it, so exports under way count too.
- A new export is refused when they hold that much already. One that brings them past it is removed and
  refused (``ExportRefused``).
The local operator (``owner_id=None``) has no cap.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vibestudio.accounts import PermissionDenied, get_user, require_role
from vibestudio.common.paths import OutsideRoot, under
from vibestudio.db.session import Database, data_home
from vibestudio.studio.origins import send_refusal

ROUTE = "/studio/download"
RECORD = ".offer.json"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{22,64}$")


class NotOffered(LookupError):
    """No such download (unknown token, another name, or a file since removed)."""


class ExportRefused(PermissionError):
    """A user's downloads would pass their share (``VIBESTUDIO_EXPORT_MB_PER_USER``); the message says so."""


@dataclass
class Offer:
    """A file offered for download: the URL a page links to, and the file's name."""

    url: str
    name: str
    token: str


def downloads_dir() -> Path:
    """The data home's ``exports`` folder: one sub-folder per offered download."""
    folder = data_home() / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def new_folder(owner_id: int | None = None) -> tuple[str, Path]:
    """A fresh ``(token, folder)`` under the downloads folder, for a page to write its file into, after
    ``make_room`` (expired downloads removed; refused when ``owner_id`` already holds their share). The folder
    is recorded as ``owner_id``'s at once (with no file to offer yet), so an export under way counts."""
    make_room(owner_id)
    token = secrets.token_urlsafe(16)
    folder = under(downloads_dir(), token)
    folder.mkdir(parents=True)
    _write_record(folder, {"owner_id": owner_id, "role": "researcher", "name": None})
    return token, folder


def _write_record(folder: Path, record: dict[str, Any]) -> None:
    (folder / RECORD).write_text(json.dumps({**record, "created": time.time()}), encoding="utf-8")


def _record(folder: Path) -> dict[str, Any]:
    try:
        got = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def _folder_bytes(folder: Path) -> int:
    total = 0
    for f in folder.rglob("*"):
        try:
            if f.is_file() and not f.is_symlink():
                total += f.stat().st_size
        except OSError:
            continue
    return total


def sweep_expired(ttl_s: float | None = None, now: float | None = None) -> int:
    """Remove the download folders older than ``ttl_s`` (default ``VIBESTUDIO_EXPORT_HOURS``; 0 keeps all);
    returns how many."""
    from vibestudio.common.settings import get_settings

    if ttl_s is None:
        ttl_s = get_settings().export_hours * 3600
    if ttl_s <= 0:
        return 0
    cutoff = (time.time() if now is None else now) - ttl_s
    removed = 0
    for folder in downloads_dir().iterdir():
        if not folder.is_dir() or folder.is_symlink() or not _TOKEN.match(folder.name):
            continue
        try:
            born = float(_record(folder).get("created") or folder.stat().st_mtime)
        except (OSError, TypeError, ValueError):
            continue
        if born < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def held_bytes(owner_id: int) -> int:
    """Bytes of the unexpired downloads (and exports under way) recorded as ``owner_id``'s."""
    return sum(
        _folder_bytes(f)
        for f in downloads_dir().iterdir()
        if f.is_dir() and not f.is_symlink() and _record(f).get("owner_id") == owner_id
    )


def _cap() -> int:
    from vibestudio.common.settings import get_settings

    return int(get_settings().export_mb_per_user * 1024 * 1024)


def _over(held: int, cap: int) -> str:
    return (
        f"refused: your downloads hold {held / 1e6:.0f} MB, at most {cap / 1e6:.0f} MB are kept per user "
        "(VIBESTUDIO_EXPORT_MB_PER_USER); they expire after VIBESTUDIO_EXPORT_HOURS, or ask an operator"
    )


def make_room(owner_id: int | None) -> None:
    """Before a new export: remove expired downloads, then refuse (``ExportRefused``) when ``owner_id`` holds
    their share already. The local operator (``None``) has no cap."""
    sweep_expired()
    cap = _cap()
    if owner_id is None or cap <= 0:
        return
    held = held_bytes(owner_id)
    if held >= cap:
        raise ExportRefused(_over(held, cap))


def offer(path: Path, owner_id: int | None, role: str = "researcher", token: str | None = None) -> Offer:
    """Offer ``path`` (a file, or a folder, which is zipped) for download by ``owner_id`` (and admins) holding
    ``role``. A file outside a ``new_folder`` folder is moved into a new one."""
    path = Path(path)
    if token is None or path.parent.resolve() != under(downloads_dir(), token):
        token, folder = new_folder(owner_id)
        moved = folder / path.name
        shutil.move(str(path), moved)
        path = moved
    if path.is_dir():
        zipped = Path(shutil.make_archive(str(path), "zip", root_dir=path))
        shutil.rmtree(path, ignore_errors=True)  # the zip is what is offered
        path = zipped
    _write_record(path.parent, {"owner_id": owner_id, "role": role, "name": path.name})
    cap = _cap()
    if owner_id is not None and cap > 0:
        held = held_bytes(owner_id)
        if held > cap:  # this export brought its owner past their share: it is not kept
            shutil.rmtree(path.parent, ignore_errors=True)
            raise ExportRefused(_over(held, cap))
    return Offer(f"{ROUTE}/{token}/{path.name}", path.name, token)


def open_offer(db: Database | None, token: str, name: str, user_id: int | None) -> Path:
    """The offered file, after the checks: the role the offer names, and the owner or an admin.
    ``user_id=None`` is the local operator (open mode, CLI) and passes. Raises ``NotOffered`` or
    ``PermissionDenied``; the role is checked before anything about the file is looked at."""
    if user_id is not None:
        if db is None:
            raise PermissionDenied("refused: downloads need a signed-in user")
        require_role(db, user_id, "researcher")  # the least any offer needs: nothing is looked up before it
    if not _TOKEN.match(token or "") or not name or "/" in name or name.startswith("."):
        raise NotOffered("no such download")
    try:
        folder = under(downloads_dir(), token)
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        path = under(folder, name)
    except (OutsideRoot, OSError, ValueError) as exc:
        raise NotOffered("no such download") from exc
    if record.get("name") != name or not path.is_file():
        raise NotOffered("no such download")
    if user_id is not None:
        assert db is not None
        me = require_role(db, user_id, str(record.get("role") or "researcher"))
        if me is not None and record.get("owner_id") != user_id and me.role != "admin":
            raise PermissionDenied(
                "refused: this download belongs to the user who made it (an admin may download it too)"
            )
    return path


#: Gradio's file routes: they serve its upload cache to whoever names a path there (and any ``allowed_paths``);
#: ``/gradio_api/file/<path>`` is its older spelling of ``file=``.
#: The studio needs none of them (it shows no image, audio or file output), so they answer nothing.
FILE_ROUTES = ("/file=", "/gradio_api/file=", "/file/", "/gradio_api/file/", "/proxy=", "/gradio_api/proxy=")


class FileRouteGuard:
    """ASGI middleware: Gradio's file routes are refused for every path, so nothing uploaded, cached or kept in
    the data home is fetched by a name; files leave the server only through the checked download route."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = re.sub(r"/+", "/", str(scope.get("path", "")))
        if scope["type"] == "http" and path.startswith(FILE_ROUTES):
            await send_refusal(
                send, 403, "refused: files are served only through the studio's checked download links"
            )
            return
        await self.app(scope, receive, send)


def install(app: Any, ctx: Any) -> None:
    """Add the download route to Gradio's FastAPI ``app`` (before Gradio adds its own routes)."""
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response

    async def download(request: Request) -> Response:
        import anyio.to_thread

        try:
            uid = await anyio.to_thread.run_sync(_user_id, ctx, request)
            path = await anyio.to_thread.run_sync(
                open_offer, ctx.db, request.path_params["token"], request.path_params["name"], uid
            )
        except PermissionDenied as exc:
            status = 401 if "sign" in str(exc) or "log in" in str(exc) else 403
            return JSONResponse({"detail": _refusal(str(exc))}, status_code=status)
        except NotOffered:
            return JSONResponse({"detail": "refused: no such download (it may have been removed)"}, 404)
        return FileResponse(
            path,
            filename=path.name,
            media_type="application/octet-stream",
            headers={"Cache-Control": "no-store"},
        )

    app.add_route(ROUTE + "/{token}/{name}", download, methods=["GET"])
    sweep_expired()  # at start-up: the downloads of earlier runs that have expired


def _refusal(message: str) -> str:
    text = message if message.startswith("refused") else f"refused: {message}"
    return text[:300]


def _user_id(ctx: Any, request: Any) -> int | None:
    """The request's user id as the handlers see it (``Access.user_id``); None in the open mode."""
    access = ctx.access
    if not access.required:
        return None
    name: str | None = None
    if access.proxy is not None:
        dep = access.gradio_auth_dependency()
        name = dep(request) if dep is not None else None
    else:
        app = request.scope.get("app")
        cookie_id = getattr(app, "cookie_id", "")
        token = request.cookies.get(f"access-token-{cookie_id}") or request.cookies.get(
            f"access-token-unsecure-{cookie_id}"
        )
        name = getattr(app, "tokens", {}).get(token) if token else None
    if not name or get_user(ctx.db, name) is None:
        raise PermissionDenied("refused: sign in to download (login is on in this studio)")

    class _Req:
        username = name

    return access.user_id(_Req())
